#!/usr/bin/python3
"""Train the multi-style transfer network (tools/style_transfer_net.py) on data/style_transfer/ and export its
weights in corgy's format (manifest.json + one .npy per tensor).

The loss is the one of Johnson et al. and Dumoulin et al.: a style term that matches Gram matrices of a fixed
feature network's activations between the output and the style image, a content term that matches deeper
activations between the output and the content photo, and a small total-variation term. No pretrained VGG can be
downloaded on corgy's machines, so the feature network is the one trained network corgy already ships:
face-api's tiny face detector (data/face_api, MIT), conv0 to conv4 (16 to 256 channels, each after one more 2x max
pool). Its filters were trained on photos, and their Gram matrices give recognisable styles where a random-weight
network's gave mostly noise (data/style_transfer/README.md says what was tried). Style statistics are taken at two
scales (the image and its 2x downsampled copy) so the 2x larger strokes count too.

Every batch mixes styles: each image gets one style at random (a one-hot style-weight vector), as the paper trains.

    # smoke run on the CPU (seconds):
    /usr/bin/python3 tools/train_style_transfer.py --device cpu --steps 3 --size 64 --batch 2 --out /tmp/st
    # the run that made data/style_transfer/weights (CUDA; 5.5 minutes on an H100, 3,414 steps):
    python3 tools/train_style_transfer.py --minutes 5.5 --out data/style_transfer/weights --samples /tmp/samples
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import style_transfer_net as stn  # noqa: E402

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DATA = os.path.join(REPO_ROOT, "data", "style_transfer")
FACE_MANIFEST = os.path.join(REPO_ROOT, "data", "face_api", "tiny_face_detector_model-weights_manifest.json")
STYLES = ["starry_night", "the_scream", "stone_mosaic", "leopard"]  # the order of tools/make_style_data.py


class FaceDetectorFeatures(torch.nn.Module):
    """face-api's tiny face detector (trained, uint8-quantized TensorFlow.js weights) up to conv4, fixed.
    Returns the activations of conv0 (16 channels, full size) and conv1..conv4 (each after a 2x max pool)."""

    MEAN_RGB = (117.001, 114.697, 97.404)  # face-api's input normalisation: (pixel - mean) / 255
    DEPTH = 4

    def __init__(self, manifest_path):
        super().__init__()
        with open(manifest_path) as f:
            group = json.load(f)[0]
        raw = np.fromfile(os.path.join(os.path.dirname(manifest_path), group["paths"][0]), dtype=np.uint8)
        tensors, offset = {}, 0
        for spec in group["weights"]:
            count = int(np.prod(spec["shape"]))
            q = spec["quantization"]
            values = raw[offset:offset + count].astype(np.float32) * q["scale"] + q["min"]
            tensors[spec["name"]] = torch.from_numpy(values.reshape(spec["shape"]))
            offset += count
        hwio = lambda t: t.permute(3, 2, 0, 1).contiguous()  # noqa: E731  TensorFlow HWIO -> OIHW
        self.register_buffer("w0", hwio(tensors["conv0/filters"]))
        self.register_buffer("b0", tensors["conv0/bias"])
        for k in range(1, self.DEPTH + 1):
            depthwise = tensors[f"conv{k}/depthwise_filter"]  # (3, 3, C, 1)
            self.register_buffer(f"dw{k}", depthwise.permute(2, 3, 0, 1).contiguous())
            self.register_buffer(f"pw{k}", hwio(tensors[f"conv{k}/pointwise_filter"]))
            self.register_buffer(f"b{k}", tensors[f"conv{k}/bias"])
        self.register_buffer("mean", torch.tensor(self.MEAN_RGB).view(1, 3, 1, 1) / 255.0)

    def forward(self, x):
        x = F.conv2d(F.pad(x - self.mean, (1, 1, 1, 1), mode="reflect"), self.w0, self.b0)
        x = F.leaky_relu(x, 0.1)
        features = [x]
        for k in range(1, self.DEPTH + 1):
            x = F.max_pool2d(x, 2)
            x = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), getattr(self, f"dw{k}"), groups=x.shape[1])
            x = F.leaky_relu(F.conv2d(x, getattr(self, f"pw{k}"), getattr(self, f"b{k}")), 0.1)
            features.append(x)
        return features


def gram(f):
    n, c, h, w = f.shape
    f = f.reshape(n, c, h * w)
    return f @ f.transpose(1, 2) / (h * w)


def pyramid_grams(features_of, x, levels):
    grams = []
    for level in range(levels):
        if level:
            x = F.avg_pool2d(x, 2)
        grams += [gram(f) for f in features_of(x)]
    return grams


def load_rgb(path, longest=None):
    image = Image.open(path).convert("RGB")
    if longest and max(image.size) != longest:
        scale = longest / max(image.size)
        image = image.resize((round(image.width * scale), round(image.height * scale)), Image.LANCZOS)
    return torch.from_numpy(np.asarray(image, dtype=np.float32) / 255.0).permute(2, 0, 1).contiguous()


def random_crops(photos, batch, size, generator):
    """One random square crop per image (side 60-100% of the photo's shorter side), resized, maybe mirrored."""
    crops = []
    for _ in range(batch):
        photo = photos[int(torch.randint(len(photos), (1,), generator=generator))]
        _, h, w = photo.shape
        side = int(min(h, w) * (0.6 + 0.4 * float(torch.rand(1, generator=generator))))
        y = int(torch.randint(h - side + 1, (1,), generator=generator))
        x = int(torch.randint(w - side + 1, (1,), generator=generator))
        crop = F.interpolate(photo[None, :, y:y + side, x:x + side], size=(size, size), mode="bilinear",
                             align_corners=False, antialias=side > size)
        if float(torch.rand(1, generator=generator)) < 0.5:
            crop = crop.flip(3)
        crops.append(crop)
    return torch.cat(crops).clamp(0, 1)


def stylise(net, image, weights, device):
    with torch.no_grad():
        out = net(image[None].to(device), torch.tensor(weights, dtype=torch.float32, device=device))
    return Image.fromarray((out[0].clamp(0, 1).permute(1, 2, 0).cpu().numpy() * 255 + 0.5).astype(np.uint8))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="directory for manifest.json and the .npy weights")
    p.add_argument("--samples", help="directory for stylised samples of data/style_transfer/dog.png")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--steps", type=int, default=1_000_000, help="stop after this many steps...")
    p.add_argument("--minutes", type=float, default=0.0, help="...or after this many minutes of training (0: no limit)")
    p.add_argument("--size", type=int, default=256, help="training crop side")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--style-weight", type=float, default=1.0)
    p.add_argument("--content-weight", type=float, default=1.5)
    p.add_argument("--tv-weight", type=float, default=0.3)
    p.add_argument("--content-layer", type=int, default=3, help="feature index of the content term (0-4)")
    p.add_argument("--style-levels", type=int, default=2, help="image pyramid levels of the style term")
    p.add_argument("--painting-side", type=int, default=384, help="longer side of the painting styles")
    p.add_argument("--seed", type=int, default=14)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
    generator = torch.Generator().manual_seed(args.seed)

    features = FaceDetectorFeatures(FACE_MANIFEST).to(device).eval()
    for param in features.parameters():
        param.requires_grad_(False)
    style_targets = []  # per style: one Gram per (level, layer)
    with torch.no_grad():
        for name in STYLES:
            path = os.path.join(DATA, "style", name + (".jpg" if name in ("starry_night", "the_scream") else ".png"))
            image = load_rgb(path, args.painting_side if path.endswith(".jpg") else None)
            style_targets.append(pyramid_grams(features, image[None].to(device), args.style_levels))
    # Per (level, layer): the targets of all styles stacked, (styles, C, C), and their squared norms.
    targets = [torch.cat([t[i] for t in style_targets]) for i in range(len(style_targets[0]))]
    target_norms = [(t ** 2).sum(dim=(1, 2)) for t in targets]

    photos = [load_rgb(os.path.join(DATA, "content", f)).to(device)
              for f in sorted(os.listdir(os.path.join(DATA, "content")))]
    net = stn.StyleTransferNet(len(STYLES)).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    eye = torch.eye(len(STYLES), device=device)

    print(f"training on {device}: {len(photos)} photos, {len(STYLES)} styles, crops {args.size}, batch {args.batch}, "
          f"{sum(p.numel() for p in net.parameters())} parameters", flush=True)
    start = time.time()
    step, log = 0, []
    while step < args.steps and (args.minutes <= 0 or time.time() - start < args.minutes * 60):
        content = random_crops(photos, args.batch, args.size, generator)
        style_ids = torch.randint(len(STYLES), (args.batch,), generator=generator).to(device)
        out = net(content, eye[style_ids])
        out_grams = pyramid_grams(features, out, args.style_levels)
        style_loss = sum(((g - t[style_ids]) ** 2).sum(dim=(1, 2)) / n[style_ids]
                         for g, t, n in zip(out_grams, targets, target_norms)).mean()
        with torch.no_grad():
            content_features = features(content)[args.content_layer]
        out_features = features(out)[args.content_layer]
        content_loss = ((out_features - content_features) ** 2).mean() / (content_features ** 2).mean()
        tv_loss = ((out[:, :, 1:] - out[:, :, :-1]) ** 2).mean() + ((out[:, :, :, 1:] - out[:, :, :, :-1]) ** 2).mean()
        loss = args.style_weight * style_loss + args.content_weight * content_loss + args.tv_weight * tv_loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step += 1
        if step == 1 or step % 100 == 0 or step == args.steps:
            entry = {"step": step, "seconds": round(time.time() - start, 1), "loss": loss.item(),
                     "style": style_loss.item(), "content": content_loss.item(), "tv": tv_loss.item()}
            log.append(entry)
            print(json.dumps(entry), flush=True)
            if not math.isfinite(entry["loss"]):
                raise SystemExit("the loss is not finite: stopping")
    seconds = time.time() - start
    print(f"trained {step} steps in {seconds:.0f} s ({step * args.batch / seconds:.1f} images/s)", flush=True)

    net = net.cpu().eval()
    stn.save_weights(net, args.out, STYLES)
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump({"args": vars(args), "steps": step, "seconds": round(seconds, 1), "device": str(device),
                   "torch": torch.__version__, "log": log}, f, indent=1)
        f.write("\n")
    if args.samples:
        os.makedirs(args.samples, exist_ok=True)
        dog = load_rgb(os.path.join(DATA, "dog.png"))
        mixes = [(name, [1.0 if i == s else 0.0 for i in range(len(STYLES))]) for s, name in enumerate(STYLES)]
        mixes.append(("blend", [0.5, 0.5, 0.0, 0.0]))
        for name, weights in mixes:
            stylise(net, dog, weights, "cpu").save(os.path.join(args.samples, f"dog_{name}.png"))
    print("wrote", args.out, flush=True)


if __name__ == "__main__":
    main()
