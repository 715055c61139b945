#!/usr/bin/python3
"""Writes the reference fixtures that tests/pytorch_fixtures_test.cpp and tests/npy_test.cpp read.

tests/fixtures/pytorch/<case>/ gets, for each case, the input, the parameters and PyTorch's output as float32
C-order .npy files (file names per case are listed in tests/fixtures/pytorch/cases.json, with the PyTorch call
that produced the output). Inputs and parameters are drawn in float32 from a seed derived from the case name,
so adding a case changes no other; outputs are computed by PyTorch on the CPU in float64 from those float32
values and rounded to float32 once, so the reference carries no float32 accumulation error of its own.

tests/fixtures/pytorch/npy/ gets small files written by numpy itself (1-D to 5-D, a version 2.0 header,
float64, Fortran order, big-endian, 0-D, empty) for the .npy reader's tests.

Run from anywhere: tools/make_fixtures.py (Debian's python3-torch and python3-numpy).
"""
import json
import pathlib
import shutil
import zlib

import numpy as np
import torch
import torch.nn.functional as F

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "pytorch"

CASES = {}


def case(description):
    """Registers a case: `description` is the PyTorch computation, recorded in cases.json."""

    def register(function):
        CASES[function.__name__] = (description, function)
        return function

    return register


def randn(*shape, scale=1.0):
    return torch.randn(*shape, dtype=torch.float32) * scale


def uniform(*shape, low, high):
    return torch.empty(*shape, dtype=torch.float32).uniform_(low, high)


def conv_params(in_channels, out_channels, kernel, groups=1, bias=True):
    """PyTorch's default Conv2d initialisation, in float32."""
    conv = torch.nn.Conv2d(in_channels, out_channels, kernel, groups=groups, bias=bias)
    params = {"weight": conv.weight.detach().clone()}
    if bias:
        params["bias"] = conv.bias.detach().clone()
    return params


def bn_params(channels):
    """Batch-norm parameters and running statistics far from the identity, so that a wrong formula shows."""
    return {
        "bn_weight": uniform(channels, low=0.5, high=1.5),
        "bn_bias": randn(channels, scale=0.5),
        "bn_running_mean": randn(channels, scale=0.5),
        "bn_running_var": uniform(channels, low=0.5, high=2.0),
    }


def f64(tensor):
    """The float64 copy PyTorch computes the reference in (None stays None)."""
    return None if tensor is None else tensor.double()


def conv_case(input_shape, out_channels, kernel, stride=1, padding=0, dilation=1, groups=1, bias=True,
              activation=None, zero_pads=None):
    """kernel, stride, padding and dilation as F.conv2d takes them (an int or a (height, width) pair); zero_pads
    (left, right, top, bottom), as F.pad takes them, pads the input first (ONNX's per-side pads)."""
    x = randn(*input_shape)
    tensors = {"input": x, **conv_params(input_shape[1], out_channels, kernel, groups, bias)}
    padded = F.pad(f64(x), zero_pads) if zero_pads else f64(x)
    y = F.conv2d(padded, f64(tensors["weight"]), f64(tensors.get("bias")), stride, padding, dilation, groups)
    tensors["output"] = activation(y) if activation else y
    return tensors


def batch_norm(x, t, eps):
    """BatchNorm2d in eval mode with the bn_* tensors of `t`."""
    return F.batch_norm(x, f64(t["bn_running_mean"]), f64(t["bn_running_var"]), f64(t["bn_weight"]),
                        f64(t["bn_bias"]), training=False, eps=eps)


# --- convolution ---------------------------------------------------------------------------------------------

@case("F.conv2d(input, weight, bias, padding=1)")
def conv2d_3x3_pad1():
    return conv_case((1, 3, 9, 11), 8, 3, padding=1)


@case("F.conv2d(input, weight, bias, padding=2)")
def conv2d_5x5_pad2():
    return conv_case((2, 4, 10, 9), 6, 5, padding=2)


@case("F.conv2d(input, weight, bias, stride=2, padding=1)")
def conv2d_3x3_stride2_pad1():
    return conv_case((2, 5, 11, 13), 7, 3, stride=2, padding=1)


@case("F.conv2d(input, weight, bias, stride=2)")
def conv2d_3x3_stride2_nopad():
    return conv_case((1, 3, 12, 9), 4, 3, stride=2)


