"""YOLOv8 detection from Python (corgy.detect_objects_yolov8) and from corgy-run --boxes, on the reduced YOLOv8n of
the ONNX fixtures (random weights, 3 classes, input 96 x 64) and the 96 x 72 photo: the boxes against torchvision's
batched_nms decoding of the same run's raw output (tools/yolov8_decode_reference.py, the reference of
tests/yolov8_decode_test.cpp), the binding's against corgy-run's, and the errors of both."""

import importlib.util
import re
import subprocess

import numpy as np
import pytest

import corgy
from conftest import FIXTURES, REPOSITORY
from test_corgy_run_images import CLASSIFIER, PHOTO, PHOTO_HEIGHT, PHOTO_WIDTH
from test_answers import photo_pixels

MODEL = FIXTURES / "onnx" / "yolov8n_opset13" / "model.onnx"
NET_WIDTH, NET_HEIGHT = 96, 64


def torchvision_detections(raw, image_width, image_height, score_threshold, iou_threshold):
    """tools/yolov8_decode_reference.py's detections of a raw output (1, 4 + classes, anchors): boxes (K, 4) x1, y1,
    x2, y2 in pixels of the letterboxed image, scores (K,), class ids (K,), most probable first."""
    pytest.importorskip("torchvision")
    spec = importlib.util.spec_from_file_location("yolov8_decode_reference",
                                                  REPOSITORY / "tools" / "yolov8_decode_reference.py")
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    found = reference.detections(np.asarray(raw, np.float32), NET_WIDTH, NET_HEIGHT, image_width, image_height,
                                 score_threshold, iou_threshold)
    return (np.array([[d["left"], d["top"], d["right"], d["bottom"]] for d in found]).reshape(-1, 4),
            np.array([d["score"] for d in found]), np.array([d["class"] for d in found]))


def assert_same_detections(actual, expected, box_tolerance, score_tolerance=1e-6):
    boxes, scores, class_ids = actual
    assert len(scores) == len(expected[1]) > 0
    np.testing.assert_array_equal(class_ids, expected[2])
    np.testing.assert_allclose(scores, expected[1], rtol=0, atol=score_tolerance)
    np.testing.assert_allclose(boxes, expected[0], rtol=0, atol=box_tolerance)


def test_detections_match_torchvision():
    model = corgy.load_onnx(str(MODEL), backend="naive")
    layout = corgy.yolov8_layout(model)
    assert (layout.width, layout.height, layout.classes, layout.anchors) == (NET_WIDTH, NET_HEIGHT, 3, 126)
    boxes, scores, class_ids = corgy.detect_objects_yolov8(model, PHOTO)  # Ultralytics' 0.25 and 0.7
    assert boxes.dtype == scores.dtype == np.float32 and class_ids.dtype == np.int64 and boxes.shape[1:] == (4,)
    raw = model.outputs()["output"].reshape(1, 7, 126)  # the detection's own forward, of the letterboxed photo
    assert_same_detections((boxes, scores, class_ids),
                           torchvision_detections(raw, PHOTO_WIDTH, PHOTO_HEIGHT, 0.25, 0.7), 2e-3)
    # The photo as uint8 pixels and as corgy.load_image's floats: the same boxes.
    for image in (photo_pixels(), corgy.load_image(str(PHOTO))):
        found = corgy.detect_objects_yolov8(model, image)
        for a, b in zip(found, (boxes, scores, class_ids)):
            np.testing.assert_array_equal(a, b)
    # Other thresholds, other boxes: still torchvision's.
    strict = corgy.detect_objects_yolov8(model, PHOTO, score_threshold=0.6, iou_threshold=0.3)
    assert 0 < len(strict[1]) < len(scores)
    assert_same_detections(strict, torchvision_detections(raw, PHOTO_WIDTH, PHOTO_HEIGHT, 0.6, 0.3), 2e-3)


def run_corgy(corgy_run_path, *args):
    return subprocess.run([str(corgy_run_path), *map(str, args)], capture_output=True, text=True, timeout=60)


def printed_boxes(stdout):
    """corgy-run --boxes' rows: boxes (K, 4), scores (K,), class ids (K,), labels."""
    rows = re.findall(r"^ +(\d+) +([0-9.]+) +(-?[0-9.]+) +(-?[0-9.]+) +(-?[0-9.]+) +(-?[0-9.]+)(?:  (.*))?$", stdout,
                      re.MULTILINE)
    return (np.array([[float(v) for v in row[2:6]] for row in rows]).reshape(-1, 4),
            np.array([float(row[1]) for row in rows]), np.array([int(row[0]) for row in rows]),
            [row[6] for row in rows])


