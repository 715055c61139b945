"""Arrays in and out: zero copy (corgy.empty), the output-lifetime contract, DLPack with PyTorch, and bad inputs that
must raise, never crash."""

import gc

import numpy as np
import pytest

import corgy
from conftest import BACKENDS, DATA, FIXTURES


@pytest.fixture
def mnist():
    return corgy.load_mnist(str(DATA / "mnist"), backend="blas")


def test_empty_is_page_aligned_and_read_without_a_copy(backend):
    model = corgy.load_mnist(str(DATA / "mnist"), backend=backend)
    x = corgy.empty((2, 1, 28, 28))
    assert x.dtype == np.float32 and x.shape == (2, 1, 28, 28) and not x.any()
    assert x.ctypes.data % 4096 == 0
    digits = np.load(FIXTURES / "mnist" / "input.npy")[:2]
    x[...] = digits
    expected = model(digits, copy=True)
    np.testing.assert_array_equal(model(x), expected)
    # The forward read x's memory where it lies: a change made in place after the forward shows in the next one.
    x[0] = digits[1]
    y = model(x)
    np.testing.assert_array_equal(y[0], expected[1])


def test_zero_copy_input_is_the_variable_the_backend_reads():
    # A network whose output is a view of its input (Flatten) shows which memory the forward read: the output of
    # a corgy.empty input lies in the input's own pages, any other input is copied first.
    model = corgy.Sequential()
    model.add(corgy.Flatten())
    x = corgy.empty((1, 2, 3, 4))
    x[...] = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    y = model(x)
    assert y.ctypes.data == x.ctypes.data
    np.testing.assert_array_equal(y.ravel(), x.ravel())
    copied = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    assert model(copied).ctypes.data != copied.ctypes.data


def test_load_image_is_a_zero_copy_input():
    image = corgy.load_image(str(DATA / "face_api" / "sample1.png"))
    model = corgy.Sequential()
    model.add(corgy.Flatten())
    assert model(image).ctypes.data == image.ctypes.data


def test_outputs_are_views_until_the_next_forward(mnist):
    digits = np.load(FIXTURES / "mnist" / "input.npy")
    first = mnist(digits[:1])
    first_copy = mnist(digits[:1], copy=True)
    saved = first.copy()
    second = mnist(digits[1:2])
    # The view shows the newest forward (documented), the copy keeps its values.
    assert second.ctypes.data == first.ctypes.data
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first_copy, saved)
    # The view's memory outlives a replanned model and the model itself.
    mnist(digits[:5])
    mnist.close()
    del mnist
    gc.collect()
    assert np.isfinite(first).all()


def test_dlpack_round_trip_with_torch():
    torch = pytest.importorskip("torch")
    model = corgy.load_onnx(str(FIXTURES / "onnx" / "resnet18_opset17" / "model.onnx"), backend="blas")
    x = torch.from_numpy(np.load(FIXTURES / "onnx" / "resnet18_opset17" / "input.npy"))
    y = model(x)  # a CPU tensor in, through __dlpack__
    t = torch.from_dlpack(y)  # the output into torch without a copy
    assert t.data_ptr() == y.ctypes.data
    assert tuple(t.shape) == y.shape
    np.testing.assert_array_equal(t.numpy(), y)
    expected = np.load(FIXTURES / "onnx" / "resnet18_opset17" / "output_0.npy")
    assert np.abs(t.numpy() - expected).max() <= 1e-4 * np.abs(expected).max()
    # An input made by corgy.empty, filled through torch, and read by corgy without a copy.
    x_corgy = corgy.empty(tuple(x.shape))
    torch.from_dlpack(x_corgy).copy_(x)
    np.testing.assert_array_equal(model(x_corgy, copy=True), model(x.numpy(), copy=True))
    assert np.from_dlpack(y).ctypes.data == y.ctypes.data


def test_objects_with_array_interface_are_accepted(mnist):
    digits = np.load(FIXTURES / "mnist" / "input.npy")[:1]

    class Wrapped:
        def __array__(self, dtype=None):
            return digits

    np.testing.assert_array_equal(mnist(Wrapped(), copy=True), mnist(digits, copy=True))