@case("F.conv2d(input, weight, bias, padding=2, dilation=2)")
def conv2d_3x3_dilation2():
    return conv_case((1, 4, 13, 12), 5, 3, padding=2, dilation=2)


@case("F.conv2d(input, weight, bias, stride=2, padding=1, dilation=2, groups=2)")
def conv2d_3x3_stride2_dilation2_groups2():
    return conv_case((2, 4, 12, 11), 6, 3, stride=2, padding=1, dilation=2, groups=2)


@case("F.conv2d(input, weight, bias, padding=1, groups=2)")
def conv2d_3x3_groups2():
    return conv_case((2, 6, 8, 9), 8, 3, padding=1, groups=2)


@case("F.conv2d(input, weight, bias, padding=1, groups=8) (depthwise)")
def conv2d_depthwise_3x3():
    return conv_case((2, 8, 9, 10), 8, 3, padding=1, groups=8)


@case("F.conv2d(input, weight, bias, stride=2, padding=1, groups=6) (depthwise)")
def conv2d_depthwise_3x3_stride2():
    return conv_case((1, 6, 11, 11), 6, 3, stride=2, padding=1, groups=6)


@case("F.conv2d(input, weight, bias, padding=1, groups=4) (depthwise, channel multiplier 2)")
def conv2d_depthwise_multiplier2():
    return conv_case((2, 4, 7, 8), 8, 3, padding=1, groups=4)


@case("F.conv2d(input, weight, bias)")
def conv2d_1x1_batch3():
    return conv_case((3, 16, 7, 5), 10, 1)


@case("F.conv2d(input, weight, bias, stride=2, padding=3)")
def conv2d_7x7_stride2_batch3():
    return conv_case((3, 3, 17, 15), 4, 7, stride=2, padding=3)


@case("F.conv2d(input, weight, None, padding=1)")
def conv2d_no_bias():
    return conv_case((2, 5, 8, 8), 4, 3, padding=1, bias=False)


@case("F.leaky_relu(F.conv2d(input, weight, bias, padding=1), 0.1)")
def conv2d_leaky():
    return conv_case((2, 3, 9, 7), 6, 3, padding=1, activation=lambda y: F.leaky_relu(y, 0.1))


# Windows that differ between height and width (Inception's factorized convolutions), per-axis strides and
# dilations, and per-side pads.
@case("F.conv2d(input, weight, bias, padding=(0, 3)) (a 1x7 kernel)")
def conv2d_1x7_pad0x3():
    return conv_case((2, 5, 9, 11), 6, (1, 7), padding=(0, 3))


@case("F.conv2d(input, weight, bias, padding=(3, 0)) (a 7x1 kernel)")
def conv2d_7x1_pad3x0_batch3():
    return conv_case((3, 4, 10, 8), 5, (7, 1), padding=(3, 0))


@case("F.conv2d(input, weight, bias, stride=(2, 1), padding=(1, 0)) (a 3x1 kernel)")
def conv2d_3x1_stride2x1():
    return conv_case((2, 3, 11, 9), 4, (3, 1), stride=(2, 1), padding=(1, 0))


@case("F.conv2d(input, weight, bias, padding=(2, 1), dilation=(2, 1))")
def conv2d_3x3_dilation2x1():
    return conv_case((1, 4, 12, 10), 5, 3, padding=(2, 1), dilation=(2, 1))


@case("F.conv2d(F.pad(input, (2, 1, 1, 0)), weight, bias, groups=3) (a 1x5 kernel, pads top 1 left 2 bottom 0 "
      "right 1)")
def conv2d_1x5_groups3_asymmetric_pads():
    return conv_case((2, 6, 8, 9), 9, (1, 5), groups=3, zero_pads=(2, 1, 1, 0))


@case("F.conv2d(F.pad(input, (1, 1, 0, 2)), weight, bias, stride=2) (pads top 0 left 1 bottom 2 right 1)")
def conv2d_3x3_stride2_asymmetric_pads():
    return conv_case((1, 3, 10, 9), 4, 3, stride=2, zero_pads=(1, 1, 0, 2))


# --- batch norm ------------------------------------------------------------------------------------------------

@case("F.batch_norm(F.conv2d(input, weight, bias, padding=1), bn_running_mean, bn_running_var, bn_weight, bn_bias, "
      "training=False, eps=1e-5) (BatchNorm2d in eval mode)")
