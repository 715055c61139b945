#!/usr/bin/python3
"""Writes small hand-built ONNX models for tests/onnx_models_test.cpp: the operators and attributes that
torch.onnx.export does not produce for the test networks of tools/make_onnx_models.py (auto_pad, asymmetric pads,
windows that differ between height and width,
a batch norm without a convolution before it, Gemm's transB = 0 with alpha and beta, MatMul, HardSigmoid, PRelu,
constant arithmetic, squeeze-and-excitation gates, every pooling variant, Reduce*, opset 18's inputs for axes,
Resize by sizes, Pad's modes, Shape arithmetic, several outputs), the blocks the model-level rewrites fuse, and the
arithmetic on tensors of any rank (broadcasting, element-wise functions, reductions and softmax on any axis, MatMul
of any rank: ConvNeXt's LayerNorm and GELU, YOLOv8's box arithmetic).

For each case, tests/fixtures/onnx/op_<case>/ gets model.onnx and input.npy (float32, seeded);
tools/onnx_reference.mjs then adds ONNX Runtime's outputs. Weights are random from a seed derived from the case name.

Run: tools/make_onnx_op_models.py [--out DIR] [--case NAME...]   (Debian's python3-onnx and python3-numpy)
"""
import argparse
import pathlib
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = {}


def case(opset, input_shape):
    def register(function):
        CASES[function.__name__] = (opset, input_shape, function)
        return function
    return register