@pytest.mark.parametrize("bad, error, message", [
    (np.zeros((1, 1, 28, 28), np.float64), TypeError, "expected float32, got float64"),
    (np.zeros((1, 1, 28, 28), np.int32), TypeError, "expected float32"),
    (np.zeros((1, 28, 28), np.float32), ValueError, "rank 4"),
    (np.zeros((1, 1, 28, 56), np.float32)[:, :, :, ::2], ValueError, "not C-contiguous"),
    (np.full((1, 1, 28, 28), np.nan, np.float32), ValueError, "NaN"),
    (np.zeros((1, 1, 0, 28), np.float32), ValueError, "zero"),
    (np.zeros((1, 3, 28, 28), np.float32), corgy.Error, "28"),
    ("not an array", TypeError, "float32 numpy array"),
])
def test_bad_inputs_raise(mnist, bad, error, message):
    with pytest.raises(error, match=message):
        mnist(bad)
    # The model still works afterwards.
    assert mnist(np.zeros((1, 1, 28, 28), np.float32)).shape == (1, 10, 1, 1)


def test_infinity_raises_unless_allowed(mnist):
    x = np.zeros((1, 1, 28, 28), np.float32)
    x[0, 0, 3, 4] = np.inf
    with pytest.raises(ValueError, match="element 88 .* infinite"):
        mnist(x)
    assert mnist(x, check_finite=False).shape == (1, 10, 1, 1)


def test_closed_model_raises(mnist):
    with mnist as model:
        model(np.zeros((1, 1, 28, 28), np.float32))
    assert mnist.closed
    with pytest.raises(corgy.Error, match="closed"):
        mnist(np.zeros((1, 1, 28, 28), np.float32))
    with pytest.raises(corgy.Error, match="closed"):
        mnist.set_backend("naive")
    assert "closed" in repr(mnist)
    mnist.close()  # twice is fine


def test_errors_carry_the_cpp_message():
    with pytest.raises(corgy.Error, match="no_such.onnx"):
        corgy.load_onnx("no_such.onnx")
    with pytest.raises(corgy.Error, match="unknown"):
        corgy.load_mnist(str(DATA / "mnist"), backend="no-such-backend")
    assert issubclass(corgy.Error, RuntimeError)


def test_load_npy_and_save_png(tmp_path):
    x = corgy.load_npy(str(FIXTURES / "mnist" / "input.npy"))
    np.testing.assert_array_equal(x, np.load(FIXTURES / "mnist" / "input.npy"))
    corgy.save_png(str(tmp_path / "digit.png"), np.ascontiguousarray(x[:1]))
    np.testing.assert_allclose(corgy.load_image(str(tmp_path / "digit.png"), channels=1), x[:1], atol=0.5 / 255)


def test_backends_and_devices():
    assert corgy.backends()[-2:] == ["blas", "naive"]
    for device in (corgy.vulkan_devices() if "vulkan" in BACKENDS else []):
        assert {"index", "name", "type", "driver", "api_version", "host_import"} <= set(device)


@pytest.mark.parametrize("index", [0, 31, 32, 4095, 4096, 7487, 7499])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_every_position_of_a_non_finite_value_is_found(index, value):
    # The scan works in blocks of 4096 floats and lanes of 32, with a scalar tail: positions at their edges.
    model = corgy.Sequential()
    model.add(corgy.Flatten())
    x = np.full((1, 3, 50, 50), 3.0e38, np.float32)  # large but finite everywhere else
    x.reshape(-1)[index] = value
    with pytest.raises(ValueError, match=f"element {index} "):
        model(x)
    x.reshape(-1)[index] = -1.0e-45  # a negative denormal is finite
    assert model(x).shape == (1, 7500, 1, 1)


def test_unaligned_arrays_are_read_correctly(mnist):
    # An array at an odd byte offset (np.frombuffer, or unpickled from a message as Dask's are) is legal numpy but
    # cannot be read as floats in place: corgy copies it into an aligned one.
    digits = np.load(FIXTURES / "mnist" / "input.npy")[:2]
    raw = bytearray(digits.nbytes + 1)
    unaligned = np.frombuffer(raw, dtype=np.float32, offset=1, count=digits.size).reshape(digits.shape)
    unaligned[...] = digits
    assert unaligned.ctypes.data % 4 != 0
    np.testing.assert_array_equal(mnist(unaligned, copy=True), mnist(digits, copy=True))
    conv = corgy.Conv2d(1, 1, kernel=1)
    weights = np.frombuffer(bytearray(5), dtype=np.float32, offset=1, count=1).reshape(1, 1, 1, 1)
    conv.set_weights(weights)
