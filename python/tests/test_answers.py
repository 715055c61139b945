"""Photos in, answers out from Python: corgy.preprocess_image against OpenCV's outputs committed by
tools/image_preprocess_reference.py, and preprocess_image, top_classes and the class mask functions against
corgy-run's --preset/--resize/--crop, --top and --mask of the same build (and numpy); their errors."""

import json
import re
import subprocess

import numpy as np
import pytest

import corgy
from conftest import FIXTURES
from test_corgy_run_images import CLASSIFIER, PHOTO, PHOTO_HEIGHT, PHOTO_WIDTH, SEGMENTER, mask_cells, softmax

PREPROCESS_CASES = json.loads((FIXTURES / "image_preprocess" / "cases.json").read_text())["cases"]


def photo_pixels():
    """The photo's 8-bit RGB values, (H, W, 3) uint8, as a PNG decoder gives them (lossless)."""
    return np.rint(np.asarray(corgy.load_image(str(PHOTO)))[0] * 255).astype(np.uint8).transpose(1, 2, 0)


def options_of(case):
    """The reference's options (tools/image_preprocess_reference.py CASES) as a corgy.ImagePreprocess."""
    options = corgy.ImagePreprocess(scale=case.get("scale", 1 / 255), mean=case.get("mean", [0.0]),
                                    std=case.get("std", [1.0]), bgr=case.get("bgr", False))
    if "resize_shorter" in case:
        options.resize_shorter = case["resize_shorter"]
    if "resize" in case:
        options.resize_width, options.resize_height = case["resize"]
    if "crop" in case:
        options.crop_width, options.crop_height = case["crop"]
    return options


def expected_geometry(case):
    """torchvision's Resize(int) size and center_crop offset (Python's round), computed here."""
    width, height = PHOTO_WIDTH, PHOTO_HEIGHT
    if "resize_shorter" in case:
        short, long = min(width, height), max(width, height)
        scaled = int(case["resize_shorter"] * long / short)
        width, height = (case["resize_shorter"], scaled) if width <= height else (scaled, case["resize_shorter"])
    elif "resize" in case:
        width, height = case["resize"]
    crop_width, crop_height = case.get("crop", [width, height])
    return (width, height, int(round((width - crop_width) / 2.0)), int(round((height - crop_height) / 2.0)),
            crop_width, crop_height)


@pytest.mark.parametrize("name", sorted(PREPROCESS_CASES))
def test_preprocess_image_matches_opencv(name):
    case = PREPROCESS_CASES[name]
    expected = np.load(FIXTURES / "image_preprocess" / f"{name}.npy")
    tensor, geometry = corgy.preprocess_image(str(PHOTO), options_of(case))
    assert tensor.dtype == np.float32 and tensor.shape == expected.shape
    np.testing.assert_allclose(tensor, expected, rtol=0, atol=1e-5)
    assert (geometry.image_width, geometry.image_height) == (PHOTO_WIDTH, PHOTO_HEIGHT)
    assert (geometry.resized_width, geometry.resized_height, geometry.crop_x, geometry.crop_y, geometry.crop_width,
            geometry.crop_height) == expected_geometry(case)
    # The same pixels as a uint8 array: a non-contiguous view (copied) and a contiguous one, the same tensor.
    pixels = photo_pixels()
    for array in (pixels, np.ascontiguousarray(pixels)):
        np.testing.assert_array_equal(corgy.preprocess_image(array, options_of(case)).tensor, tensor)


