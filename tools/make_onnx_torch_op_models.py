#!/usr/bin/python3
"""Exports small PyTorch modules with torch.onnx.export at opset 13 for tests/onnx_models_test.cpp, with PyTorch's
own outputs as the reference: the operators whose meaning the exporter chooses (ConvTranspose from
nn.ConvTranspose2d, Resize from F.interpolate in each mode, with align_corners both ways, by scale_factor and by
size, enlarging and shrinking; the channel shuffle, chunk and split of ShuffleNet v2 units).

For each case, tests/fixtures/onnx/torch_<case>_opset13/ gets model.onnx, input.npy (float32, seeded) and
output_<k>.npy: the module's outputs computed by PyTorch in float64 from the same float32 weights and input.
Weights are PyTorch's default initialisation from a seed derived from the case name.

Run: tools/make_onnx_torch_op_models.py [--out DIR] [--case NAME...]   (Debian's python3-torch and python3-onnx)
"""
import argparse
import copy
import pathlib
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPSET = 13
CASES = {}


def case(input_shape, free_batch=False):
    """Registers a case; free_batch exports it with a free batch (dynamic_axes), as `torch.onnx.export` users often do."""
    def register(cls):
        CASES[cls.__name__] = (input_shape, cls, free_batch)
        return cls
    return register


@case((1, 4, 5, 6))
class decoder(nn.Module):
    """Two transposed convolutions: stride 2 with output_padding and groups, then a rectangular kernel with unequal
    strides, dilations and paddings and no bias (a decoder's upsampling path)."""

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.up2 = nn.ConvTranspose2d(6, 3, (4, 3), stride=(2, 1), padding=(1, 0), dilation=(1, 2), bias=False)

    def forward(self, x):
        y = self.up1(x)
        return y, self.up2(F.relu(y))


@case((2, 3, 5, 6))
class interpolate(nn.Module):
    """F.interpolate in every mode: bilinear and bicubic with align_corners both ways, by scale and by size,
    enlarging and shrinking; nearest by an integer scale (corgy's Upsample) and to a size (a general Resize)."""

    def forward(self, x):
        return (F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
                F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True),
                F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False),
                F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=False),
                F.interpolate(x, size=(4, 8), mode="bicubic", align_corners=True),
                F.interpolate(x, scale_factor=2, mode="nearest"),
                F.interpolate(x, size=(8, 9), mode="nearest"))


@case((1, 3, 6, 5))
class segmentation_head(nn.Module):
    """An FCN-style head: a strided convolution, a transposed convolution back up, and bilinear upsampling to the
    input's size, added to a 1x1 projection of the input."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.skip = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        y = self.up(F.relu(self.down(x)))
        return F.interpolate(y, size=x.shape[2:], mode="bilinear", align_corners=False) + self.skip(x)


@case((2, 8, 9, 7))
class shufflenet_units(nn.Module):
    """torchvision's ShuffleNet v2 units as the zoo's model has them, a strided one then a plain one: channel halves
    by Slice (chunk), the channel shuffle as Reshape -> Transpose -> Reshape; then a torch.split into unequal channel
    parts (Split) joined in another order."""

    def __init__(self):
        super().__init__()
        from torchvision.models.shufflenetv2 import InvertedResidual
        self.down = InvertedResidual(8, 16, 2)
        self.unit = InvertedResidual(16, 16, 1)

    def forward(self, x):
        y = self.unit(self.down(x))
        a, b, c = torch.split(y, [6, 7, 3], dim=1)
        return y, torch.cat([c, F.relu(a), b], dim=1)


@case((2, 8, 6, 5), free_batch=True)
class free_batch_shapes(nn.Module):
    """Shape computations of a free-batch export: the batch read with x.size(0) into a channel shuffle's view and a
    flatten's view (Shape -> Gather -> Unsqueeze -> Concat -> Reshape), and an upsampling to another tensor's size
    (Shape -> Slice -> Concat -> Resize), then a Linear layer."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.down = nn.Conv2d(8, 4, 3, stride=2, padding=1)
        self.linear = nn.Linear(4 * 6 * 5, 3)

    def forward(self, x):
        b, c, h, w = x.shape
        y = self.conv(x).view(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w)
        z = self.down(y)
        up = F.interpolate(z, size=y.shape[2:], mode="bilinear", align_corners=False)
        return up, self.linear(up.view(up.size(0), -1))


def build(name, input_shape, cls, out, free_batch=False):
    seed = zlib.crc32(name.encode())
    torch.manual_seed(seed)
    model = cls().eval()
    x = torch.randn(*input_shape)
    directory = out / f"torch_{name}_opset{OPSET}"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.onnx"
    with torch.no_grad():
        outputs = model(x)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        names = [f"output_{k}" for k in range(len(outputs))]
        torch.onnx.export(model, x, str(path), opset_version=OPSET, input_names=["input"], output_names=names,
                          do_constant_folding=True, dynamic_axes={"input": {0: "batch"}} if free_batch else None)
        reference = copy.deepcopy(model).double()(x.double())
        reference = reference if isinstance(reference, tuple) else (reference,)
    onnx.checker.check_model(onnx.load(str(path)))
    np.save(directory / "input.npy", x.numpy().astype(np.float32))
    for k, y in enumerate(reference):
        np.save(directory / f"output_{k}.npy", y.numpy().astype(np.float32))
    ops = sorted({node.op_type for node in onnx.load(str(path)).graph.node})
    print(f"{directory}: {path.stat().st_size} bytes, {len(reference)} outputs, operators {', '.join(ops)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "tests" / "fixtures" / "onnx")
    parser.add_argument("--case", action="append", help="only this case (repeatable); default: every case")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, (input_shape, cls, free_batch) in CASES.items():
        if not args.case or name in args.case:
            build(name, input_shape, cls, args.out, free_batch)


if __name__ == "__main__":
    main()