def conv2d_batchnorm():
    t = conv_case((2, 3, 8, 9), 6, 3, padding=1)
    t.update(bn_params(6))
    t["output"] = batch_norm(t["output"], t, 1e-5)
    return t


@case("F.leaky_relu(F.batch_norm(F.conv2d(input, weight, None, padding=1), bn_running_mean, bn_running_var, "
      "bn_weight, bn_bias, training=False, eps=1e-3), 0.1)")
def conv2d_no_bias_batchnorm_eps1e3_leaky():
    t = conv_case((1, 4, 7, 10), 5, 3, padding=1, bias=False)
    t.update(bn_params(5))
    t["output"] = F.leaky_relu(batch_norm(t["output"], t, 1e-3), 0.1)
    return t


@case("F.batch_norm(input, bn_running_mean, bn_running_var, bn_weight, bn_bias, training=False, eps=1e-5)")
def batchnorm():
    t = {"input": randn(2, 6, 5, 7), **bn_params(6)}
    t["output"] = batch_norm(f64(t["input"]), t, 1e-5)
    return t


# --- pooling ---------------------------------------------------------------------------------------------------

def unary_case(input_shape, function, scale=1.0):
    x = randn(*input_shape, scale=scale)
    return {"input": x, "output": function(f64(x))}


@case("F.max_pool2d(input, 2, 2)")
def maxpool_2x2_stride2():
    return unary_case((2, 3, 8, 9), lambda x: F.max_pool2d(x, 2, 2))


@case("F.max_pool2d(input, 3, 2, padding=1)")
def maxpool_3x3_stride2_pad1():
    return unary_case((2, 3, 9, 10), lambda x: F.max_pool2d(x, 3, 2, padding=1))


@case("F.max_pool2d(F.pad(input, (0, 1, 0, 1), value=-inf), 2, 1) (darknet's size 2 stride 1 maxpool)")
def maxpool_darknet_2x2_stride1():
    return unary_case((1, 4, 7, 6), lambda x: F.max_pool2d(F.pad(x, (0, 1, 0, 1), value=float("-inf")), 2, 1))


@case("F.adaptive_max_pool2d(input, 1)")
def maxpool_global():
    return unary_case((2, 5, 7, 6), lambda x: F.adaptive_max_pool2d(x, 1))


@case("F.avg_pool2d(input, 2, 2)")
def avgpool_2x2_stride2():
    return unary_case((2, 3, 9, 8), lambda x: F.avg_pool2d(x, 2, 2))


@case("F.avg_pool2d(input, 3, 2, padding=1, count_include_pad=True)")
def avgpool_3x3_stride2_pad1_include_pad():
    return unary_case((2, 3, 9, 10), lambda x: F.avg_pool2d(x, 3, 2, padding=1, count_include_pad=True))


@case("F.avg_pool2d(input, 3, 2, padding=1, count_include_pad=False)")
def avgpool_3x3_stride2_pad1_exclude_pad():
    return unary_case((2, 3, 9, 10), lambda x: F.avg_pool2d(x, 3, 2, padding=1, count_include_pad=False))


@case("F.avg_pool2d(input, 3, 1, padding=1, count_include_pad=False)")
def avgpool_3x3_stride1_pad1_exclude_pad():
    return unary_case((1, 2, 6, 7), lambda x: F.avg_pool2d(x, 3, 1, padding=1, count_include_pad=False))


@case("F.adaptive_avg_pool2d(input, 2) on 8 x 8 (= 4x4 windows, stride 4)")
def avgpool_adaptive_2x2():
    return unary_case((2, 3, 8, 8), lambda x: F.adaptive_avg_pool2d(x, 2))


@case("F.adaptive_avg_pool2d(input, 1) (global average pooling)")
def avgpool_global():
    return unary_case((2, 5, 7, 5), lambda x: F.adaptive_avg_pool2d(x, 1))


# --- fully connected and softmax -------------------------------------------------------------------------------

@case("F.linear(torch.flatten(input, 1), weight, bias)")
def linear_flatten():
    x = randn(3, 4, 3, 5)
    layer = torch.nn.Linear(60, 7)
    t = {"input": x, "weight": layer.weight.detach().clone(), "bias": layer.bias.detach().clone()}
    t["output"] = F.linear(torch.flatten(f64(x), 1), f64(t["weight"]), f64(t["bias"]))
    return t