class Builder:
    """Nodes, initializers and outputs of one graph, with seeded random constants."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.initializers = []
        self.outputs = []
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, array, name=None):
        name = name or self.name("c")
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def rand(self, *shape, scale=1.0):
        return self.const((self.rng.uniform(-1, 1, size=shape) * scale).astype(np.float32))

    def node(self, op, inputs, outputs=1, **attributes):
        names = [self.name(op.lower() + "_out") for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=self.name(op), **attributes))
        return names[0] if outputs == 1 else names

    def conv(self, x, cin, cout, k, **attributes):
        fan_in = cin // attributes.get("group", 1) * k * k
        w = self.rand(cout, cin // attributes.get("group", 1), k, k, scale=1.7 / np.sqrt(fan_in))
        return self.node("Conv", [x, w, self.rand(cout, scale=0.5)], kernel_shape=[k, k], **attributes)

    def conv_window(self, x, cin, cout, kernel, **attributes):
        """A convolution with a kernel_h x kernel_w window (kernel a pair), attributes as ONNX's Conv takes them."""
        group = attributes.get("group", 1)
        fan_in = cin // group * kernel[0] * kernel[1]
        w = self.rand(cout, cin // group, *kernel, scale=1.7 / np.sqrt(fan_in))
        return self.node("Conv", [x, w, self.rand(cout, scale=0.5)], kernel_shape=list(kernel), **attributes)

    def output(self, name, rank=4):
        self.outputs.append((name, rank))


# --- convolution ----------------------------------------------------------------------------------------------------

@case(13, (2, 3, 9, 10))
def conv_asymmetric_pads_bn_relu(b, x):
    """Asymmetric pads (a Pad layer), batch norm folded into the convolution, ReLU fused."""
    y = b.conv(x, 3, 6, 3, pads=[0, 1, 2, 1], strides=[2, 2])
    scale = b.const(b.rng.uniform(0.5, 1.5, 6).astype(np.float32))
    bias = b.rand(6, scale=0.5)
    mean = b.rand(6, scale=0.5)
    var = b.const(b.rng.uniform(0.5, 2.0, 6).astype(np.float32))
    y = b.node("BatchNormalization", [y, scale, bias, mean, var], epsilon=1e-3)
    b.output(b.node("Relu", [y]))


@case(11, (1, 4, 9, 10))
def conv_auto_pad(b, x):
    """auto_pad SAME_UPPER and SAME_LOWER at stride 2 (odd padding), VALID, a dilated grouped convolution."""
    b.output(b.conv(x, 4, 5, 3, auto_pad="SAME_UPPER", strides=[2, 2]))
    b.output(b.conv(x, 4, 5, 4, auto_pad="SAME_LOWER", strides=[2, 2]))
    b.output(b.conv(x, 4, 3, 3, auto_pad="VALID"))
    b.output(b.conv(x, 4, 6, 3, pads=[2, 2, 2, 2], dilations=[2, 2], group=2))


@case(13, (2, 4, 9, 10))
def conv_general_windows(b, x):
    """Windows that differ between height and width: Inception's 1x7 and 7x1, a 3x1 at strides (2, 1), dilations
    (2, 1), a non-square kernel with four different pads, auto_pad SAME_UPPER / SAME_LOWER with per-axis strides,
    groups, and a square kernel at unequal strides with asymmetric pads (all carried by the convolution itself)."""
    b.output(b.conv_window(x, 4, 5, (1, 7), pads=[0, 3, 0, 3]))
    b.output(b.conv_window(x, 4, 3, (7, 1), pads=[3, 0, 3, 0], strides=[2, 1]))
    b.output(b.conv_window(x, 4, 6, (3, 1), pads=[2, 0, 2, 0], dilations=[2, 1]))
    b.output(b.conv_window(x, 4, 5, (1, 3), pads=[1, 0, 0, 2], strides=[1, 2]))
    b.output(b.conv_window(x, 4, 4, (2, 3), auto_pad="SAME_UPPER", strides=[2, 1]))
    b.output(b.conv_window(x, 4, 6, (3, 2), auto_pad="SAME_LOWER", strides=[1, 2], group=2))
    y = b.conv_window(x, 4, 6, (3, 3), pads=[0, 1, 2, 1], strides=[2, 1])
    b.output(b.node("Relu", [b.conv_window(y, 6, 6, (5, 1), pads=[2, 0, 2, 0], group=6)]))


@case(9, (3, 5, 6, 7))
def batch_norm_alone_leaky(b, x):
    """A batch norm that no convolution precedes (a per-channel scale and shift), leaky ReLU."""
    scale = b.const(b.rng.uniform(0.5, 1.5, 5).astype(np.float32))
    y = b.node("BatchNormalization", [x, scale, b.rand(5), b.rand(5), b.const(b.rng.uniform(0.5, 2, 5).astype(np.float32))])
    b.output(b.node("LeakyRelu", [y], alpha=0.2))


# --- fully connected ----------------------------------------------------------------------------------------------

@case(11, (3, 12))
def gemm_transposed_alpha_beta(b, x):
    w = b.rand(12, 5)  # [in][out]: transB = 0
    c = b.rand(1, 5)
    y = b.node("Gemm", [x, w, c], transB=0, alpha=0.5, beta=2.0)
    b.output(b.node("Sigmoid", [y]), rank=2)


@case(13, (2, 6))
def matmul_add_tanh(b, x):
    y = b.node("MatMul", [x, b.rand(6, 4)])
    y = b.node("Add", [y, b.rand(4)])
    b.output(b.node("Tanh", [y]), rank=2)


# --- activations and arithmetic ------------------------------------------------------------------------------------

@case(14, (2, 4, 5, 6))
def hard_sigmoid_hard_swish(b, x):
    gate = b.node("HardSigmoid", [b.conv(x, 4, 4, 1)], alpha=0.3, beta=0.4)
    swish = b.node("HardSwish", [b.node("Mul", [x, b.const(np.float32(3.0))])])
    b.output(b.node("Mul", [gate, swish]))


@case(9, (2, 3, 4, 5))
def prelu(b, x):
    y = b.node("PRelu", [x, b.const(np.array([[[0.1]], [[-0.3]], [[0.7]]], dtype=np.float32))])
    b.output(b.node("PRelu", [y, b.const(np.array([0.25], dtype=np.float32))]))


@case(13, (2, 3, 4, 4))
def constant_arithmetic(b, x):
    """x - c per channel, divided by 2, c - x, times a scalar, plus a Constant node; Clip as ReLU6."""
    c = b.const(np.array([0.5, -1.0, 2.0], dtype=np.float32).reshape(3, 1, 1))
    y = b.node("Div", [b.node("Sub", [x, c]), b.const(np.float32(2.0))])
    y = b.node("Sub", [b.const(np.float32(1.0)), y])
    k = b.node("Constant", [], value=numpy_helper.from_array(np.array([[[[4.0]], [[-2.0]], [[1.5]]]], dtype=np.float32)))
    y = b.node("Mul", [k, y])
    lo = b.const(np.float32(0.0))
    hi = b.const(np.float32(6.0))
    b.output(b.node("Clip", [y, lo, hi]))
    b.output(b.node("Clip", [y, lo]))


@case(13, (2, 6, 7, 5))
def squeeze_excitation(b, x):
    """x * sigmoid(conv(relu(conv(mean(x))))): a (N, C, 1, 1) gate broadcast over each plane; x - x / gate too."""
    s = b.node("GlobalAveragePool", [x])
    s = b.node("Relu", [b.conv(s, 6, 3, 1)])
    gate = b.node("Sigmoid", [b.conv(s, 3, 6, 1)])
    b.output(b.node("Mul", [gate, x]))
    y = b.conv(x, 6, 6, 3, pads=[1, 1, 1, 1])
    b.output(b.node("Sub", [y, b.node("Div", [x, gate])]))
    b.output(b.node("Add", [y, x]))


@case(13, (2, 8, 12, 11))
def mobile_blocks(b, x):
    """The blocks corgy's model-level rewrites fuse (corgy/model/fusion.h): MobileNetV2's inverted residual (1x1
    with ReLU6, depthwise 3x3, 1x1, residual add), SiLU as x * sigmoid(x), squeeze-and-excitation with a hard sigmoid
    gate, a residual add with ReLU after a 3x3 convolution, and DenseNet's concatenation -> batch norm -> ReLU."""
    lo, hi = b.const(np.float32(0.0)), b.const(np.float32(6.0))
    e = b.node("Clip", [b.conv(x, 8, 48, 1), lo, hi])
    d = b.node("Clip", [b.conv(e, 48, 48, 3, pads=[1, 1, 1, 1], group=48), lo, hi])
    y = b.node("Add", [b.conv(d, 48, 8, 1), x])
    s = b.conv(y, 8, 16, 3, pads=[1, 1, 1, 1], strides=[2, 2])
    s = b.node("Mul", [s, b.node("Sigmoid", [s])])
    g = b.node("Relu", [b.conv(b.node("GlobalAveragePool", [s]), 16, 4, 1)])
    g = b.node("HardSigmoid", [b.conv(g, 4, 16, 1)], alpha=1.0 / 6, beta=0.5)
    s = b.node("Mul", [s, g])
    r = b.node("Relu", [b.node("Add", [b.conv(s, 16, 16, 3, pads=[1, 1, 1, 1]), s])])
    c = b.node("Concat", [r, s], axis=1)
    scale = b.const(b.rng.uniform(0.5, 1.5, 32).astype(np.float32))
    var = b.const(b.rng.uniform(0.5, 2, 32).astype(np.float32))
    n = b.node("Relu", [b.node("BatchNormalization", [c, scale, b.rand(32), b.rand(32), var])])
    b.output(b.conv(n, 32, 8, 1))
    b.output(y)


# --- pooling and reductions -----------------------------------------------------------------------------------------

@case(10, (2, 3, 10, 11))
def pools(b, x):
    """Every padding case: ceil_mode with an overhang, count_include_pad both ways, asymmetric pads."""
    b.output(b.node("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
                    count_include_pad=1))
    b.output(b.node("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
                    count_include_pad=0))
    b.output(b.node("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 1, 1, 0],
                    count_include_pad=1))
    b.output(b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1))
    b.output(b.node("MaxPool", [x], kernel_shape=[2, 2], auto_pad="SAME_UPPER"))
    b.output(b.node("AveragePool", [x], kernel_shape=[3, 3], strides=[3, 3], auto_pad="SAME_LOWER"))


