"""YOLOv8's detector (Ultralytics' published yolov8.yaml, 2023) in plain PyTorch, without the ultralytics package.
Shared by tools/make_onnx_models.py (the ONNX test models) and benchmarks/torch_models.py (the GPU peer benchmark).

Architecture (channels for YOLOv8n: width 0.25, depth 0.33; `yolov8(scale)` builds n/s/m/l/x):
    backbone  Conv 3x3/2 -> 16, Conv 3x3/2 -> 32, C2f x1 (shortcut), Conv /2 -> 64, C2f x2 (P3, stride 8),
              Conv /2 -> 128, C2f x2 (P4, stride 16), Conv /2 -> 256, C2f x1, SPPF (P5, stride 32)
    neck      upsample P5 x2, concat P4, C2f x1 -> N4; upsample x2, concat P3, C2f x1 -> out P3 (64);
              Conv /2, concat N4, C2f x1 -> out P4 (128); Conv /2, concat P5, C2f x1 -> out P5 (256)
    Detect    per level: box branch Conv 3x3, Conv 3x3, Conv2d 1x1 -> 4 x 16 distance bins; class branch Conv 3x3,
              Conv 3x3, Conv2d 1x1 -> classes. Then, in the graph (as Ultralytics exports it): the levels flattened
              and concatenated along the anchors, DFL (softmax over each side's 16 bins, their expected value), the
              distances turned into boxes around the anchor points (cell centres) and scaled by the strides,
              sigmoid class scores. Output (N, 4 + classes, anchors): rows cx, cy, w, h in input pixels, then one
              score per class; at 640 x 640 with 80 classes (1, 84, 8400).
Conv = Conv2d (no bias, padding k // 2) + BatchNorm2d (eps 1e-3) + SiLU.
C2f(c1, c2, n, shortcut): Conv 1x1 -> 2c (c = c2 / 2), split in halves, n Bottlenecks chained on the second half,
    every piece concatenated, Conv 1x1 -> c2. Bottleneck: Conv 3x3, Conv 3x3, + input when shortcut.
SPPF: Conv 1x1 -> c1 / 2, three chained 5x5 stride-1 max pools, the four concatenated, Conv 1x1.
"""
import math

import torch
import torch.nn as nn


def make_divisible(x, divisor):
    return int(math.ceil(x / divisor) * divisor)


class Conv(nn.Module):
    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c1, c2, shortcut=True):
        super().__init__()
        self.cv1 = Conv(c1, c2, 3)
        self.cv2 = Conv(c2, c2, 3)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=False):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, self.c, shortcut) for _ in range(n))

    def forward(self, x):
        # Split as Ultralytics' export does (forward_split): two outputs of one ONNX Split.
        y = list(self.cv1(x).split((self.c, self.c), 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1)
        self.cv2 = Conv(c_ * 4, c2, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x):
        y = [self.cv1(x)]
        y.extend(self.m(y[-1]) for _ in range(3))
        return self.cv2(torch.cat(y, 1))


class DFL(nn.Module):
    """Distribution focal loss' integral: each side's distance is the expected value of a softmax over reg_max bins
    (a 1x1 convolution with the fixed weights 0 .. reg_max - 1)."""

    def __init__(self, reg_max=16):
        super().__init__()
        self.conv = nn.Conv2d(reg_max, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(reg_max, dtype=torch.float).view(1, reg_max, 1, 1)
        self.reg_max = reg_max

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.reg_max, a).transpose(2, 1).softmax(1)).view(b, 4, a)


def make_anchors(sizes, strides, like, offset=0.5):
    """Anchor points (cell centres, in grid units) of every level, row-major, and their strides: (A, 2), (A, 1), on
    the device and in the precision of the tensor `like` (the network runs on a GPU and in fp16 too)."""
    points, stride_column = [], []
    for (h, w), stride in zip(sizes, strides):
        sx = torch.arange(w, dtype=like.dtype, device=like.device) + offset
        sy = torch.arange(h, dtype=like.dtype, device=like.device) + offset
        sy, sx = torch.meshgrid(sy, sx, indexing="ij")
        points.append(torch.stack((sx, sy), -1).view(-1, 2))
        stride_column.append(torch.full((h * w, 1), float(stride), dtype=like.dtype, device=like.device))
    return torch.cat(points), torch.cat(stride_column)


def dist2bbox(distance, anchor_points, dim=1):
    """(left, top, right, bottom) distances around anchor points -> (cx, cy, w, h)."""
    lt, rb = distance.chunk(2, dim)
    x1y1 = anchor_points - lt
    x2y2 = anchor_points + rb
    return torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), dim)


