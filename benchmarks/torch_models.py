"""corgy's benchmark networks rebuilt in PyTorch from the same files, for the peer benchmarks (benchmarks/run.sh).

- darknet_model(cfg, weights): a darknet .cfg + .weights as a torch.nn.Module whose forward returns the raw input
  of each [region] / [yolo] layer in cfg order, as corgy's DarknetModel::forward and corgy-run --output do. Only
  the layer types of data/darknet's Tiny YOLO cfgs are read: [convolutional] (batch norm folded with darknet's
  formula, as corgy folds it), [maxpool] (darknet's padding), [route], [upsample], [region], [yolo].
- mnist_model(directory): corgy's MNIST network (corgy/models/mnist.h) with the .npy weights of data/mnist;
  forward returns the logits, as model_benchmark --output writes them.
- style256 / style512: the style network of data/style_transfer (tools/style_transfer_net.py, the one it was
  trained with), rendering the even blend of styles 0 and 1 that model_benchmark --style-transfer renders.
- resnet18 / mobilenet_v2: torchvision's ImageNet classifiers rebuilt layer for layer (no torchvision needed on the
  GPU machine) with seeded_weights(seed); run.sh exports them to ONNX here, which corgy and ONNX Runtime run.
- yolov8n: the YOLOv8n detector of tools/yolov8_net.py (plain PyTorch) with seeded_weights(seed), exported and run
  the same way.
- unet: the U-Net of tools/unet_net.py (transposed convolutions) at 224 x 224, with seeded_weights(seed), the same way.
"""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


def read_cfg(path):
    """The sections of a darknet cfg as [(type, {key: value})], comments and whitespace dropped."""
    sections = []
    with open(path) as cfg:
        for line in cfg:
            line = line.split("#")[0].split(";")[0].replace(" ", "").replace("\t", "").strip()
            if not line:
                continue
            if line.startswith("["):
                sections.append((line[1:-1], {}))
            else:
                key, value = line.split("=", 1)
                sections[-1][1][key] = value
    if not sections or sections[0][0] != "net":
        raise ValueError(f"{path}: the first section must be [net]")
    return sections