@case("F.softmax(input, dim=1) on (N, classes)")
def softmax_2d():
    return unary_case((4, 10), lambda x: F.softmax(x, dim=1), scale=4.0)


@case("F.softmax(input, dim=1) on (N, C, H, W)")
def softmax_4d():
    return unary_case((2, 5, 3, 4), lambda x: F.softmax(x, dim=1), scale=4.0)


# --- activations -----------------------------------------------------------------------------------------------

ACTIVATIONS = {
    "leaky_relu": ("F.leaky_relu(input, 0.1)", lambda x: F.leaky_relu(x, 0.1)),
    "sigmoid": ("torch.sigmoid(input)", torch.sigmoid),
    "tanh": ("torch.tanh(input)", torch.tanh),
    "mish": ("F.mish(input)", F.mish),
    "swish": ("F.silu(input)", F.silu),
}


def register_activation_cases():
    """Per activation: a normal input, and a wide one (-40 to 40) that crosses mish's softplus thresholds (+-20)
    and makes exp overflow in sigmoid and swish."""
    for name, (call, function) in ACTIVATIONS.items():
        def normal(function=function):
            return unary_case((2, 3, 5, 7), function, scale=3.0)

        def wide(function=function):
            x = torch.linspace(-40.0, 40.0, 2 * 161, dtype=torch.float32).reshape(2, 1, 7, 23)
            return {"input": x, "output": function(f64(x))}

        CASES[name] = (call, normal)
        CASES[name + "_wide"] = (call + " on linspace(-40, 40)", wide)


register_activation_cases()


# --- upsample, concat, residual add -----------------------------------------------------------------------------

@case("F.interpolate(input, scale_factor=2, mode='nearest')")
def upsample_nearest_x2():
    return unary_case((2, 3, 4, 5), lambda x: F.interpolate(x, scale_factor=2, mode="nearest"))


@case("F.interpolate(input, scale_factor=3, mode='nearest')")
def upsample_nearest_x3():
    return unary_case((1, 2, 3, 4), lambda x: F.interpolate(x, scale_factor=3, mode="nearest"))


@case("torch.cat([input, F.conv2d(input, weight)], dim=1)")
def concat():
    x = randn(2, 3, 5, 6)
    t = {"input": x, **conv_params(3, 5, 1, bias=False)}
    t["output"] = torch.cat([f64(x), F.conv2d(f64(x), f64(t["weight"]))], dim=1)
    return t


@case("F.conv2d(input, weight, bias, padding=1) + input")
def residual_add():
    t = {"input": randn(2, 4, 6, 5), **conv_params(4, 4, 3)}
    t["output"] = F.conv2d(f64(t["input"]), f64(t["weight"]), f64(t["bias"]), padding=1) + f64(t["input"])
    return t


@case("F.leaky_relu(F.conv2d(input, weight, bias, padding=1) + input, 0.1)")
def residual_add_leaky():
    t = residual_add()
    t["output"] = F.leaky_relu(t["output"], 0.1)
    return t


# --- transposed convolution and resizing ---------------------------------------------------------------------

def conv_transpose_case(input_shape, out_channels, kernel, stride=1, padding=0, output_padding=0, groups=1,
                        dilation=1, bias=True):
    """nn.ConvTranspose2d's default initialisation, weights (in, out / groups, kH, kW)."""
    x = randn(*input_shape)
    deconv = torch.nn.ConvTranspose2d(input_shape[1], out_channels, kernel, stride, padding, output_padding, groups,
                                      bias, dilation)
    t = {"input": x, "weight": deconv.weight.detach().clone()}
    if bias:
        t["bias"] = deconv.bias.detach().clone()
    t["output"] = F.conv_transpose2d(f64(x), f64(t["weight"]), f64(t.get("bias")), stride, padding, output_padding,
                                     groups, dilation)
    return t


@case("F.conv_transpose2d(input, weight, bias, stride=2, padding=1, output_padding=1)")
def conv_transpose2d_stride2_output_padding1():
    return conv_transpose_case((2, 4, 5, 6), 3, 3, stride=2, padding=1, output_padding=1)