class Detect(nn.Module):
    def __init__(self, nc, ch, strides=(8, 16, 32), reg_max=16, box_width=None, class_width=None):
        super().__init__()
        self.nc, self.nl, self.reg_max = nc, len(ch), reg_max
        self.no = nc + 4 * reg_max
        self.stride = strides
        # Ultralytics' hidden widths; the reduced test model passes smaller ones.
        c2 = box_width or max(16, ch[0] // 4, reg_max * 4)
        c3 = class_width or max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList(nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1))
                                 for x in ch)
        self.cv3 = nn.ModuleList(nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, nc, 1)) for x in ch)
        self.dfl = DFL(reg_max)

    def forward(self, x):
        x = [torch.cat((self.cv2[i](x[i]), self.cv3[i](x[i])), 1) for i in range(self.nl)]
        b = x[0].shape[0]
        anchors, strides = make_anchors([xi.shape[2:] for xi in x], self.stride, x[0])
        x_cat = torch.cat([xi.view(b, self.no, -1) for xi in x], 2)
        box, cls = x_cat.split((self.reg_max * 4, self.nc), 1)
        dbox = dist2bbox(self.dfl(box), anchors.transpose(0, 1).unsqueeze(0), dim=1) * strides.transpose(0, 1)
        return torch.cat((dbox, cls.sigmoid()), 1)


class YOLOv8(nn.Module):
    """yolov8.yaml with the given depth and width multipliers (channels rounded up to `divisor`, at most
    max_channels before the multiplier)."""

    def __init__(self, depth=0.33, width=0.25, max_channels=1024, nc=80, divisor=8, box_width=None,
                 class_width=None):
        super().__init__()

        def ch(c):
            return make_divisible(min(c, max_channels) * width, divisor)

        def n(repeats):
            return max(round(repeats * depth), 1)

        c64, c128, c256, c512, c1024 = ch(64), ch(128), ch(256), ch(512), ch(1024)
        self.b0 = Conv(3, c64, 3, 2)
        self.b1 = Conv(c64, c128, 3, 2)
        self.b2 = C2f(c128, c128, n(3), True)
        self.b3 = Conv(c128, c256, 3, 2)
        self.b4 = C2f(c256, c256, n(6), True)  # P3
        self.b5 = Conv(c256, c512, 3, 2)
        self.b6 = C2f(c512, c512, n(6), True)  # P4
        self.b7 = Conv(c512, c1024, 3, 2)
        self.b8 = C2f(c1024, c1024, n(3), True)
        self.b9 = SPPF(c1024, c1024, 5)  # P5
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.h12 = C2f(c1024 + c512, c512, n(3))
        self.h15 = C2f(c512 + c256, c256, n(3))
        self.h16 = Conv(c256, c256, 3, 2)
        self.h18 = C2f(c256 + c512, c512, n(3))
        self.h19 = Conv(c512, c512, 3, 2)
        self.h21 = C2f(c512 + c1024, c1024, n(3))
        self.detect = Detect(nc, (c256, c512, c1024), box_width=box_width, class_width=class_width)

    def forward(self, x):
        x = self.b2(self.b1(self.b0(x)))
        p3 = self.b4(self.b3(x))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        n4 = self.h12(torch.cat((self.up(p5), p4), 1))
        out3 = self.h15(torch.cat((self.up(n4), p3), 1))
        out4 = self.h18(torch.cat((self.h16(out3), n4), 1))
        out5 = self.h21(torch.cat((self.h19(out4), p5), 1))
        return self.detect([out3, out4, out5])


SCALES = {"n": (0.33, 0.25, 1024), "s": (0.33, 0.50, 1024), "m": (0.67, 0.75, 768), "l": (1.00, 1.00, 512),
          "x": (1.00, 1.25, 512)}


def yolov8(scale="n", nc=80):
    depth, width, max_channels = SCALES[scale]
    return YOLOv8(depth, width, max_channels, nc)


def randomize(model, seed, input_shape):
    """Seeded random weights that keep a signal through all of the network's layers: PyTorch's default convolution
    initialisation, and batch-norm statistics measured on a seeded random batch of `input_shape` (so that every
    layer's output has about unit variance, which PyTorch's defaults lose within a few layers: the head's output
    would hardly vary across anchors), then moved away from it (means shifted, variances scaled, affine parameters
    far from the identity) so that a wrong fold shows. The DFL's fixed bin weights stay."""
    torch.manual_seed(seed)
    batch_norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for module in model.modules():
        if isinstance(module, nn.Conv2d) and module.weight.requires_grad:
            module.reset_parameters()
    for bn in batch_norms:
        bn.reset_running_stats()
        bn.momentum = None  # a cumulative average: after one batch, that batch's statistics
    model.train()
    with torch.no_grad():
        model(torch.randn(2, *input_shape[1:]))
        for bn in batch_norms:
            bn.momentum = 0.03
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.normal_(0.0, 0.2)
            bn.running_mean.add_(torch.randn_like(bn.running_mean) * 0.2 * bn.running_var.sqrt())
            bn.running_var.mul_(torch.empty_like(bn.running_var).uniform_(0.5, 2.0))
    model.eval()