def test_corgy_run_boxes_equal_torchvision_and_python(corgy_run, tmp_path):
    labels = ["first", "second", "third"]
    (tmp_path / "labels.txt").write_text("".join(label + "\n" for label in labels))
    result = run_corgy(corgy_run, "--onnx", MODEL, "--input", PHOTO, "--boxes", "--score-threshold", 0.5,
                       "--iou-threshold", 0.5, "--labels", tmp_path / "labels.txt", "--draw", tmp_path / "boxes.png",
                       "--backend", "naive", "--output", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    *printed, names = printed_boxes(result.stdout)
    assert f"{len(names)} boxes in output 'output' (1, 7, 126) of {PHOTO} (96 x 72, letterboxed to 96 x 64)" \
        in result.stdout
    assert names == [labels[c] for c in printed[2]]
    # torchvision on the raw output the same run wrote; coordinates printed to 3 decimals.
    assert_same_detections(printed, torchvision_detections(np.load(tmp_path / "out.0.npy"), PHOTO_WIDTH,
                                                           PHOTO_HEIGHT, 0.5, 0.5), 2e-3)
    # The binding: the same boxes.
    model = corgy.load_onnx(str(MODEL), backend="naive")
    assert_same_detections(printed, corgy.detect_objects_yolov8(model, PHOTO, score_threshold=0.5,
                                                                iou_threshold=0.5), 6e-4)
    # The drawing (tests/detect_draw_test.cpp checks how): the photo's size, with the boxes and labels on it.
    drawn = np.asarray(corgy.load_image(str(tmp_path / "boxes.png")))
    photo = np.asarray(corgy.load_image(str(PHOTO)))
    assert drawn.shape == photo.shape and np.abs(drawn - photo).max() > 0.5


def test_corgy_run_boxes_of_a_tensor_are_in_input_pixels(corgy_run, tmp_path):
    tensor = FIXTURES / "onnx" / "yolov8n_opset13" / "input.npy"
    result = run_corgy(corgy_run, "--onnx", MODEL, "--input", tensor, "--boxes", "--backend", "naive")
    assert result.returncode == 0, result.stderr
    assert "of the 96 x 64 input" in result.stdout
    *printed, _ = printed_boxes(result.stdout)
    # ONNX Runtime's output of that tensor, which corgy's equals within 1e-5 of its magnitude (boxes ~100 pixels).
    raw = np.load(FIXTURES / "onnx" / "yolov8n_opset13" / "output_0.npy")
    assert_same_detections(printed, torchvision_detections(raw, NET_WIDTH, NET_HEIGHT, 0.25, 0.7), 5e-3, 1e-5)


@pytest.mark.parametrize("call, error, message", [
    (lambda: corgy.detect_objects_yolov8(corgy.load_onnx(str(CLASSIFIER), backend="naive"), PHOTO), corgy.Error,
     "a YOLOv8 model's first output is (N, 4 + classes, anchors), 'output' is (1, 10)"),
    (lambda: corgy.detect_objects_yolov8(corgy.load_onnx(str(MODEL), backend="naive"), PHOTO, score_threshold=1.5),
     ValueError, "detect_objects_yolov8: score_threshold must be in [0, 1], got 1.5"),
    (lambda: corgy.detect_objects_yolov8(corgy.load_onnx(str(MODEL), backend="naive"), photo_pixels()[:, :, 0]),
     corgy.Error, "expects an RGB image (1, 3, H, W), got (1, 1, 72, 96)"),
    (lambda: corgy.detect_objects_yolov8(corgy.load_onnx(str(MODEL), backend="naive"), "no/such.png"), corgy.Error,
     "no/such.png"),
    (lambda: corgy.detect_objects_yolov8(corgy.Sequential(), PHOTO), TypeError, "OnnxModel"),
])
def test_bad_detection_arguments_are_clear_errors(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


@pytest.mark.parametrize("args, message", [
    (["--boxes", "--preset", "imagenet"], "--boxes letterboxes an image to the model's input as YOLOv8 expects"),
    (["--boxes", "--labels", FIXTURES / "darknet" / "mixed.cfg"], "class names, but output 'output' (1, 7, 126) has 3"),
    (["--labels", REPOSITORY / "data" / "darknet" / "coco.names"], "--labels names the classes of --top or --boxes"),
    (["--score-threshold", "0.5"], "--score-threshold requires --boxes"),
])
def test_bad_boxes_options_are_clear_errors(corgy_run, args, message):
    result = run_corgy(corgy_run, "--onnx", MODEL, "--input", PHOTO, *args)
    assert result.returncode == 1
    assert message in result.stderr


def test_boxes_of_another_model_and_draw_without_an_image_are_errors(corgy_run, tmp_path):
    result = run_corgy(corgy_run, "--onnx", CLASSIFIER, "--input", PHOTO, "--boxes")
    assert result.returncode == 1
    assert "a YOLOv8 model's first output is (N, 4 + classes, anchors), 'output' is (1, 10)" in result.stderr
    result = run_corgy(corgy_run, "--onnx", MODEL, "--boxes", "--draw", tmp_path / "x.png", "--backend", "naive")
    assert result.returncode == 1
    assert "--draw draws on an image --input, and the default grey input is none" in result.stderr
