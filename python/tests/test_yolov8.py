"""YOLOv8 detection from Python (corgy.detect_objects_yolov8) on the reduced YOLOv8n of the ONNX fixtures (random
weights, 3 classes, input 96 x 64) and the 96 x 72 photo: the boxes against torchvision's batched_nms decoding of the
same run's raw output (tools/yolov8_decode_reference.py, the reference of tests/yolov8_decode_test.cpp), and the
errors."""

import importlib.util
import re

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