@case("F.conv_transpose2d(input, weight, None, stride=(2, 1), padding=(0, 1), output_padding=(1, 0), groups=2, "
      "dilation=2) with a 3x2 kernel")
def conv_transpose2d_groups2_dilation2():
    return conv_transpose_case((1, 4, 4, 5), 6, (3, 2), stride=(2, 1), padding=(0, 1), output_padding=(1, 0),
                               groups=2, dilation=2, bias=False)


@case("F.conv_transpose2d(input, weight, bias, stride=4) (4x4 kernel: the upsampling of segmentation heads)")
def conv_transpose2d_4x4_stride4():
    return conv_transpose_case((1, 3, 3, 4), 5, 4, stride=4)


@case("F.interpolate(input, scale_factor=2, mode='bilinear', align_corners=False)")
def interpolate_bilinear_x2():
    return unary_case((2, 3, 5, 4), lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False))


@case("F.interpolate(input, size=(7, 9), mode='bilinear', align_corners=True)")
def interpolate_bilinear_align_corners_size():
    return unary_case((1, 2, 4, 5), lambda x: F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True))


@case("F.interpolate(input, scale_factor=0.5, mode='bilinear', align_corners=False) (downsampling)")
def interpolate_bilinear_x0_5():
    return unary_case((1, 2, 8, 10), lambda x: F.interpolate(x, scale_factor=0.5, mode="bilinear",
                                                             align_corners=False))


@case("F.interpolate(input, scale_factor=1.5, mode='bicubic', align_corners=False)")
def interpolate_bicubic_x1_5():
    return unary_case((2, 2, 4, 6), lambda x: F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=False))


@case("F.interpolate(input, size=(6, 3), mode='bicubic', align_corners=True)")
def interpolate_bicubic_align_corners_size():
    return unary_case((1, 3, 4, 5), lambda x: F.interpolate(x, size=(6, 3), mode="bicubic", align_corners=True))


@case("F.interpolate(input, size=(7, 10), mode='nearest')")
def interpolate_nearest_size():
    return unary_case((1, 2, 4, 6), lambda x: F.interpolate(x, size=(7, 10), mode="nearest"))


@case("F.interpolate(input, scale_factor=0.5, mode='nearest') (downsampling)")
def interpolate_nearest_x0_5():
    return unary_case((2, 2, 6, 7), lambda x: F.interpolate(x, scale_factor=0.5, mode="nearest"))


# --- instance norm and padding ----------------------------------------------------------------------------------

@case("F.instance_norm(input, weight=weight, bias=bias, eps=1e-5) (InstanceNorm2d(affine=True) in eval mode)")
def instance_norm():
    # An offset and a spread per plane, so that a wrong mean or variance shows.
    x = randn(3, 4, 7, 9, scale=2.0) + randn(3, 4, 1, 1, scale=5.0)
    t = {"input": x, "weight": uniform(4, low=0.5, high=1.5), "bias": randn(4, scale=0.5)}
    t["output"] = F.instance_norm(f64(x), weight=f64(t["weight"]), bias=f64(t["bias"]), eps=1e-5)
    return t


@case("F.relu(F.instance_norm(input, weight=weight, bias=bias, eps=1e-3))")
def instance_norm_eps1e3_relu():
    x = randn(2, 3, 5, 4) * uniform(2, 3, 1, 1, low=0.05, high=3.0)
    t = {"input": x, "weight": uniform(3, low=0.5, high=1.5), "bias": randn(3, scale=0.5)}
    t["output"] = F.relu(F.instance_norm(f64(x), weight=f64(t["weight"]), bias=f64(t["bias"]), eps=1e-3))
    return t


@case("F.pad(input, (1, 2, 3, 0), mode='constant', value=0.5) (left, right, top, bottom)")
def pad_constant():
    return unary_case((2, 3, 5, 6), lambda x: F.pad(x, (1, 2, 3, 0), mode="constant", value=0.5))


@case("F.pad(input, (2, 1, 0, 3), mode='reflect')")
def pad_reflect():
    return unary_case((3, 2, 5, 4), lambda x: F.pad(x, (2, 1, 0, 3), mode="reflect"))


@case("F.pad(input, (4, 4, 4, 4), mode='reflect') (style transfer's first layer, ReflectionPad2d(4))")
def pad_reflect_4():
    return unary_case((1, 3, 9, 7), lambda x: F.pad(x, (4, 4, 4, 4), mode="reflect"))


