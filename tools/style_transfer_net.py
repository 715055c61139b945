"""The multi-style transfer network of Dumoulin, Shlens and Kudlur, "A Learned Representation for Artistic Style"
(ICLR 2017), in PyTorch, and its weights format. Shared by tools/train_style_transfer.py (training) and
tools/style_transfer_reference.py (corgy's parity fixtures). corgy builds the same network in
corgy/models/style_transfer.cpp.

Network (channels for the default width 32; `width` scales them):
    RGB in [0, 1]
    conv 9x9 /1 -> 32, CIN, ReLU;  conv 3x3 /2 -> 64, CIN, ReLU;  conv 3x3 /2 -> 128, CIN, ReLU
    5 residual blocks: conv 3x3, CIN, ReLU, conv 3x3, CIN, + block input
    2 upsampling blocks: nearest x2, conv 3x3 -> 64 (then 32), CIN, ReLU
    conv 9x9 -> 3, CIN, sigmoid
Every convolution pads by kernel // 2, reflecting the border ("reflect", the paper's) or with zeros ("zeros"), and
has no bias (the instance norm after it removes any per-channel constant).

Conditional instance norm (CIN): y = gamma * (x - mean) / sqrt(var + eps) + beta, mean and (biased) variance per
image and channel over H x W, with gamma = sum_s w_s gamma_s and beta = sum_s w_s beta_s for the style weights w.

Weights format (a directory): manifest.json plus one float32 .npy per tensor, named after the PyTorch state_dict
key: <layer>.conv.weight (O, I, k, k) and <layer>.norm.gamma / .norm.beta (styles, channels), layers conv1 conv2
conv3 res1.conv1 res1.conv2 ... res5.conv2 up1 up2 out. manifest.json:
    {"format": "corgy-style-transfer", "version": 1, "width": 32, "residual_blocks": 5, "padding": "reflect",
     "epsilon": 1e-05, "styles": ["starry_night", ...],
     "tensors": [{"name": "conv1.conv.weight", "file": "conv1.conv.weight.npy", "shape": [32, 3, 9, 9]}, ...]}
"""

import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

FORMAT = "corgy-style-transfer"
VERSION = 1


class ConditionalInstanceNorm(nn.Module):
    def __init__(self, channels, styles, epsilon):
        super().__init__()
        self.epsilon = epsilon
        self.gamma = nn.Parameter(torch.ones(styles, channels))
        self.beta = nn.Parameter(torch.zeros(styles, channels))

    def forward(self, x, style_weights):
        """x (N, C, H, W); style_weights (N, styles): one mix per image."""
        gamma = (style_weights @ self.gamma)[:, :, None, None]
        beta = (style_weights @ self.beta)[:, :, None, None]
        mean = x.mean(dim=(2, 3), keepdim=True)
        var = x.var(dim=(2, 3), unbiased=False, keepdim=True)
        return (x - mean) * torch.rsqrt(var + self.epsilon) * gamma + beta


class ConvNorm(nn.Module):
    """conv k x k / stride (padding k // 2, no bias), then conditional instance norm."""

    def __init__(self, cin, cout, kernel, stride, styles, padding, epsilon):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride, padding=kernel // 2, padding_mode=padding, bias=False)
        self.norm = ConditionalInstanceNorm(cout, styles, epsilon)

    def forward(self, x, style_weights):
        return self.norm(self.conv(x), style_weights)


class Residual(nn.Module):
    def __init__(self, channels, styles, padding, epsilon):
        super().__init__()
        self.conv1 = ConvNorm(channels, channels, 3, 1, styles, padding, epsilon)
        self.conv2 = ConvNorm(channels, channels, 3, 1, styles, padding, epsilon)

    def forward(self, x, w):
        return x + self.conv2(F.relu(self.conv1(x, w)), w)


class StyleTransferNet(nn.Module):
    def __init__(self, styles, width=32, residual_blocks=5, padding="reflect", epsilon=1e-5):
        super().__init__()
        self.styles, self.width, self.residual_blocks = styles, width, residual_blocks
        self.padding, self.epsilon = padding, epsilon
        c1, c2, c3 = width, 2 * width, 4 * width
        self.conv1 = ConvNorm(3, c1, 9, 1, styles, padding, epsilon)
        self.conv2 = ConvNorm(c1, c2, 3, 2, styles, padding, epsilon)
        self.conv3 = ConvNorm(c2, c3, 3, 2, styles, padding, epsilon)
        for i in range(residual_blocks):
            self.add_module(f"res{i + 1}", Residual(c3, styles, padding, epsilon))
        self.up1 = ConvNorm(c3, c2, 3, 1, styles, padding, epsilon)
        self.up2 = ConvNorm(c2, c1, 3, 1, styles, padding, epsilon)
        self.out = ConvNorm(c1, 3, 9, 1, styles, padding, epsilon)

    def forward(self, x, style_weights):
        """x (N, 3, H, W) in [0, 1]; style_weights (styles,) or (N, styles). Returns (N, 3, H', W') in (0, 1)
        with H' = 4 * ceil(ceil(H / 2) / 2) (H itself when H divides by 4)."""
        if style_weights.dim() == 1:
            style_weights = style_weights[None].expand(x.shape[0], -1)
        w = style_weights.to(x.dtype)
        h = F.relu(self.conv1(x, w))
        h = F.relu(self.conv2(h, w))
        h = F.relu(self.conv3(h, w))
        for i in range(self.residual_blocks):
            h = getattr(self, f"res{i + 1}")(h, w)
        h = F.relu(self.up1(F.interpolate(h, scale_factor=2, mode="nearest"), w))
        h = F.relu(self.up2(F.interpolate(h, scale_factor=2, mode="nearest"), w))
        return torch.sigmoid(self.out(h, w))

    def layer_names(self):
        names = ["conv1", "conv2", "conv3"]
        for i in range(self.residual_blocks):
            names += [f"res{i + 1}.conv1", f"res{i + 1}.conv2"]
        return names + ["up1", "up2", "out"]


def save_weights(net, directory, style_names):
    """Writes manifest.json and one .npy per tensor (float32, C order) into `directory`."""
    if len(style_names) != net.styles:
        raise ValueError(f"{len(style_names)} style names for {net.styles} styles")
    os.makedirs(directory, exist_ok=True)
    tensors = []
    for name, value in net.state_dict().items():
        array = np.ascontiguousarray(value.detach().cpu().numpy().astype(np.float32))
        np.save(os.path.join(directory, name + ".npy"), array)
        tensors.append({"name": name, "file": name + ".npy", "shape": list(array.shape)})
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "width": net.width,
        "residual_blocks": net.residual_blocks,
        "padding": net.padding,
        "epsilon": net.epsilon,
        "styles": list(style_names),
        "tensors": tensors,
    }
    with open(os.path.join(directory, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def load_weights(directory, padding=None):
    """The network a weights directory describes (padding overrides the manifest's when given), and its styles."""
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise ValueError(f"{directory}: not a {FORMAT} version {VERSION} manifest")
    net = StyleTransferNet(len(manifest["styles"]), manifest["width"], manifest["residual_blocks"],
                           padding or manifest["padding"], manifest["epsilon"])
    state = {t["name"]: torch.from_numpy(np.load(os.path.join(directory, t["file"]))) for t in manifest["tensors"]}
    net.load_state_dict(state)
    return net, manifest["styles"]