def run(corgy_run, *args):
    result = subprocess.run([str(corgy_run), *map(str, args)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_top_classes_equal_corgy_run(corgy_run, tmp_path):
    labels = [f"class number {i}" for i in range(10)]
    (tmp_path / "labels.txt").write_text("".join(label + "\n" for label in labels))
    stdout = run(corgy_run, "--onnx", CLASSIFIER, "--input", PHOTO, "--preset", "imagenet", "--resize", 72, "--crop",
                 "61x67", "--top", 4, "--labels", tmp_path / "labels.txt", "--backend", "blas", "--output",
                 tmp_path / "out")
    options = corgy.imagenet_preprocess()
    options.resize_shorter, options.crop_width, options.crop_height = 72, 61, 67
    prepared = corgy.preprocess_image(PHOTO, options)  # a pathlib.Path
    model = corgy.load_onnx(str(CLASSIFIER), backend="blas")
    logits = model(prepared.tensor, copy=True)
    # The same tensor went in: the same output, up to blas's per-process choice of summation order.
    np.testing.assert_allclose(logits, np.load(tmp_path / "out.0.npy"), rtol=0, atol=1e-5)
    top = corgy.top_classes(logits, 4, labels=labels)
    assert top.from_logits and len(top) == 4 and top.indices.dtype == np.int64
    lines = stdout.splitlines()
    header = lines.index("  rank  index  probability  label")
    rows = [line.split(maxsplit=3) for line in lines[header + 1:header + 5]]
    assert [int(row[1]) for row in rows] == top.indices.tolist()
    np.testing.assert_allclose([float(row[2]) for row in rows], top.probabilities, rtol=0, atol=2e-6)
    assert [row[3] for row in rows] == top.labels
    # And numpy's softmax: the same classes (ties to the lower index) with the same probabilities.
    probabilities = softmax(logits[0])
    assert top.indices.tolist() == sorted(range(10), key=lambda i: (-probabilities[i], i))[:4]
    np.testing.assert_allclose(top.probabilities, probabilities[top.indices], rtol=1e-6)
    values, from_logits = corgy.class_probabilities(logits[0])
    assert from_logits and values.shape == (10,)
    np.testing.assert_allclose(values, probabilities, rtol=1e-6)
    # A distribution already is one: unchanged, and k beyond the classes gives them all.
    distribution = np.array([0.1, 0.6, 0.3], np.float32)
    top = corgy.top_classes(distribution, 7)
    assert not top.from_logits and top.indices.tolist() == [1, 2, 0] and top.labels is None
    np.testing.assert_array_equal(top.probabilities, distribution[[1, 2, 0]])


def test_class_mask_equals_corgy_run(corgy_run, tmp_path):
    run(corgy_run, "--onnx", SEGMENTER, "--input", PHOTO, "--resize", 6, "--crop", "5x6", "--mask",
        tmp_path / "cpp.png", "--backend", "blas")
    prepared = corgy.preprocess_image(str(PHOTO), corgy.ImagePreprocess(resize_shorter=6, crop_width=5, crop_height=6))
    scores = corgy.load_onnx(str(SEGMENTER), backend="blas")(prepared.tensor)
    assert scores.shape == (1, 4, 6, 5)
    cells = corgy.argmax_class_mask(scores)
    np.testing.assert_array_equal(cells, scores[0].argmax(axis=0))
    mask = corgy.class_mask_on_image(cells, prepared.geometry)
    assert mask.dtype == np.uint8 and mask.shape == (PHOTO_HEIGHT, PHOTO_WIDTH)
    # numpy's mapping of each pixel centre through the resize (8 x 6) and the crop (x = 2), void outside.
    columns, rows = mask_cells(PHOTO_WIDTH, 8, 2, 5, 5), mask_cells(PHOTO_HEIGHT, 6, 0, 6, 6)
    expected = np.where((rows[:, None] >= 0) & (columns[None, :] >= 0),
                        cells[np.maximum(rows, 0)[:, None], np.maximum(columns, 0)[None, :]], corgy.mask_void_class)
    np.testing.assert_array_equal(mask, expected)
    # The colours are corgy-run's PNG's, pixel for pixel, and save_class_mask_png writes the same.
    rgb = corgy.class_mask_rgb(mask)
    assert rgb.shape == (PHOTO_HEIGHT, PHOTO_WIDTH, 3)
    corgy.save_class_mask_png(str(tmp_path / "py.png"), mask)
    for png in ("cpp.png", "py.png"):
        written = np.rint(np.asarray(corgy.load_image(str(tmp_path / png)))[0] * 255).astype(np.uint8)
        np.testing.assert_array_equal(written.transpose(1, 2, 0), rgb)
    np.testing.assert_array_equal(rgb[0, 0], [224, 224, 192])  # left of the crop: VOC's void


SCORES = np.linspace(-1, 1, 10, dtype=np.float32)[None]
GEOMETRY = corgy.PreprocessGeometry(image_width=4, image_height=2, resized_width=4, resized_height=2, crop_x=0,
                                    crop_y=0, crop_width=4, crop_height=2)


@pytest.mark.parametrize("call, error, message", [
    (lambda: corgy.preprocess_image("no/such/photo.png"), corgy.Error, "no/such/photo.png"),
    (lambda: corgy.preprocess_image(np.zeros((4, 4, 3))), TypeError,
     "preprocess_image image: expected uint8 pixels (H, W, C) or a float32 (1, C, H, W) image, got float64"),
    (lambda: corgy.preprocess_image(np.zeros((4, 4, 5), np.uint8)), ValueError,
     "uint8 pixels are (H, W, C) with 1 to 4 channels or (H, W), got shape (4, 4, 5)"),
    (lambda: corgy.preprocess_image(np.zeros((3, 4, 4), np.float32)), ValueError, "expected an array of rank 4"),
    (lambda: corgy.preprocess_image(12), TypeError, "expected a path, a uint8 (H, W, 3) RGB array"),
    (lambda: corgy.preprocess_image(np.zeros((4, 4, 3), np.uint8), corgy.ImagePreprocess(crop_width=8, crop_height=8)),
     corgy.Error, "cannot crop 8 x 8 out of the 4 x 4 image"),
    (lambda: corgy.preprocess_image(np.zeros((4, 4, 3), np.uint8), corgy.ImagePreprocess(std=[0])), corgy.Error,
     "std must be finite and not 0, got 0"),
    (lambda: corgy.preprocess_image(np.zeros((4, 4, 3), np.uint8), corgy.ImagePreprocess(mean=[1, 2])), corgy.Error,
     "mean takes 1 value or one per channel (3), got 2"),
    (lambda: corgy.top_classes(SCORES, 0), ValueError, "top_classes: k must be at least 1, got 0"),
    (lambda: corgy.top_classes(np.zeros((2, 10), np.float32)), ValueError,
     "expected one image's class scores (F,), (1, F) or (1, F, 1, 1), got shape (2, 10) (pass one image"),
    (lambda: corgy.top_classes(SCORES.astype(np.float64)), TypeError, "expected float32, got float64"),
    (lambda: corgy.top_classes(SCORES, 3, labels=["one"]), ValueError,
     "top_classes: 1 labels, but the scores (1, 10) have 10 classes"),
    (lambda: corgy.class_probabilities(np.array([0.5, np.nan], np.float32)), corgy.Error, "score 1 of 2 is nan"),
    (lambda: corgy.argmax_class_mask(np.zeros((1, 1, 2, 2), np.float32)), corgy.Error,
     "a class mask needs scores (N, K, H, W) with 2 <= K <= 255 classes"),
    (lambda: corgy.argmax_class_mask(np.zeros((1, 4, 2, 2), np.float32), n=1), corgy.Error, "image 1 of N"),
    (lambda: corgy.argmax_class_mask(np.zeros((1, 4), np.float32)), ValueError, "expected (N, K, H, W), got shape"),
    (lambda: corgy.class_mask_on_image(np.zeros((2, 2), np.int32), GEOMETRY), TypeError,
     "class_mask_on_image mask: expected uint8, got int32"),
    (lambda: corgy.class_mask_on_image(np.zeros((2, 2), np.uint8), corgy.PreprocessGeometry(
        image_width=4, image_height=2, resized_width=4, resized_height=2, crop_x=0, crop_y=0, crop_width=0,
        crop_height=2)), corgy.Error, "the geometry's sizes must be positive"),
    (lambda: corgy.class_mask_rgb(np.zeros((2, 2, 2), np.uint8)), ValueError,
     "class_mask_rgb mask: a class mask is uint8 (H, W), got shape (2, 2, 2)"),
])
def test_bad_arguments_are_clear_errors(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()