@case("F.pad(input, (3, 0, 1, 2), mode='replicate')")
def pad_replicate():
    return unary_case((2, 2, 4, 3), lambda x: F.pad(x, (3, 0, 1, 2), mode="replicate"))


# --- arithmetic on tensors of any rank -------------------------------------------------------------------------
# corgy stores a tensor of rank r in a 4-D Variable (corgy/tensor_dims.h): rank 3 (N, C, L) as (N, C, 1, L), rank 2
# (N, F) as (N, F, 1, 1), ranks 5 and 6 with their leading axes after the batch folded into the channels. These cases
# compute in their own rank and save input and output reshaped to that 4-D shape (the memory is the same).

def folded(tensor):
    """The tensor reshaped to the 4-D shape corgy stores it in."""
    s = tuple(tensor.shape)
    if len(s) == 2:
        return tensor.reshape(s[0], s[1], 1, 1)
    if len(s) == 3:
        return tensor.reshape(s[0], s[1], 1, s[2])
    if len(s) > 4:
        return tensor.reshape(s[0], -1, s[-2], s[-1])
    return tensor


def tensor_case(x, function, **parameters):
    """input x (any rank), parameters (saved as they are), output = function(x, parameters) in float64."""
    y = function(f64(x), {k: f64(v) for k, v in parameters.items()})
    return {"input": folded(x), **parameters, "output": folded(y)}


@case("input (2, 3, 4, 5, 6) + b (3, 1, 5, 1)")
def broadcast_add_rank5():
    return tensor_case(randn(2, 3, 4, 5, 6), lambda x, p: x + p["b"], b=randn(3, 1, 5, 1))


@case("torch.pow(input (3, 7, 11), exponent (7, 1)), input = |randn| + 0.1")
def broadcast_pow_rank3():
    x = randn(3, 7, 11).abs() + 0.1
    return tensor_case(x, lambda x, p: torch.pow(x, p["exponent"]), exponent=uniform(7, 1, low=0.5, high=3.0))


@case("c (2, 1, 5) / input (2, 2, 3, 2, 3, 5), input uniform in [0.5, 2]")
def broadcast_div_constant_first_rank6():
    x = uniform(2, 2, 3, 2, 3, 5, low=0.5, high=2.0)
    return tensor_case(x, lambda x, p: p["c"] / x, c=randn(2, 1, 5))


@case("torch.erf(input (3, 7, 11))")
def erf_rank3():
    return tensor_case(randn(3, 7, 11, scale=1.5), lambda x, p: torch.erf(x))


@case("input (2, 3, 4, 5, 6).mean(dim=2, keepdim=True)")
def reduce_mean_axis2_rank5():
    return tensor_case(randn(2, 3, 4, 5, 6), lambda x, p: x.mean(dim=2, keepdim=True))


@case("input (3, 7, 11).amax(dim=1)")
def reduce_max_axis1_rank3():
    return tensor_case(randn(3, 7, 11), lambda x, p: x.amax(dim=1))


@case("F.softmax(input (2, 3, 4, 5), dim=2)")
def softmax_axis2():
    return tensor_case(randn(2, 3, 4, 5, scale=3.0), lambda x, p: F.softmax(x, dim=2))


@case("F.log_softmax(input (2, 3, 4, 5, 6), dim=-1)")
def log_softmax_last_rank5():
    return tensor_case(randn(2, 3, 4, 5, 6, scale=3.0), lambda x, p: F.log_softmax(x, dim=-1))


@case("torch.matmul(input (2, 3, 5, 5), input.mean(dim=1, keepdim=True))")
def batched_matmul_broadcast():
    return tensor_case(randn(2, 3, 5, 5), lambda x, p: torch.matmul(x, x.mean(dim=1, keepdim=True)))


@case("F.linear(input (2, 5, 5, 8), weight (6, 8), bias (6))")
def tensor_linear_rank4():
    return tensor_case(randn(2, 5, 5, 8), lambda x, p: F.linear(x, p["weight"], p["bias"]), weight=randn(6, 8, scale=0.4),
                       bias=randn(6, scale=0.5))


