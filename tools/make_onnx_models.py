#!/usr/bin/python3
"""Exports the ONNX test models of tests/onnx_models_test.cpp with torch.onnx.export, at two opsets (Inception v3,
ShuffleNet v2, the U-Net and the segmentation models at opset 13).

Every model is a PyTorch network with random weights drawn from a seed derived from its name (the MNIST network
uses the trained weights of data/mnist), in eval mode, exported with a static input shape. For each model and
opset, <out>/<model>_opset<N>/ gets model.onnx and input.npy (float32, seeded); tools/onnx_reference.mjs then adds
ONNX Runtime's outputs (output_<k>.npy) to the same folder.

  --size reduced (default): the architectures at reduced width and input size, small enough to commit
                            (tests/fixtures/onnx, about 2 MB in all). The layer graph is the full model's: the same
                            operators, strides, paddings, residuals, ceil-mode pools and upsampling.
  --size full:              the full architectures as torchvision (and the papers) define them, at their usual input
                            sizes (ResNet-18 and MobileNetV2 at 224 x 224: 45 and 14 MB); for tools/check_onnx_models.sh
                            and the benchmarks, never committed.

Models: resnet18, mobilenet_v2, squeezenet1_1 (torchvision), style_transfer (the fast neural style network of
PyTorch's examples: reflection padding, instance norm, residual blocks, nearest upsampling), tiny_yolo_v2 (darknet's
yolov2-tiny-voc: conv + batch norm + leaky ReLU, max pools, the size-2 stride-1 pool with darknet's edge padding)
mnist (corgy's MNIST network, tools/train_mnist.py, with its trained weights), inception_v3 (torchvision's, with
its factorized 1x7 / 7x1 and 1x3 / 3x1 convolutions; full: 299 x 299, 1000 classes, 95 MB), shufflenet_v2
(torchvision's: channel halves and channel shuffles; full: x1.0 at 224 x 224), and at full size only
lraspp_mobilenet_v3_large and fcn_resnet50 (torchvision's segmentation models: bilinear upsampling, dilated
convolutions; their "out" tensor), unet (a U-Net whose decoder upsamples by transposed convolutions; full: width
64 at 256 x 256), and convnext_tiny (torchvision's ConvNeXt: channels-last LayerNorm between permutes, GELU, layer
scale; full: ConvNeXt-T at 224 x 224; exported at opset 13, where LayerNorm and GELU are chains of elementary
operators, and at opset 17, where LayerNorm is LayerNormalization), yolov8n (Ultralytics' YOLOv8n detector,
tools/yolov8_net.py: C2f blocks, SPPF, the decoupled head with its DFL and box decoding in the graph; output
(N, 4 + classes, anchors); full: 80 classes at 640 x 640, (1, 84, 8400); reduced: 3 classes at 64 x 96).

Run: tools/make_onnx_models.py [--size reduced|full] [--out DIR] [--models a,b] [--opsets 9,17]
(Debian's python3-torch, python3-torchvision and python3-onnx; CPU only).
"""
import argparse
import functools
import pathlib
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.resnet import BasicBlock
from torchvision.models.squeezenet import Fire

import unet_net
import yolov8_net

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPSETS = (9, 17)


# --- the networks ------------------------------------------------------------------------------------------------

def resnet18(full):
    if full:
        return torchvision.models.resnet18(), (1, 3, 224, 224)
    # torchvision's ResNet-18 (its BasicBlock and forward) with every width divided by 16 and 10 classes.
    model = torchvision.models.resnet.ResNet(BasicBlock, [2, 2, 2, 2], num_classes=10)
    w = 4
    model.inplanes = w
    model.conv1 = nn.Conv2d(3, w, kernel_size=7, stride=2, padding=3, bias=False)
    model.bn1 = nn.BatchNorm2d(w)
    model.layer1 = model._make_layer(BasicBlock, w, 2)
    model.layer2 = model._make_layer(BasicBlock, 2 * w, 2, stride=2)
    model.layer3 = model._make_layer(BasicBlock, 4 * w, 2, stride=2)
    model.layer4 = model._make_layer(BasicBlock, 8 * w, 2, stride=2)
    model.fc = nn.Linear(8 * w, 10)
    return model, (1, 3, 67, 61)


def mobilenet_v2(full):
    if full:
        return torchvision.models.mobilenet_v2(), (1, 3, 224, 224)
    # torchvision's MobileNetV2 at width 0.125 (channels rounded to multiples of 4); its last 1x1 convolution
    # (1280 wide at every width) made 64 wide.
    model = torchvision.models.mobilenet_v2(width_mult=0.125, round_nearest=4, num_classes=10)
    last = model.features[-1]
    in_channels = last[0].in_channels
    model.features[-1] = torchvision.ops.misc.Conv2dNormActivation(in_channels, 64, kernel_size=1,
                                                                   norm_layer=nn.BatchNorm2d,
                                                                   activation_layer=nn.ReLU6)
    model.classifier[1] = nn.Linear(64, 10)
    return model, (1, 3, 65, 59)