class WeightReader:
    """Reads the parameters of a darknet .weights file in order (layout: docs/darknet.md)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            major, minor, _ = np.frombuffer(f.read(12), np.int32)
            wide_seen = major * 10 + minor >= 2 and major < 1000 and minor < 1000
            f.read(8 if wide_seen else 4)
            self.values = np.frombuffer(f.read(), np.float32)
        self.path, self.offset = path, 0

    def take(self, count):
        if self.offset + count > self.values.size:
            raise ValueError(f"{self.path}: ends inside the parameters of the cfg")
        part = self.values[self.offset:self.offset + count]
        self.offset += count
        return part

    def check_consumed(self):
        if self.offset != self.values.size:
            raise ValueError(f"{self.path}: {self.values.size - self.offset} parameters more than the cfg needs")


class NoWeights:
    """Stands for a WeightReader where seeded_weights sets every value afterwards: zeros of any size asked."""

    def take(self, count):
        return np.zeros(count, np.float32)

    def check_consumed(self):
        pass


def convolution(options, in_channels, weights):
    """A [convolutional] as an nn.Conv2d with batch norm folded in (darknet: scale * (x - mean) /
    (sqrt(variance) + 1e-6) + bias), and its activation."""
    filters, size = int(options["filters"]), int(options["size"])
    stride = int(options.get("stride", 1))
    padding = size // 2 if int(options.get("pad", 0)) else int(options.get("padding", 0))
    if int(options.get("groups", 1)) != 1:
        raise ValueError("grouped [convolutional] is not needed by the benchmark cfgs")
    bias = weights.take(filters).copy()
    if int(options.get("batch_normalize", 0)):
        scale, mean, variance = weights.take(filters), weights.take(filters), weights.take(filters)
        factor = scale / (np.sqrt(variance) + np.float32(1e-6))
        bias = bias - mean * factor
    else:
        factor = np.ones(filters, np.float32)
    kernel = weights.take(filters * in_channels * size * size).reshape(filters, in_channels, size, size)
    conv = torch.nn.Conv2d(in_channels, filters, size, stride, padding, bias=True)
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(kernel * factor[:, None, None, None]))
        conv.bias.copy_(torch.from_numpy(bias.astype(np.float32)))
    activation = options.get("activation", "logistic")
    if activation not in ("leaky", "linear"):
        raise ValueError(f"activation {activation} is not needed by the benchmark cfgs")
    return conv, activation == "leaky"


class DarknetNet(torch.nn.Module):
    """The layers of a darknet cfg; each step is (kind, module or parameters, inputs)."""

    def __init__(self, cfg_path, weights_path):
        """weights_path None: zeros, for seeded_weights to fill."""
        super().__init__()
        sections = read_cfg(cfg_path)
        net = sections[0][1]
        channels, height, width = int(net["channels"]), int(net["height"]), int(net["width"])
        self.input_shape = (channels, height, width)
        weights = WeightReader(weights_path) if weights_path is not None else NoWeights()
        self.convs = torch.nn.ModuleList()
        self.steps, self.heads = [], []
        shapes = []  # (C, H, W) of each cfg layer's output
        for kind, options in sections[1:]:
            index = len(shapes)
            previous = shapes[-1] if shapes else self.input_shape
            if kind in ("convolutional", "conv"):
                conv, leaky = convolution(options, previous[0], weights)
                self.convs.append(conv)
                self.steps.append(("conv", (len(self.convs) - 1, leaky), [index - 1]))
                size, stride, pad = conv.kernel_size[0], conv.stride[0], conv.padding[0]
                shapes.append((conv.out_channels, (previous[1] + 2 * pad - size) // stride + 1,
                               (previous[2] + 2 * pad - size) // stride + 1))
            elif kind in ("maxpool", "max"):
                size, stride = int(options["size"]), int(options.get("stride", 1))
                padding = int(options.get("padding", size - 1))
                out_h = (previous[1] + padding - size) // stride + 1
                out_w = (previous[2] + padding - size) // stride + 1
                top, left = padding // 2, padding // 2
                # Only the padding that a window reaches is added (none for 2x2 / 2 on even sizes).
                bottom = max(0, (out_h - 1) * stride + size - previous[1] - top)
                right = max(0, (out_w - 1) * stride + size - previous[2] - left)
                self.steps.append(("maxpool", (size, stride, (left, right, top, bottom)), [index - 1]))
                shapes.append((previous[0], out_h, out_w))
            elif kind == "route":
                sources = [int(v) if int(v) >= 0 else index + int(v) for v in options["layers"].split(",")]
                self.steps.append(("route", None, sources))
                shapes.append((sum(shapes[s][0] for s in sources), shapes[sources[0]][1], shapes[sources[0]][2]))
            elif kind == "upsample":
                stride = int(options.get("stride", 2))
                self.steps.append(("upsample", stride, [index - 1]))
                shapes.append((previous[0], previous[1] * stride, previous[2] * stride))
            elif kind in ("region", "yolo"):
                self.heads.append(index - 1)
                self.steps.append(("head", None, [index - 1]))
                shapes.append(previous)
            else:
                raise ValueError(f"{cfg_path}: [{kind}] is not needed by the benchmark cfgs")
        weights.check_consumed()

    def forward(self, x):
        outputs = []
        for kind, parameters, sources in self.steps:
            inputs = [outputs[s] if s >= 0 else x for s in sources]
            if kind == "conv":
                conv_index, leaky = parameters
                y = self.convs[conv_index](inputs[0])
                outputs.append(F.leaky_relu(y, 0.1) if leaky else y)
            elif kind == "maxpool":
                size, stride, padding = parameters
                y = F.pad(inputs[0], padding, value=float("-inf")) if any(padding) else inputs[0]
                outputs.append(F.max_pool2d(y, size, stride))
            elif kind == "route":
                outputs.append(inputs[0] if len(inputs) == 1 else torch.cat(inputs, 1))
            elif kind == "upsample":
                outputs.append(F.interpolate(inputs[0], scale_factor=parameters, mode="nearest"))
            else:
                outputs.append(inputs[0])
        return tuple(outputs[h] for h in self.heads)


class MnistNet(torch.nn.Module):
    """conv 5x5 1->32 pad 2, ReLU, max 2x2; conv 5x5 32->64 pad 2, ReLU, max 2x2; linear 3136->10 (logits)."""

    def __init__(self, directory):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = torch.nn.Linear(3136, 10)
        with torch.no_grad():
            for name, parameter in self.named_parameters():
                parameter.copy_(torch.from_numpy(np.load(f"{directory}/{name}.npy")))
        self.input_shape = (1, 28, 28)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return (self.fc1(torch.flatten(x, 1)),)


class StyleNet(torch.nn.Module):
    """The trained style network with a fixed style mix: forward(x) returns (image,)."""

    def __init__(self, directory, side):
        super().__init__()
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
        import style_transfer_net

        self.net, styles = style_transfer_net.load_weights(directory)
        blend = torch.zeros(len(styles))
        blend[0] += 0.5
        blend[1 if len(styles) > 1 else 0] += 0.5
        self.register_buffer("blend", blend)
        self.input_shape = (3, side, side)

    def forward(self, x):
        return (self.net(x, self.blend),)


# --- ResNet-18 and MobileNetV2 (ImageNet classifiers; corgy runs them from their ONNX export) ---------------------

class BasicBlock(torch.nn.Module):
    def __init__(self, in_channels, channels, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(in_channels, channels, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(channels)
        self.downsample = None
        if stride != 1 or in_channels != channels:
            self.downsample = torch.nn.Sequential(torch.nn.Conv2d(in_channels, channels, 1, stride, bias=False),
                                                  torch.nn.BatchNorm2d(channels))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet18(torch.nn.Module):
    """torchvision's resnet18 (He et al. 2016), layer for layer: 7x7/2 stem, 3x3/2 max pool, four stages of two
    basic blocks (64, 128, 256, 512 channels), global average pool, 1000 logits."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(64)
        blocks, channels = [], 64
        for width, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [BasicBlock(channels, width, stride), BasicBlock(width, width, 1)]
            channels = width
        self.blocks = torch.nn.Sequential(*blocks)
        self.fc = torch.nn.Linear(512, 1000)
        self.input_shape = (3, 224, 224)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = torch.flatten(F.adaptive_avg_pool2d(self.blocks(x), 1), 1)
        return (self.fc(x),)