@case("F.gelu(input (3, 7, 11)) and F.gelu(input, approximate='tanh') concatenated along dim 1")
def gelu_exact_and_tanh_rank3():
    return tensor_case(randn(3, 7, 11, scale=2.0),
                       lambda x, p: torch.cat([F.gelu(x), F.gelu(x, approximate="tanh")], dim=1))


@case("F.layer_norm(input (2, 3, 5, 6), (6,), weight (6), bias (6), eps=1e-5)")
def layer_norm_last_axis():
    return tensor_case(randn(2, 3, 5, 6, scale=2.0), lambda x, p: F.layer_norm(x, (6,), p["weight"], p["bias"], 1e-5),
                       weight=uniform(6, low=0.5, high=1.5), bias=randn(6, scale=0.5))


@case("ConvNeXt's channels-first LayerNorm of input (2, 5, 4, 3): (x - u) / sqrt(s + 1e-6) * weight[:, None, None] + "
      "bias[:, None, None], u and s the mean and biased variance over dim 1")
def layer_norm_channels_first():
    def norm(x, p):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        return (x - u) / torch.sqrt(s + 1e-6) * p["weight"][:, None, None] + p["bias"][:, None, None]
    return tensor_case(randn(2, 5, 4, 3, scale=2.0), norm, weight=uniform(5, low=0.5, high=1.5), bias=randn(5, scale=0.5))


# --- data movement of tensors of rank 1 to 6 (Transpose, TensorSlice, TensorConcat, Expand, Reshape) ---------
# corgy's .npy reader takes 1-D to 4-D arrays: a 5-D or 6-D tensor is saved with its middle axes folded into one
# ((N, a, b, H, W) as (N, a * b, H, W), the memory unchanged; save() does it), as corgy stores it.

@case("input.permute(0, 2, 3, 1) (NCHW to NHWC, as ConvNeXt does)")
def permute_0231():
    return unary_case((2, 6, 5, 7), lambda x: x.permute(0, 2, 3, 1))


@case("input.permute(0, 3, 1, 4, 2) of a 5-D tensor")
def permute_5d():
    return unary_case((2, 3, 4, 5, 6), lambda x: x.permute(0, 3, 1, 4, 2))


@case("input.view(2, 4, 16, 9).transpose(1, 2) (YOLOv8's DFL: (N, 64, A) as (N, 16, 4, A))")
def view_transpose_dfl():
    return unary_case((2, 64, 9), lambda x: x.view(2, 4, 16, 9).transpose(1, 2))


@case("input.flip(1)[:, 1::2, 1::3] of a 3-D tensor (channels 4, 2, 0: a negative step)")
def slice_steps_3d():
    return unary_case((2, 6, 11), lambda x: x.flip(1)[:, 1::2, 1::3])


@case("input[:, :, 1:5].flip(4) of a 5-D tensor (axis 4 reversed)")
def slice_5d():
    return unary_case((2, 3, 6, 4, 5), lambda x: x[:, :, 1:5].flip(4))


@case("torch.cat([input, input[:, :, 3:8]], dim=2) of a 3-D tensor")
def cat_axis2_3d():
    return unary_case((2, 5, 12), lambda x: torch.cat([x, x[:, :, 3:8]], dim=2))


@case("torch.cat([input, input.flip(3)], dim=3)")
def cat_axis3():
    return unary_case((3, 4, 6, 5), lambda x: torch.cat([x, x.flip(3)], dim=3))


@case("input.expand(2, 3, 4, 5) of (2, 3, 1, 5)")
def expand_4d():
    return unary_case((2, 3, 1, 5), lambda x: x.expand(2, 3, 4, 5))


@case("input.expand(2, 6, 7) of (2, 1, 7)")
def expand_3d():
    return unary_case((2, 1, 7), lambda x: x.expand(2, 6, 7))


# --- a small network mixing the layers above --------------------------------------------------------------------