@case(13, (2, 4, 5, 7))
def reductions(b, x):
    b.output(b.node("GlobalMaxPool", [x]))
    b.output(b.node("ReduceMean", [x], axes=[2, 3], keepdims=0), rank=2)
    b.output(b.node("ReduceMax", [x], axes=[-1, -2], keepdims=1))


@case(18, (2, 4, 5, 7))
def reduce_mean_opset18(b, x):
    """Opset 18: ReduceMean's axes and Pad's axes are inputs."""
    y = b.node("ReduceMean", [x, b.const(np.array([2, 3], dtype=np.int64))], keepdims=0)
    b.output(b.node("Gemm", [y, b.rand(3, 4)], transB=1), rank=2)
    pads = b.const(np.array([1, 2, 0, 1], dtype=np.int64))
    axes = b.const(np.array([2, 3], dtype=np.int64))
    b.output(b.node("Pad", [x, pads, b.const(np.float32(-0.5)), axes], mode="constant"))


# --- shapes ---------------------------------------------------------------------------------------------------------

@case(13, (2, 5, 3, 3))
def softmax_and_shapes(b, x):
    """Squeeze / Unsqueeze / Reshape that only drop axes or flatten; x.view(x.size(0), -1) as Shape arithmetic;
    softmax over the channels of a 4-D tensor (opset 13)."""
    b.output(b.node("Softmax", [x], axis=1))
    p = b.node("GlobalAveragePool", [x])
    s = b.node("Squeeze", [p, b.const(np.array([2, 3], dtype=np.int64))])
    u = b.node("Unsqueeze", [s, b.const(np.array([2, 3], dtype=np.int64))])
    b.output(b.node("Reshape", [u, b.const(np.array([0, -1], dtype=np.int64))]), rank=2)
    batch = b.node("Gather", [b.node("Shape", [x]), b.const(np.array(0, dtype=np.int64))], axis=0)
    shape = b.node("Concat", [b.node("Unsqueeze", [batch, b.const(np.array([0], dtype=np.int64))]),
                              b.const(np.array([-1], dtype=np.int64))], axis=0)
    flat = b.node("Reshape", [x, shape])
    b.output(b.node("Softmax", [b.node("Gemm", [flat, b.rand(4, 45)], transB=1)], axis=1), rank=2)