def squeezenet1_1(full):
    if full:
        return torchvision.models.squeezenet1_1(), (1, 3, 224, 224)
    # torchvision's SqueezeNet 1.1 (its Fire modules, ceil-mode max pools) with every width divided by 4.
    model = torchvision.models.squeezenet1_1(num_classes=10)
    model.features = nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=3, stride=2), nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(16, 4, 16, 16), Fire(32, 4, 16, 16),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(32, 8, 32, 32), Fire(64, 8, 32, 32),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(64, 12, 48, 48), Fire(96, 12, 48, 48), Fire(96, 16, 64, 64), Fire(128, 16, 64, 64))
    model.classifier[1] = nn.Conv2d(128, 10, kernel_size=1)
    return model, (1, 3, 71, 69)


class ConvLayer(nn.Module):
    """PyTorch examples' fast_neural_style: reflection padding, then a convolution without padding."""

    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        return self.conv2d(self.reflection_pad(x))


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = nn.InstanceNorm2d(channels, affine=True)

    def forward(self, x):
        out = F.relu(self.in1(self.conv1(x)))
        return self.in2(self.conv2(out)) + x


class UpsampleConvLayer(nn.Module):
    """Nearest upsampling by 2, then a reflection-padded convolution (instead of a transposed convolution)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample):
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        if self.upsample:
            x = F.interpolate(x, mode="nearest", scale_factor=self.upsample)
        return self.conv2d(self.reflection_pad(x))


class TransformerNet(nn.Module):
    """The image transformation network of Johnson et al., as in PyTorch's examples/fast_neural_style, with its
    widths (32, 64, 128) divided by `divisor`."""

    def __init__(self, divisor=1):
        super().__init__()
        a, b, c = 32 // divisor, 64 // divisor, 128 // divisor
        self.conv1 = ConvLayer(3, a, kernel_size=9, stride=1)
        self.in1 = nn.InstanceNorm2d(a, affine=True)
        self.conv2 = ConvLayer(a, b, kernel_size=3, stride=2)
        self.in2 = nn.InstanceNorm2d(b, affine=True)
        self.conv3 = ConvLayer(b, c, kernel_size=3, stride=2)
        self.in3 = nn.InstanceNorm2d(c, affine=True)
        self.residuals = nn.Sequential(*[ResidualBlock(c) for _ in range(5)])
        self.deconv1 = UpsampleConvLayer(c, b, kernel_size=3, stride=1, upsample=2)
        self.in4 = nn.InstanceNorm2d(b, affine=True)
        self.deconv2 = UpsampleConvLayer(b, a, kernel_size=3, stride=1, upsample=2)
        self.in5 = nn.InstanceNorm2d(a, affine=True)
        self.deconv3 = ConvLayer(a, 3, kernel_size=9, stride=1)

    def forward(self, x):
        y = F.relu(self.in1(self.conv1(x)))
        y = F.relu(self.in2(self.conv2(y)))
        y = F.relu(self.in3(self.conv3(y)))
        y = self.residuals(y)
        y = F.relu(self.in4(self.deconv1(y)))
        y = F.relu(self.in5(self.deconv2(y)))
        return self.deconv3(y)


def style_transfer(full):
    if full:
        return TransformerNet(), (1, 3, 256, 256)
    return TransformerNet(divisor=8), (1, 3, 36, 44)


class TinyYoloV2(nn.Module):
    """darknet's yolov2-tiny-voc.cfg: 3x3 convolutions with batch norm and leaky ReLU (0.1), 2x2 max pools, the
    last one at stride 1 after darknet's padding of one row and column (edge values: they never win a max that the
    row they copy would not), and a 1x1 convolution to 125 = 5 x (20 classes + 5) outputs. Widths divided by
    `divisor`."""

    def __init__(self, divisor=1):
        super().__init__()
        widths = [16, 32, 64, 128, 256, 512, 1024, 1024]
        layers = []
        in_channels = 3
        for i, width in enumerate(widths):
            width //= divisor
            layers += [nn.Conv2d(in_channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
                       nn.LeakyReLU(0.1)]
            if i < 5:
                layers.append(nn.MaxPool2d(2, 2))
            elif i == 5:
                layers += [nn.ReplicationPad2d((0, 1, 0, 1)), nn.MaxPool2d(2, 1)]
            in_channels = width
        layers.append(nn.Conv2d(in_channels, 125, 1))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


def tiny_yolo_v2(full):
    if full:
        return TinyYoloV2(), (1, 3, 416, 416)
    return TinyYoloV2(divisor=16), (1, 3, 96, 128)


class MnistNet(nn.Module):
    """tools/train_mnist.py's network (corgy's MNIST model)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, kernel_size=5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=5, padding=2)
        self.fc1 = nn.Linear(64 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), kernel_size=2, stride=2)
        x = F.max_pool2d(F.relu(self.conv2(x)), kernel_size=2, stride=2)
        return self.fc1(torch.flatten(x, 1))