def conv_bn(in_channels, out_channels, kernel, stride, groups=1, relu6=True):
    layers = [torch.nn.Conv2d(in_channels, out_channels, kernel, stride, kernel // 2, groups=groups, bias=False),
              torch.nn.BatchNorm2d(out_channels)]
    return torch.nn.Sequential(*(layers + [torch.nn.ReLU6()] if relu6 else layers))


class InvertedResidual(torch.nn.Module):
    def __init__(self, in_channels, out_channels, stride, expand):
        super().__init__()
        hidden = in_channels * expand
        layers = [conv_bn(in_channels, hidden, 1, 1)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, out_channels, 1, 1, relu6=False)]
        self.body = torch.nn.Sequential(*layers)
        self.residual = stride == 1 and in_channels == out_channels

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(torch.nn.Module):
    """torchvision's mobilenet_v2 (Sandler et al. 2018) at width 1.0, layer for layer: inverted residual blocks
    (expansion 6, depthwise 3x3, ReLU6), a 1280-wide 1x1 convolution, global average pool, 1000 logits."""

    def __init__(self):
        super().__init__()
        layers, channels = [conv_bn(3, 32, 3, 2)], 32
        for expand, width, repeat, stride in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                                              (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
            for i in range(repeat):
                layers.append(InvertedResidual(channels, width, stride if i == 0 else 1, expand))
                channels = width
        layers.append(conv_bn(channels, 1280, 1, 1))
        self.features = torch.nn.Sequential(*layers)
        self.classifier = torch.nn.Linear(1280, 1000)
        self.input_shape = (3, 224, 224)

    def forward(self, x):
        return (self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1)),)


# The period of seeded_weights' repeating block of convolution and linear weights (a prime, so that no layer's
# fan-in is a multiple of it).
WEIGHT_PERIOD = 4099


def seeded_weights(model, seed):
    """Random weights from NumPy's PCG64 (the same on every machine and NumPy version, unlike torch's generators),
    so that this machine's ONNX export and the GPU machine's PyTorch rebuild hold the same network. Convolution and
    linear weights are uniform in its layer's bound sqrt(3 / fan_in), drawn as one block of WEIGHT_PERIOD values
    that each layer repeats from a random start: the ONNX files compress about 1000-fold (VGG-16's 528 MB to under a
    megabyte) for the trip to the GPU machine, and speed does not depend on the values. Batch norms get statistics
    and affine parameters away from the identity."""
    rng = np.random.default_rng(seed)
    block = rng.uniform(-1, 1, WEIGHT_PERIOD).astype(np.float32)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            shape = tuple(tensor.shape)
            if name.endswith("num_batches_tracked"):
                continue
            if tensor.dim() > 1:  # convolution and linear weights
                bound = np.sqrt(3.0 / np.prod(shape[1:]))
                start = int(rng.integers(WEIGHT_PERIOD))
                values = np.resize(np.roll(block, -start), shape) * bound  # np.resize repeats the block
            elif name.endswith("running_var"):
                values = rng.uniform(0.5, 2.0, shape)
            elif name.endswith("weight"):  # batch-norm scale
                values = rng.uniform(0.5, 1.5, shape)
            else:  # biases, batch-norm shifts and means
                values = rng.normal(0.0, 0.1, shape)
            tensor.copy_(torch.from_numpy(values.astype(np.float32)))
    return model


IMAGENET_MODELS = {"resnet18": ResNet18, "mobilenet_v2": MobileNetV2}

