"""Networks built layer by layer from Python, with weights from numpy, against PyTorch computed in the test (when
torch is installed) and against a numpy reference that needs nothing."""

import math

import numpy as np
import pytest

import corgy


def numpy_conv2d(x, w, b, stride=1, padding=0):
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho, wo = (h + 2 * padding - k) // stride + 1, (wd + 2 * padding - k) // stride + 1
    y = np.zeros((n, o, ho, wo), np.float64)
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return y + b[None, :, None, None]


def build(backend):
    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((6, 3, 3, 3)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(6).astype(np.float32)
    w2 = rng.standard_normal((4, 6 * 5 * 5)).astype(np.float32) * 0.1
    b2 = rng.standard_normal(4).astype(np.float32)
    model = corgy.Sequential()
    conv = corgy.Conv2d(3, 6, kernel=3, padding=1, activation="relu")
    conv.set_weights(w1)
    conv.set_bias(b1)
    assert model.add(conv) == 0
    model.add(corgy.MaxPool2d(2))
    linear = corgy.Linear(6 * 5 * 5, 4)
    model.add(corgy.Flatten())
    model.add(linear)
    linear.set_weights(w2)  # after add: reaches the layer in the model
    linear.set_bias(b2)
    model.add(corgy.Softmax())
    model.set_backend(backend)
    return model, (w1, b1, w2, b2), (conv, linear)


def reference(x, w1, b1, w2, b2):
    y = np.maximum(numpy_conv2d(x.astype(np.float64), w1, b1, padding=1), 0)
    y = y.reshape(y.shape[0], 6, 5, 2, 5, 2).max(axis=(3, 5))
    logits = y.reshape(y.shape[0], -1) @ w2.T + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_built_network_matches_numpy(backend):
    model, weights, _ = build(backend)
    x = np.random.default_rng(1).standard_normal((3, 3, 10, 10)).astype(np.float32)
    y = model(x)
    assert y.shape == (3, 4, 1, 1)
    np.testing.assert_allclose(y.reshape(3, 4), reference(x, *weights), atol=1e-5)
    assert len(model) == 5
    assert "conv2d" in model.summary((1, 3, 10, 10))
    assert model.flops((1, 3, 10, 10)) > 0


def test_weights_changed_after_a_forward_take_effect():
    model, weights, (conv, linear) = build("blas")
    x = np.random.default_rng(2).standard_normal((1, 3, 10, 10)).astype(np.float32)
    model(x)
    w1 = weights[0] * -1
    conv.set_weights(w1)
    np.testing.assert_allclose(model(x).reshape(1, 4), reference(x, w1, *weights[1:]), atol=1e-5)
    np.testing.assert_array_equal(conv.weights, w1)
    assert conv.index == 0 and linear.index == 3


def test_matches_pytorch_layers():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                              torch.nn.Conv2d(8, 8, 3, padding=1, groups=8), torch.nn.AvgPool2d(2),
                              torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 5)).eval()
    with torch.no_grad():
        net[1].running_mean.uniform_(-1, 1)
        net[1].running_var.uniform_(0.5, 2)
    model = corgy.Sequential()
    c1 = corgy.Conv2d(3, 8, kernel=3, stride=2, padding=1)
    c1.set_weights(net[0].weight.detach().numpy())
    c1.set_bias(net[0].bias.detach().numpy())
    bn = corgy.BatchNorm2d(8)
    bn.set_parameters(net[1].weight.detach().numpy(), net[1].bias.detach().numpy(), net[1].running_mean.numpy(),
                      net[1].running_var.numpy(), net[1].eps)
    dw = corgy.Conv2d(8, 8, kernel=3, padding=1, groups=8)
    dw.set_weights(net[3].weight.detach().numpy())
    dw.set_bias(net[3].bias.detach().numpy())
    fc = corgy.Linear(128, 5)
    fc.set_weights(net[6].weight.detach().numpy())
    fc.set_bias(net[6].bias.detach().numpy())
    for layer in [c1, bn, corgy.ReLU(), dw, corgy.AvgPool2d(2), corgy.Flatten(), fc]:
        model.add(layer)
    model.set_backend("blas")
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        expected = net(x).numpy()
    np.testing.assert_allclose(model(x.numpy()).reshape(2, 5), expected, atol=1e-4, rtol=1e-4)


def test_branches_add_and_concat():
    model = corgy.Sequential()
    a = model.add(corgy.ReLU(), [corgy.Sequential.model_input])
    b = model.add(corgy.Sigmoid(), [corgy.Sequential.model_input])
    s = model.add(corgy.Add(activation="tanh"), [a, b])
    model.add(corgy.Concat(), [s, a])
    x = np.linspace(-2, 2, 2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)
    y = model(x)
    expected_sum = np.tanh(np.maximum(x, 0) + 1 / (1 + np.exp(-x)))
    np.testing.assert_allclose(y, np.concatenate([expected_sum, np.maximum(x, 0)], axis=1), atol=1e-6)