@case(11, (2, 3, 3, 4))
def softmax_opset11_flatten(b, x):
    f = b.node("Flatten", [x], axis=1)
    y = b.node("Gemm", [f, b.rand(36, 7)])
    b.output(b.node("Softmax", [y], axis=1), rank=2)


# --- resizing and padding -------------------------------------------------------------------------------------------

@case(13, (1, 2, 3, 4))
def resize(b, x):
    empty = b.const(np.array([], dtype=np.float32))
    b.output(b.node("Resize", [x, empty, empty, b.const(np.array([1, 2, 9, 12], dtype=np.int64))], mode="nearest",
                    coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
    b.output(b.node("Resize", [x, empty, b.const(np.array([1, 1, 2, 2], dtype=np.float32))], mode="nearest",
                    coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor"))


@case(7, (2, 2, 3, 3))
def upsample_opset7(b, x):
    b.output(b.node("Upsample", [x], mode="nearest", scales=[1.0, 1.0, 3.0, 3.0]))


@case(11, (2, 3, 5, 6))
def pad_modes(b, x):
    pads = b.const(np.array([0, 0, 1, 2, 0, 0, 3, 1], dtype=np.int64))
    b.output(b.node("Pad", [x, pads], mode="edge"))
    b.output(b.node("Pad", [x, pads, b.const(np.float32(1.5))], mode="constant"))
    b.output(b.node("Pad", [x, pads], mode="reflect"))


@case(12, (2, 3, 6, 5))
def concat_dropout_instance_norm(b, x):
    """Concat of three, Dropout and Identity (no-ops), InstanceNormalization followed by ReLU (fused)."""
    a = b.node("Identity", [b.conv(x, 3, 2, 1)])
    d = b.node("Dropout", [b.conv(x, 3, 4, 3, pads=[1, 1, 1, 1]), b.const(np.float32(0.5))])
    y = b.node("Concat", [a, x, d], axis=1)
    scale = b.const(b.rng.uniform(0.5, 1.5, 9).astype(np.float32))
    y = b.node("InstanceNormalization", [y, scale, b.rand(9)], epsilon=1e-4)
    b.output(b.node("Relu", [y]))


@case(7, (2, 3, 4, 4))
def opset7_clip_batchnorm(b, x):
    """Opset 7's attribute forms: Clip's min/max, BatchNormalization after a convolution (folded)."""
    y = b.conv(x, 3, 4, 3, pads=[1, 1, 1, 1])
    scale = b.const(b.rng.uniform(0.5, 1.5, 4).astype(np.float32))
    y = b.node("BatchNormalization", [y, scale, b.rand(4), b.rand(4), b.const(b.rng.uniform(0.5, 2, 4).astype(np.float32))])
    b.output(b.node("Clip", [y], min=0.0, max=1.0))


# --- tensors of any rank: broadcasting arithmetic, element-wise functions, reductions, softmax, MatMul -------------

@case(13, (2, 4, 5, 6))
def layernorm_gelu_last_axis(b, x):
    """ConvNeXt's block as exported, on the last axis (W) of a convolution's output instead of an NHWC tensor:
    LayerNorm as ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div / Mul / Add, a MatMul by constant weights on
    the 4-D tensor (plus its bias), GELU as Div / Erf / Add / Mul / Mul, a second MatMul and the layer scale Mul."""
    y = b.conv(x, 4, 8, 3, pads=[1, 1, 1, 1])
    mean = b.node("ReduceMean", [y], axes=[-1], keepdims=1)
    d = b.node("Sub", [y, mean])
    var = b.node("ReduceMean", [b.node("Pow", [d, b.const(np.float32(2.0))])], axes=[-1], keepdims=1)
    std = b.node("Sqrt", [b.node("Add", [var, b.const(np.float32(1e-6))])])
    n = b.node("Div", [d, std])
    n = b.node("Add", [b.node("Mul", [n, b.rand(6, scale=2.0)]), b.rand(6)])
    h = b.node("Add", [b.node("MatMul", [n, b.rand(6, 12, scale=0.5)]), b.rand(12)])
    e = b.node("Erf", [b.node("Div", [h, b.const(np.float32(np.sqrt(2.0)))])])
    g = b.node("Mul", [b.node("Mul", [h, b.node("Add", [e, b.const(np.float32(1.0))])]), b.const(np.float32(0.5))])
    o = b.node("MatMul", [g, b.rand(12, 6, scale=0.3)])
    b.output(b.node("Add", [y, b.node("Mul", [o, b.rand(6, scale=0.5)])]))


@case(17, (2, 4, 5, 6))
def layer_normalization_opset17(b, x):
    """Opset 17's LayerNormalization as exporters write PyTorch's LayerNorm from then on: over the last axis (with
    and without bias), over axis 1 of a tensor whose later axes have size 1, and with epsilon 1e-3."""
    b.output(b.node("LayerNormalization", [x, b.rand(6, scale=2.0), b.rand(6)], axis=-1, epsilon=1e-6))
    b.output(b.node("LayerNormalization", [x, b.rand(6)], axis=3, epsilon=1e-3))
    pooled = b.node("GlobalAveragePool", [x])  # (N, 4, 1, 1)
    b.output(b.node("LayerNormalization", [pooled, b.rand(4, 1, 1), b.rand(4, 1, 1)], axis=1))


@case(13, (2, 16, 4, 12))
def yolo_dist2bbox(b, x):
    """YOLOv8's head arithmetic on (N, 16, 4, A) and (N, 4, A) tensors: softmax over the 16 bins and their expected
    value (DFL) as ReduceSum of a product, the boxes from anchors (constant first and second), a per-channel halving
    of a rank-3 tensor, strides broadcast along the anchors, Sigmoid, Max / Min of tensors and constants, and
    softmax / log-softmax over the other axes."""
    p = b.node("Softmax", [x], axis=1)
    bins = b.const(np.arange(16, dtype=np.float32).reshape(16, 1, 1))
    dist = b.node("ReduceSum", [b.node("Mul", [p, bins]), b.const(np.array([1], dtype=np.int64))], keepdims=0)
    anchors = b.const((b.rng.uniform(0, 12, size=(4, 12))).astype(np.float32))
    lo = b.node("Sub", [anchors, dist])
    hi = b.node("Add", [dist, anchors])
    centre = b.node("Div", [b.node("Add", [lo, hi]), b.const(np.float32(2.0))])
    size = b.node("Sub", [hi, lo])
    strides = b.const(np.where(np.arange(12) < 8, 8.0, 16.0).astype(np.float32).reshape(1, 12))
    b.output(b.node("Mul", [centre, strides]), rank=3)
    b.output(b.node("Max", [b.node("Min", [size, b.const(np.float32(9.0))]), lo]), rank=3)
    scores = b.node("Sigmoid", [b.node("ReduceMax", [x], axes=[2], keepdims=0)])  # (N, 16, A)
    b.output(scores, rank=3)
    b.output(b.node("Softmax", [x], axis=2))
    b.output(b.node("LogSoftmax", [dist], axis=-1), rank=3)
    b.output(b.node("Softmax", [dist], axis=1), rank=3)


@case(13, (2, 3, 4, 5))
def unary_functions(b, x):
    """Every element-wise function on a 4-D tensor (positive arguments where they need them), Pow by a broadcast
    exponent and by 0.5, Max with a broadcast constant, c / x."""
    a = b.node("Add", [b.node("Abs", [x]), b.const(np.float32(0.5))])
    b.output(b.node("Erf", [x]))
    b.output(b.node("Exp", [b.node("Neg", [x])]))
    b.output(b.node("Log", [a]))
    b.output(b.node("Sqrt", [a]))
    b.output(b.node("Reciprocal", [a]))
    b.output(b.node("Floor", [x]))
    b.output(b.node("Ceil", [x]))
    b.output(b.node("Pow", [a, b.const(b.rng.uniform(0.5, 2.5, size=(4, 1)).astype(np.float32))]))
    b.output(b.node("Pow", [a, b.const(np.float32(0.5))]))
    b.output(b.node("Max", [x, b.rand(3, 1, 5)]))
    b.output(b.node("Div", [b.rand(5), a]))


@case(13, (2, 3, 4, 5))
def gelu_tanh_export(b, x):
    """F.gelu(x, approximate='tanh') as torch.onnx.export writes it before opset 20 (symbolic_opset9.gelu):
    0.5 * (x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * (x * (x * x))))))."""
    cube = b.node("Mul", [x, b.node("Mul", [x, x])])
    inner = b.node("Add", [x, b.node("Mul", [b.const(np.float32(0.044715)), cube])])
    t = b.node("Tanh", [b.node("Mul", [b.const(np.float32(np.sqrt(2 / np.pi))), inner])])
    y = b.node("Mul", [x, b.node("Add", [b.const(np.float32(1.0)), t])])
    b.output(b.node("Mul", [b.const(np.float32(0.5)), y]))


@case(18, (2, 4, 5, 6))
def reductions_any_axes(b, x):
    """Opset 18: reductions over axes given as inputs, adjacent and not, keepdims both ways; ReduceSum's axes are an
    input from opset 13."""
    axes = lambda *a: b.const(np.array(a, dtype=np.int64))
    b.output(b.node("ReduceMin", [x, axes(1, 3)], keepdims=1))
    b.output(b.node("ReduceSum", [x, axes(1, 2)], keepdims=0), rank=2)
    b.output(b.node("ReduceMax", [x, axes(-1)], keepdims=0), rank=3)
    b.output(b.node("ReduceMean", [x, axes(1)], keepdims=1))
    b.output(b.node("ReduceMean", [x, axes(2, 3, 1)], keepdims=0), rank=1)


@case(13, (2, 3, 4, 4))
def batched_matmul_attention(b, x):
    """softmax(q k) v of two 4-D activations (no transpose: q and k are x times square weights), a batch broadcast
    against a ReduceMean over axis 1, softmax over the last axis."""
    q = b.node("MatMul", [x, b.rand(4, 4)])
    k = b.node("MatMul", [x, b.rand(4, 4)])
    attention = b.node("Softmax", [b.node("MatMul", [q, k])], axis=-1)
    v = b.node("MatMul", [x, b.rand(4, 4)])
    b.output(b.node("MatMul", [attention, v]))
    b.output(b.node("MatMul", [q, b.node("ReduceMean", [v], axes=[1], keepdims=1)]))


@case(11, (2, 3, 4, 5))
def softmax_opset11_axes(b, x):
    """Before opset 13 Softmax and LogSoftmax normalise over every axis from `axis` on (ONNX's 2-D coercion)."""
    b.output(b.node("Softmax", [x], axis=2))
    b.output(b.node("LogSoftmax", [x], axis=1))
    b.output(b.node("Softmax", [x], axis=-1))
# --- tensors of rank 1 to 6: Reshape, Transpose, Slice, Split, Concat, Gather, Expand, Flatten, (Un)Squeeze -----------

def ints(*values):
    return np.array(values, dtype=np.int64)


@case(13, (1, 64, 2, 4))
def tensor_dfl_head(b, x):
    """YOLOv8's DFL head piece: (N, 64, A) viewed as (N, 4, 16, A), the 16 bins moved to axis 1, a softmax over them,
    their expectation (a 1x1 convolution with weights 0..15), back to (N, 4, A); the boxes concatenated with the
    scores along axis 1 and the anchors of two scales along axis 2, as the detector's output (N, 4 + classes, A)."""
    a = b.node("Reshape", [x, b.const(ints(1, 64, 8))])
    bins = b.node("Transpose", [b.node("Reshape", [a, b.const(ints(1, 4, 16, 8))])], perm=[0, 2, 1, 3])
    soft = b.node("Softmax", [bins], axis=1)
    weights = b.const(np.arange(16, dtype=np.float32).reshape(1, 16, 1, 1))
    boxes = b.node("Reshape", [b.node("Conv", [soft, weights], kernel_shape=[1, 1]), b.const(ints(1, 4, 8))])
    scores = b.node("Slice", [a, b.const(ints(60)), b.const(ints(63)), b.const(ints(1))])
    head = b.node("Concat", [boxes, scores], axis=1)
    b.output(head, rank=3)
    b.output(b.node("Concat", [head, b.node("Slice", [head, b.const(ints(1)), b.const(ints(7)), b.const(ints(2)),
                                                      b.const(ints(2))])], axis=2), rank=3)


@case(13, (1, 8, 5, 6))
def tensor_nhwc_round_trip(b, x):
    """ConvNeXt's layout changes: a convolution's output to NHWC (Transpose (0, 2, 3, 1)) and back
    ((0, 3, 1, 2)) into another convolution; the NHWC tensor and a 5-D transpose of it (viewed as 4-D) are outputs
    too."""
    y = b.conv(x, 8, 8, 3, pads=[1, 1, 1, 1])
    nhwc = b.node("Transpose", [y], perm=[0, 2, 3, 1])
    b.output(nhwc)
    back = b.node("Transpose", [nhwc], perm=[0, 3, 1, 2])
    b.output(b.conv(back, 8, 4, 1))
    five = b.node("Reshape", [nhwc, b.const(ints(1, 5, 3, 2, 8))])
    b.output(b.node("Reshape", [b.node("Transpose", [five], perm=[0, 4, 2, 1, 3]), b.const(ints(1, 8, 3, 10))]))


@case(13, (2, 6, 4, 5))
def tensor_split_concat_axis2(b, x):
    """Split and Concat along axis 2 of 3-D tensors (a free-standing split with sizes as an input), Split along the
    last axis of a 4-D tensor, Flatten at axis 1 of a 3-D tensor."""
    flat = b.node("Reshape", [x, b.const(ints(0, 6, 20))])
    first, second = b.node("Split", [flat, b.const(ints(8, 12))], outputs=2, axis=2)
    b.output(b.node("Concat", [second, first, second], axis=2), rank=3)
    left, right = b.node("Split", [x, b.const(ints(2, 3))], outputs=2, axis=-1)
    b.output(b.node("Concat", [right, left], axis=3))
    b.output(b.node("Flatten", [second], axis=1), rank=2)


@case(18, (1, 4, 7, 7))
def tensor_split_num_outputs_opset18(b, x):
    """Opset 18's Split by num_outputs (a smaller last part) along axis 2, and Slice with negative steps and
    out-of-range ends on axes 3 and 2."""
    parts = b.node("Split", [x], outputs=3, axis=2, num_outputs=3)
    for part in parts:
        b.output(part)
    b.output(b.node("Slice", [x, b.const(ints(-1, 4)), b.const(ints(-1000, 0)), b.const(ints(3, 2)),
                              b.const(ints(-2, -1))]))


@case(13, (1, 4, 3, 5))
def tensor_gather_expand(b, x):
    """Gather of one index (the axis dropped) and of an arithmetic progression (reversed too), Unsqueeze and
    Squeeze of computed tensors, Expand of the gathered row back to every row, and with a shorter shape."""
    row = b.node("Gather", [x, b.const(np.array(2, dtype=np.int64))], axis=2)
    b.output(row, rank=3)
    b.output(b.node("Gather", [x, b.const(ints(4, 2, 0))], axis=3))
    b.output(b.node("Gather", [x, b.const(ints(0, 2))], axis=-3))
    lifted = b.node("Unsqueeze", [row, b.const(ints(2))])
    b.output(b.node("Expand", [lifted, b.const(ints(1, 4, 3, 5))]))
    b.output(b.node("Expand", [lifted, b.const(ints(6, 1))]))
    column = b.node("Gather", [x, b.const(np.array(-1, dtype=np.int64))], axis=3)
    b.output(b.node("Squeeze", [b.node("Slice", [column, b.const(ints(1)), b.const(ints(2)), b.const(ints(2))]),
                                b.const(ints(2))]), rank=2)


def build(name, opset, input_shape, function, out):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    b = Builder(rng)
    function(b, "input")
    graph = helper.make_graph(
        b.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(input_shape))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [f"{o}_d{k}" for k in range(rank)])
         for o, rank in b.outputs], b.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="corgy tools")
    model.ir_version = 8 if opset >= 15 else 7 if opset >= 12 else 6 if opset >= 11 else 5 if opset >= 10 else 4 if opset >= 9 else 3
    if model.ir_version < 4:  # before IR version 4 every initializer is listed among the graph inputs too
        for tensor in b.initializers:
            model.graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    if opset <= 17:  # Debian's onnx 1.12 knows opsets up to 17
        onnx.checker.check_model(model)
    directory = out / f"op_{name}"
    directory.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(directory / "model.onnx"))
    np.save(directory / "input.npy", (rng.standard_normal(input_shape) * 2).astype(np.float32))
    print(f"{directory}: opset {opset}, {len(b.nodes)} nodes, {len(b.outputs)} outputs")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "tests" / "fixtures" / "onnx")
    parser.add_argument("--case", action="append", help="only this case (repeatable); default: every case")
    args = parser.parse_args()
    for name, (opset, input_shape, function) in CASES.items():
        if not args.case or name in args.case:
            build(name, opset, input_shape, function, args.out)


if __name__ == "__main__":
    main()