def inception_v3(full):
    if full:
        return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False), (1, 3, 299, 299)
    # torchvision's Inception v3 (its Inception3 and every Inception block, unchanged) with every convolution's width
    # divided by 16 (the blocks build their convolutions through conv_block; the 3 input channels stay), 10 classes,
    # at 107 x 101, where every block's 1x7, 7x1, 1x3 and 3x1 windows still cover pixels on both sides.
    from torchvision.models import inception

    def narrow(in_channels, out_channels, **kwargs):
        return inception.BasicConv2d(in_channels if in_channels == 3 else in_channels // 16, out_channels // 16,
                                     **kwargs)

    blocks = [narrow] + [functools.partial(block, conv_block=narrow) for block in (
        inception.InceptionA, inception.InceptionB, inception.InceptionC, inception.InceptionD, inception.InceptionE,
        inception.InceptionAux)]
    model = inception.Inception3(num_classes=10, aux_logits=False, inception_blocks=blocks, init_weights=False)
    model.fc = nn.Linear(2048 // 16, 10)
    return model, (2, 3, 107, 101)


def shufflenet_v2(full):
    if full:
        return torchvision.models.shufflenet_v2_x1_0(weights=None), (1, 3, 224, 224)
    # torchvision's ShuffleNetV2 (its units: chunk, channel shuffle) with narrow stages, 10 classes, batch 2.
    return torchvision.models.ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10), (2, 3, 64, 61)


def convnext_tiny(full):
    if full:
        return torchvision.models.convnext_tiny(weights=None), (1, 3, 224, 224)
    # torchvision's ConvNeXt (its CNBlock: 7x7 depthwise, permute to channels-last, LayerNorm, Linear, GELU, Linear,
    # layer scale, permute back; LayerNorm2d in the stem and the downsampling layers) with narrow stages, 10 classes.
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    stages = [CNBlockConfig(8, 16, 2), CNBlockConfig(16, 24, 1), CNBlockConfig(24, 32, 1), CNBlockConfig(32, None, 1)]
    return ConvNeXt(stages, num_classes=10), (2, 3, 64, 64)


def yolov8n(full):
    if full:
        return yolov8_net.yolov8("n"), (1, 3, 640, 640)
    # yolov8.yaml at width 1/32 (channels rounded to multiples of 4, at most 512 before the multiplier), depth 0.33 as
    # YOLOv8n (C2f with 1 and 2 bottlenecks), 3 classes, the head's hidden widths 8 (its DFL keeps 16 bins); a
    # non-square input so that the anchors' x and y cannot swap unseen: 96 anchors at stride 8, 24 at 16, 6 at 32.
    return yolov8_net.YOLOv8(0.33, 1 / 32, 512, nc=3, divisor=4, box_width=8, class_width=8), (1, 3, 64, 96)


def lraspp_mobilenet_v3_large(full):
    if not full:
        raise SystemExit("lraspp_mobilenet_v3_large has no reduced version: use --size full")
    return torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None), \
        (1, 3, 224, 224)


def fcn_resnet50(full):
    if not full:
        raise SystemExit("fcn_resnet50 has no reduced version: use --size full")
    return torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False), \
        (1, 3, 224, 224)


def unet(full):
    if full:
        return unet_net.UNet(), (1, 3, 256, 256)
    return unet_net.UNet(width=4, classes=3), (2, 3, 48, 32)