def test_layer_errors():
    with pytest.raises(corgy.Error):
        corgy.Conv2d(3, 8, kernel=0)
    conv = corgy.Conv2d(3, 8, kernel=3)
    with pytest.raises(ValueError, match=r"expected shape \(8, 3, 3, 3\), got \(8, 3, 3\)"):
        conv.set_weights(np.zeros((8, 3, 3), np.float32))
    with pytest.raises(ValueError, match="unknown activation 'softsign'"):
        corgy.Conv2d(3, 8, activation="softsign")
    with pytest.raises(ValueError, match="padding_mode"):
        corgy.Conv2d(3, 8, padding_mode="circular")
    model = corgy.Sequential()
    model.add(conv)
    with pytest.raises(corgy.Error, match="already layer 0"):
        model.add(conv)
    add = corgy.Add()
    with pytest.raises(corgy.Error):
        model.add(add, [0, 5])
    with pytest.raises(corgy.Error, match="refused"):
        model.add(add)
    x = np.zeros((1, 4, 8, 8), np.float32)
    with pytest.raises(corgy.Error, match="conv2d"):
        model(x)
    assert corgy.Activation.leaky_relu(0.2) == corgy.Activation.leaky_relu(0.2)


def test_remaining_layers_against_numpy(backend):
    x = np.linspace(-3, 3, 2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    cases = [
        (corgy.LeakyReLU(0.2), np.where(x > 0, x, 0.2 * x)),
        (corgy.Tanh(), np.tanh(x)),
        (corgy.ActivationLayer(corgy.Activation.clipped_relu(1.5)), np.clip(x, 0, 1.5)),
        (corgy.ActivationLayer("hard_swish"), x * np.clip(x / 6 + 0.5, 0, 1)),
        (corgy.ActivationLayer("gelu"), x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) / 2),
        (corgy.GlobalAvgPool2d(), x.mean(axis=(2, 3), keepdims=True)),
        (corgy.Upsample(2), x.repeat(2, axis=2).repeat(2, axis=3)),
        (corgy.AvgPool2d(2), x.reshape(2, 3, 2, 2, 2, 2).mean(axis=(3, 5))),
        (corgy.ChannelSlice(1, 3), x[:, 1:3]),
        (corgy.ChannelSlice(0, 3, 2), x[:, 0:3:2]),
    ]
    for layer, expected in cases:
        model = corgy.Sequential()
        model.add(layer)
        model.set_backend(backend)
        np.testing.assert_allclose(model(x), expected, atol=1e-5, err_msg=repr(layer))


def test_channel_shuffle_against_numpy(backend):
    # ShuffleNet's reshape (N, g, C/g, H, W) -> transpose (0, 2, 1, 3, 4) -> reshape back, in numpy.
    x = np.random.default_rng(5).standard_normal((2, 12, 3, 5)).astype(np.float32)
    for groups in (2, 3, 4):
        model = corgy.Sequential()
        model.add(corgy.ChannelShuffle(groups))
        model.set_backend(backend)
        expected = x.reshape(2, groups, 12 // groups, 3, 5).transpose(0, 2, 1, 3, 4).reshape(2, 12, 3, 5)
        np.testing.assert_array_equal(model(x), expected)
    model = corgy.Sequential()
    model.add(corgy.ChannelShuffle(5))
    with pytest.raises(corgy.Error, match="multiple of 5 groups"):
        model(x)
    with pytest.raises(corgy.Error, match="channel_slice"):
        corgy.ChannelSlice(3, 1)


def test_mark_output_and_profile():
    model, _, _ = build("blas")
    model.mark_output(0)
    x = np.random.default_rng(3).standard_normal((1, 3, 10, 10)).astype(np.float32)
    model(x)
    assert model.output(0).shape == (1, 6, 10, 10)
    assert (model.output(0, copy=True) >= 0).all()  # the fused ReLU
    rows = model.profile(x, repeat=3)
    assert rows and {"layer", "description", "algorithm", "median_ms", "gflops"} <= set(rows[0])
    assert all(row["median_ms"] >= 0 for row in rows)
    with pytest.raises(ValueError, match="repeat"):
        model.profile(x, repeat=0)


def test_set_backend_names():
    model, _, _ = build("naive")
    assert model.backend == "naive"
    model.set_backend("blas", 1)
    assert model.backend.startswith("blas")
    if "vulkan" in corgy.backends():
        try:
            model.set_backend("vulkan+fp16")  # fp16 where the device has 16-bit storage, else fp32
        except corgy.Error as error:  # no Vulkan device here
            assert "vulkan" in str(error).lower()
        else:
            assert model(np.zeros((1, 3, 10, 10), np.float32)).shape == (1, 4, 1, 1)
