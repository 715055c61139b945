"""A U-Net in plain PyTorch, for tools/make_onnx_models.py (the ONNX test fixtures) and benchmarks/torch_models.py
(the benchmarks): the network whose decoder upsamples by transposed convolutions."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class UNet(nn.Module):
    """Ronneberger et al.'s U-Net (2015) with the padding and batch norm that today's implementations use: four
    levels of two 3x3 convolutions down (max pool between them), a transposed 2x2 stride-2 convolution back up at
    each level, concatenated with the skip connection, and a 1x1 convolution to the classes."""

    def __init__(self, width=64, classes=2):
        super().__init__()

        def double_conv(in_channels, out_channels):
            return nn.Sequential(nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True),
                                 nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True))

        widths = [width * 2 ** level for level in range(5)]
        self.down = nn.ModuleList([double_conv(3, widths[0])] +
                                  [double_conv(widths[i], widths[i + 1]) for i in range(4)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(widths[i + 1], widths[i], 2, stride=2) for i in reversed(range(4))])
        self.merge = nn.ModuleList([double_conv(2 * widths[i], widths[i]) for i in reversed(range(4))])
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = []
        for level, block in enumerate(self.down):
            x = block(x if level == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        x = skips.pop()
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([skips.pop(), up(x)], dim=1))
        return self.head(x)