class SmallNet(torch.nn.Module):
    """conv+bn+leaky -> maxpool -> conv+swish -> concat(route) -> 1x1 conv+leaky -> upsample -> add(shortcut)
    -> 3x3/2 conv+mish -> global avgpool -> flatten -> linear -> softmax."""

    def __init__(self):
        super().__init__()
        self.conv0 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn0 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.conv4 = torch.nn.Conv2d(24, 8, 1)
        self.conv7 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x0 = F.leaky_relu(self.bn0(self.conv0(x)), 0.1)
        x1 = F.max_pool2d(x0, 2, 2)
        x2 = F.silu(self.conv2(x1))
        x3 = torch.cat([x2, x1], dim=1)
        x4 = F.leaky_relu(self.conv4(x3), 0.1)
        x5 = F.interpolate(x4, scale_factor=2, mode="nearest")
        x6 = x5 + x0
        x7 = F.mish(self.conv7(x6))
        x8 = F.adaptive_avg_pool2d(x7, 1)
        logits = self.fc(torch.flatten(x8, 1))
        return logits, F.softmax(logits, dim=1)


@case("SmallNet in tools/make_fixtures.py, eval mode; files are its state_dict entries (without "
      "num_batches_tracked), 'logits' the linear layer's output and 'output' the softmax")
def net():
    model = SmallNet()
    with torch.no_grad():
        model.bn0.weight.copy_(uniform(8, low=0.5, high=1.5))
        model.bn0.bias.copy_(randn(8, scale=0.5))
        model.bn0.running_mean.copy_(randn(8, scale=0.5))
        model.bn0.running_var.copy_(uniform(8, low=0.5, high=2.0))
    model.eval()
    x = randn(2, 3, 16, 16)
    t = {"input": x}
    t.update({name.replace(".", "_"): value.detach().clone() for name, value in model.state_dict().items()
              if not name.endswith("num_batches_tracked")})
    with torch.no_grad():
        t["logits"], t["output"] = model.double()(f64(x))
    return t


# --- writing ---------------------------------------------------------------------------------------------------

def save(path, tensor):
    array = np.ascontiguousarray(tensor.detach().numpy().astype(np.float32))
    if array.ndim > 4:  # corgy's fold of a 5-D or 6-D tensor: the axes between the batch and the last two as one
        array = array.reshape(array.shape[0], -1, *array.shape[-2:])
    np.save(path, array)


def write_cases():
    manifest = {}
    for name, (description, function) in CASES.items():
        torch.manual_seed(zlib.crc32(name.encode()))
        with torch.no_grad():
            tensors = function()
        directory = FIXTURES / name
        directory.mkdir(parents=True)
        for file, tensor in tensors.items():
            save(directory / f"{file}.npy", tensor)
        manifest[name] = {
            "pytorch": description,
            "files": {f"{file}.npy": str(tuple(tensor.shape)) for file, tensor in tensors.items()},
        }
    with open(FIXTURES / "cases.json", "w") as out:
        json.dump(manifest, out, indent=1)
        out.write("\n")


def write_npy_reader_files():
    """Files written by numpy for tests/npy_test.cpp. Element i (in C order) of every float32 file is
    i * 0.25 - 1, so the test can check each element's position."""
    directory = FIXTURES / "npy"
    directory.mkdir(parents=True)

    def ramp(*shape):
        return (np.arange(int(np.prod(shape)), dtype=np.float32) * 0.25 - 1).reshape(shape)

    np.save(directory / "vector_5.npy", ramp(5))
    np.save(directory / "matrix_2x3.npy", ramp(2, 3))
    np.save(directory / "tensor_2x3x4.npy", ramp(2, 3, 4))
    np.save(directory / "tensor_2x3x4x5.npy", ramp(2, 3, 4, 5))
    with open(directory / "version2_3x4.npy", "wb") as out:
        np.lib.format.write_array(out, ramp(3, 4), version=(2, 0))
    np.save(directory / "float64_2x3.npy", ramp(2, 3).astype(np.float64))
    np.save(directory / "fortran_2x3.npy", np.asfortranarray(ramp(2, 3)))
    np.save(directory / "big_endian_2x3.npy", ramp(2, 3).astype(">f4"))
    np.save(directory / "five_d.npy", ramp(1, 2, 1, 2, 2))
    np.save(directory / "scalar.npy", np.float32(1.5))
    np.save(directory / "empty.npy", np.zeros((0, 3), dtype=np.float32))


def main():
    for stale in [p for p in FIXTURES.iterdir() if p.is_dir()] if FIXTURES.exists() else []:
        shutil.rmtree(stale)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    write_cases()
    write_npy_reader_files()
    total = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())
    print(f"wrote {len(CASES)} cases and the .npy reader files to {FIXTURES} ({total / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
