"""Every loader of the Python API against independent references (ONNX Runtime's outputs committed with the ONNX
fixtures, darknet's, face-api's) and against the C++ API (corgy-run), on every backend."""

import json

import numpy as np
import pytest

import corgy
from conftest import DATA, FIXTURES, REPOSITORY, max_relative_error, run_cpp

ONNX_MODELS = ["resnet18_opset17", "mobilenet_v2_opset17", "squeezenet1_1_opset17", "op_mobile_blocks"]


@pytest.mark.parametrize("name", ONNX_MODELS)
def test_onnx_matches_onnx_runtime(name, backend):
    folder = FIXTURES / "onnx" / name
    declared = json.loads((folder / "outputs.json").read_text())["outputs"]
    x = np.load(folder / "input.npy")
    with corgy.load_onnx(str(folder / "model.onnx"), backend=backend) as model:
        assert model.backend == backend
        y = model(x)
        # The first output, with the rank the graph declares.
        assert y.shape == tuple(declared[0]["shape"])
        assert max_relative_error(y, np.load(folder / "output_0.npy")) <= 1e-4
        outputs = model.outputs()
        assert list(outputs) == [o["name"] for o in declared] == model.output_names
        for k, o in enumerate(declared):
            assert outputs[o["name"]].shape == tuple(o["shape"])
            assert max_relative_error(outputs[o["name"]], np.load(folder / f"output_{k}.npy")) <= 1e-4


def test_onnx_equals_cpp_api(corgy_run, tmp_path):
    folder = FIXTURES / "onnx" / "resnet18_opset17"
    expected = run_cpp(corgy_run, ["--onnx", str(folder / "model.onnx"), "--input", str(folder / "input.npy"),
                                   "--backend", "blas"], tmp_path)
    model = corgy.load_onnx(str(folder / "model.onnx"), backend="blas")
    y = model(np.load(folder / "input.npy"))
    # Both in the graph's declared 2-D shape (N, classes), not corgy's 4-D (N, classes, 1, 1).
    assert y.shape == expected[0].shape and y.ndim == 2
    # Equal up to rounding: blas tunes its algorithms per process (plan-time timing), so two processes may sum in
    # another order.
    assert max_relative_error(y, expected[0]) <= 1e-6


def test_onnx_model_information():
    model = corgy.load_onnx(str(FIXTURES / "onnx" / "resnet18_opset17" / "model.onnx"), backend="naive")
    assert model.opset == 17
    assert model.input_name == "input"
    assert model.input_dims[1:] == [3, 64, 64] or len(model.input_dims) == 4
    assert model.input_shape(3)[0] == 3
    assert "conv2d" in model.summary()
    assert model.flops() > 0
    assert "ONNX model" in repr(model)


def test_darknet_equals_cpp_api(corgy_run, tmp_path, fast_backend):
    cfg = str(DATA / "darknet" / "yolov2-tiny-voc.cfg")
    image = corgy.load_image(str(FIXTURES / "darknet" / "photo.png"))
    x = np.load(FIXTURES / "darknet" / "photo.letterbox.npy")
    expected = run_cpp(corgy_run, ["--cfg", cfg, "--random-weights", "7", "--input", str(FIXTURES / "darknet" / "photo.letterbox.npy"),
                                   "--backend", "blas"], tmp_path)
    model = corgy.load_darknet(cfg, random_weights_seed=7, backend=fast_backend)
    assert model.input_shape() == (1, 3, 416, 416)
    heads = model(x)
    assert len(heads) == len(expected) == 1
    assert max_relative_error(heads[0], expected[0]) <= 1e-4
    boxes = model.detect(image, threshold=0.2, names=corgy.read_darknet_names(str(DATA / "darknet" / "voc.names")))
    for box in boxes:
        assert 0 <= box["class_id"] < 20 and box["label"]
        assert box["left"] <= box["right"] and box["top"] <= box["bottom"]


def test_darknet_needs_weights_or_a_seed():
    cfg = str(DATA / "darknet" / "yolov2-tiny-voc.cfg")
    with pytest.raises(ValueError, match="either weights"):
        corgy.load_darknet(cfg)
    with pytest.raises(corgy.Error, match="missing.weights"):
        corgy.load_darknet(cfg, str(DATA / "darknet" / "missing.weights"))


def test_mnist_classifies_the_sample_digits(backend):
    model = corgy.load_mnist(str(DATA / "mnist"), backend=backend)
    for path, label in [("digit_0_label_6.png", 6), ("digit_1_label_5.pgm", 5)]:
        digit = corgy.load_mnist_digit(str(DATA / "mnist" / "samples" / path))
        assert digit.shape == (1, 1, 28, 28)
        probabilities = model(digit)
        assert probabilities.shape == (1, 10, 1, 1)
        assert int(probabilities.argmax()) == label
        assert abs(float(probabilities.sum()) - 1) < 1e-5


def test_mnist_equals_cpp_api(corgy_run, tmp_path):
    digits = np.load(FIXTURES / "mnist" / "input.npy")
    expected = run_cpp(corgy_run, ["--mnist", str(DATA / "mnist"), "--input", str(FIXTURES / "mnist" / "input.npy"),
                                   "--backend", "blas"], tmp_path)
    model = corgy.load_mnist(str(DATA / "mnist"), backend="blas")
    model(digits)
    # corgy-run writes MNIST's logits (the layer before the softmax).
    logits = model.output(len(model) - 2)
    assert max_relative_error(logits.reshape(expected[0].shape), expected[0]) <= 1e-6


def test_face_detector_finds_face_apis_faces(fast_backend):
    reference = json.loads((FIXTURES / "face_api" / "tiny_face_detector.json").read_text())
    model = corgy.load_face_detector(str(DATA / "face_api" / "tiny_face_detector_model-weights_manifest.json"),
                                     backend=fast_backend)
    for entry in reference["images"][:2]:
        image = corgy.load_image(str(REPOSITORY / entry["image"]))
        assert image.shape == (1, 3, entry["height"], entry["width"])
        for run in entry["runs"]:
            faces = model.detect(image, input_size=run["input_size"], score_threshold=run["score_threshold"])
            assert len(faces) == len(run["faces"])
            for face, expected in zip(faces, run["faces"]):
                assert face["left"] == pytest.approx(expected["x"], abs=0.05)
                assert face["top"] == pytest.approx(expected["y"], abs=0.05)
                assert face["right"] == pytest.approx(expected["x"] + expected["width"], abs=0.05)
                assert face["probability"] == pytest.approx(expected["score"], abs=1e-4)


def test_style_transfer_renders_every_style():
    model = corgy.load_style_transfer(str(DATA / "style_transfer" / "weights"), backend="blas")
    assert len(model.style_names) == len(model.style) >= 2
    image = np.ascontiguousarray(corgy.load_image(str(DATA / "style_transfer" / "dog.png"))[:, :, :64, :64])
    first = model(image, copy=True)
    assert first.shape == (1, 3, 64, 64) and 0 < first.min() and first.max() < 1
    model.style = [0.0, 1.0] + [0.0] * (len(model.style) - 2)
    assert not np.array_equal(model(image), first)
    with pytest.raises(corgy.Error):
        model.style = [float("nan")] * len(model.style)