# The benchmark zoo's other ImageNet classifiers, built by torchvision itself (its architecture code is the
# reference users run; torchvision is on this machine and on the GPU machine): the models whose speed the issues
# track, and others that no kernel was tuned on (the held-out check of docs/benchmarks.md).
TORCHVISION_MODELS = ("resnet50", "mobilenet_v3_large", "efficientnet_b0", "densenet121", "vgg16", "regnet_y_400mf",
                      "mnasnet1_0", "resnext50_32x4d", "googlenet", "squeezenet1_1", "vgg11_bn", "shufflenet_v2_x1_0",
                      "convnext_tiny", "inception_v3", "fcn_resnet50", "lraspp_mobilenet_v3_large")
# torchvision's segmentation networks (their forward returns a dict; the benchmark takes its "out").
SEGMENTATION_MODELS = ("fcn_resnet50", "lraspp_mobilenet_v3_large")


class TorchvisionClassifier(torch.nn.Module):
    """A torchvision classifier (random architecture weights replaced by seeded_weights), returning a tuple like
    the other networks here."""

    def __init__(self, name):
        super().__init__()
        import torchvision

        options = {"aux_logits": False, "init_weights": False} if name in ("googlenet", "inception_v3") else {}
        if name in SEGMENTATION_MODELS:
            options = {"weights_backbone": None, **({"aux_loss": False} if name == "fcn_resnet50" else {})}
            self.net = getattr(torchvision.models.segmentation, name)(weights=None, **options)
        else:
            self.net = getattr(torchvision.models, name)(weights=None, **options)
        self.segmentation = name in SEGMENTATION_MODELS
        self.input_shape = (3, 299, 299) if name == "inception_v3" else (3, 224, 224)

    def forward(self, x):
        return (self.net(x)["out"],) if self.segmentation else (self.net(x),)


class Yolov8Detector(torch.nn.Module):
    """YOLOv8n as tools/yolov8_net.py builds it (Ultralytics' architecture, the box decoding in the graph) with
    seeded_weights, at 640 x 640; forward returns its (N, 84, 8400) output in a tuple like the other networks here."""

    def __init__(self, seed):
        super().__init__()
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
        import yolov8_net

        self.net = seeded_weights(yolov8_net.yolov8("n"), seed)
        with torch.no_grad():  # seeded_weights drew the DFL's fixed bin weights too: 0 .. 15 again
            dfl = self.net.detect.dfl
            dfl.conv.weight.copy_(torch.arange(dfl.reg_max, dtype=torch.float).view(1, dfl.reg_max, 1, 1))
        self.input_shape = (3, 640, 640)

    def forward(self, x):
        return (self.net(x),)


DETECTOR_MODELS = {"yolov8n": Yolov8Detector}


class UNetSegmenter(torch.nn.Module):
    """The U-Net of tools/unet_net.py (width 64, 2 classes; its decoder upsamples by transposed convolutions) at the
    zoo's 224 x 224 (four 2x2 pools: any multiple of 16 fits); forward returns its (N, 2, 224, 224) logits in a tuple
    like the other networks here. Weights: seeded_weights, applied by load_model."""

    def __init__(self):
        super().__init__()
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
        import unet_net

        self.net = unet_net.UNet()
        self.input_shape = (3, 224, 224)

    def forward(self, x):
        return (self.net(x),)


SEGMENTER_MODELS = {"unet": UNetSegmenter}


def load_model(model, weights):
    """`model` is "mnist" (weights: the directory of its .npy files), "style256" / "style512" (weights: the style
    network's folder), "resnet18" / "mobilenet_v2", one of TORCHVISION_MODELS, "yolov8n" or "unet" (weights: the seed
    of seeded_weights) or a darknet cfg (weights: its .weights, or a seed of seeded_weights: the serve benchmark's
    Tiny YOLO, whose ONNX export then compresses for the trip to the GPU machine as the zoo's do)."""
    if model in IMAGENET_MODELS:
        net = seeded_weights(IMAGENET_MODELS[model](), int(weights))
    elif model in DETECTOR_MODELS:
        net = DETECTOR_MODELS[model](int(weights))
    elif model in SEGMENTER_MODELS:
        net = seeded_weights(SEGMENTER_MODELS[model](), int(weights))
    elif model in TORCHVISION_MODELS:
        net = seeded_weights(TorchvisionClassifier(model), int(weights))
    elif model == "mnist":
        net = MnistNet(weights)
    elif model.startswith("style"):
        net = StyleNet(weights, int(model[len("style"):]))
    elif str(weights).isdigit():
        net = seeded_weights(DarknetNet(model, None), int(weights))
    else:
        net = DarknetNet(model, weights)
    return net.eval()