class SegmentationOutput(nn.Module):
    """A torchvision segmentation model's "out" tensor (its forward returns a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def mnist(full):
    model = MnistNet()
    with torch.no_grad():
        for name, parameter in model.state_dict().items():
            parameter.copy_(torch.from_numpy(np.load(ROOT / "data" / "mnist" / f"{name}.npy")))
    return model, (2, 1, 28, 28)


MODELS = {
    "resnet18": resnet18,
    "mobilenet_v2": mobilenet_v2,
    "squeezenet1_1": squeezenet1_1,
    "style_transfer": style_transfer,
    "tiny_yolo_v2": tiny_yolo_v2,
    "mnist": mnist,
    "inception_v3": inception_v3,
    "shufflenet_v2": shufflenet_v2,
    "convnext_tiny": convnext_tiny,
    "yolov8n": yolov8n,
    "lraspp_mobilenet_v3_large": lraspp_mobilenet_v3_large,
    "fcn_resnet50": fcn_resnet50,
    "unet": unet,
}
# Full size only (no reduced version to commit): checked by tools/check_onnx_models.sh --models.
FULL_ONLY = ("lraspp_mobilenet_v3_large", "fcn_resnet50")
# The opsets each model is exported at when --opsets is not given (OPSETS for the others): Inception v3 only at
# opset 13, as issue 25 tries the torchvision zoo.
MODEL_OPSETS = {name: (13,) for name in ("inception_v3", "shufflenet_v2", "lraspp_mobilenet_v3_large", "fcn_resnet50",
                                          "unet")}
# ConvNeXt at 13 (LayerNorm and GELU as chains of elementary operators) and 17 (LayerNormalization).
MODEL_OPSETS["convnext_tiny"] = (13, 17)
# YOLOv8 at 13 only: none of its operators (Conv, Sigmoid, Mul, Split, Concat, MaxPool, Resize, Reshape, Transpose,
# Softmax, Sub, Add, Div) changes meaning between 13 and 17; --opsets 17 exports Ultralytics' usual opset.
MODEL_OPSETS["yolov8n"] = (13,)


# --- export ------------------------------------------------------------------------------------------------------

def randomize(model, seed):
    """Seeded random weights: PyTorch's default initialisation, and batch-norm statistics and affine parameters
    far from the identity so that a wrong fold shows. Instance and layer norms get random affine parameters too, and
    ConvNeXt's layer scales values near 1."""
    torch.manual_seed(seed)
    for module in model.modules():
        if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):  # else drawn unseeded at construction
            module.reset_parameters()
        elif isinstance(module, nn.BatchNorm2d):
            with torch.no_grad():
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.2)
                module.running_mean.normal_(0.0, 0.2)
                module.running_var.uniform_(0.5, 2.0)
        elif (isinstance(module, nn.InstanceNorm2d) and module.affine) or isinstance(module, nn.LayerNorm):
            with torch.no_grad():
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.2)
        if hasattr(module, "layer_scale"):  # ConvNeXt's blocks start at 1e-6, which would hide their branch
            with torch.no_grad():
                module.layer_scale.uniform_(0.5, 1.5)


def export(name, full, opsets, out):
    model, input_shape = MODELS[name](full)
    if name in FULL_ONLY:
        model = SegmentationOutput(model)
    seed = zlib.crc32(name.encode())
    if name.startswith("yolov8"):
        yolov8_net.randomize(model, seed, input_shape)  # its own: calibrated batch-norm statistics
    elif name != "mnist":
        randomize(model, seed)
    model.eval()
    torch.manual_seed(seed + 1)
    x = torch.rand(*input_shape) if name == "mnist" else torch.randn(*input_shape)
    for opset in opsets:
        directory = out / f"{name}_opset{opset}"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "model.onnx"
        torch.onnx.export(model, x, str(path), opset_version=opset, input_names=["input"], output_names=["output"],
                          do_constant_folding=True)
        if name.startswith("yolov8"):
            # Marked so that examples/detect says plainly that its boxes mean nothing (trained Ultralytics exports
            # carry "names" and "stride" here instead).
            exported = onnx.load(str(path))
            onnx.helper.set_model_props(exported, {"weights": f"random (seed {seed}), untrained"})
            onnx.save(exported, str(path))
        onnx.checker.check_model(onnx.load(str(path)))
        np.save(directory / "input.npy", x.numpy().astype(np.float32))
        print(f"{directory}: {path.stat().st_size / 1024:.0f} KiB, input {tuple(x.shape)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=("reduced", "full"), default="reduced")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "tests" / "fixtures" / "onnx")
    parser.add_argument("--models", help="comma-separated; default every model (at --size reduced, those with a reduced "
                        "version)")
    parser.add_argument("--opsets", help=f"comma-separated; default {','.join(str(o) for o in OPSETS)} (Inception v3: "
                        "13)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    names = args.models.split(",") if args.models else [
        name for name in MODELS if args.size == "full" or name not in FULL_ONLY]
    for name in names:
        opsets = [int(o) for o in args.opsets.split(",")] if args.opsets else MODEL_OPSETS.get(name, OPSETS)
        export(name, args.size == "full", opsets, args.out)


if __name__ == "__main__":
    main()
