"""corgy-run's answers for an image (docs/corgy-run.md): --top of a classifier and --mask of a segmentation network,
each checked against the output .npy that the same run writes, and its errors for options that cannot apply.
The preprocessing itself is checked against OpenCV by tests/image_preprocess_test.cpp."""

import subprocess

import numpy as np
import pytest

import corgy

from conftest import DATA, FIXTURES

CLASSIFIER = FIXTURES / "onnx" / "resnet18_opset17" / "model.onnx"  # (1, 3, 67, 61) -> (1, 10)
SEGMENTER = FIXTURES / "onnx" / "torch_segmentation_head_opset13" / "model.onnx"  # (1, 3, 6, 5) -> (1, 4, 6, 5)
PHOTO = FIXTURES / "darknet" / "photo.png"  # 96 x 72
PHOTO_WIDTH, PHOTO_HEIGHT = 96, 72


def run(corgy_run, *args):
    return subprocess.run([str(corgy_run), *map(str, args)], capture_output=True, text=True, timeout=60)


def softmax(logits):
    e = np.exp(np.asarray(logits, np.float64) - np.max(logits))
    return e / e.sum()


def test_top_classes_are_the_softmax_of_the_output(corgy_run, tmp_path):
    labels = [f"name of class {i}" for i in range(10)]
    (tmp_path / "labels.txt").write_text("".join(label + "\n" for label in labels))
    result = run(corgy_run, "--onnx", CLASSIFIER, "--input", PHOTO, "--preset", "imagenet", "--resize", 72, "--crop",
                 "61x67", "--top", 3, "--labels", tmp_path / "labels.txt", "--output", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    logits = np.load(tmp_path / "out.0.npy")
    assert logits.shape == (1, 10)
    probabilities = softmax(logits[0])
    lines = result.stdout.splitlines()
    header = lines.index("  rank  index  probability  label")
    assert lines[header - 1] == "top 3 of output 'output' (1, 10), probability = softmax of the output (logits):"
    rows = [line.split(maxsplit=3) for line in lines[header + 1:header + 4]]
    assert int(rows[0][1]) == int(np.argmax(logits[0]))
    expected = sorted(range(10), key=lambda i: (-probabilities[i], i))[:3]
    for rank, (row, index) in enumerate(zip(rows, expected), start=1):
        assert row[0] == str(rank)
        assert int(row[1]) == index
        assert float(row[2]) == pytest.approx(probabilities[index], abs=1e-6)
        assert row[3] == labels[index]


def test_preprocessing_options_equal_numpy(corgy_run, tmp_path):
    """--crop, --scale, --mean, --std and --bgr as numpy computes them (no resize: numpy's crop is exact), through the
    model: the run on the photo equals the run on numpy's tensor."""
    pixels = np.rint(np.asarray(corgy.load_image(str(PHOTO)))[0] * 255)  # (3, 72, 96), the 8-bit values
    left, top = int(round((PHOTO_WIDTH - 61) / 2)), int(round((PHOTO_HEIGHT - 67) / 2))
    crop = pixels[:, top:top + 67, left:left + 61].astype(np.float32)
    mean = np.array([0.2, 0.3, 0.4], np.float32)[:, None, None]
    tensor = (crop * np.float32(0.01) - mean) / np.float32(0.5)
    np.save(tmp_path / "input.npy", np.ascontiguousarray(tensor[::-1][None]))  # BGR
    image = run(corgy_run, "--onnx", CLASSIFIER, "--input", PHOTO, "--crop", "61x67", "--scale", 0.01, "--mean",
                "0.2,0.3,0.4", "--std", 0.5, "--bgr", "--output", tmp_path / "image")
    assert image.returncode == 0, image.stderr
    npy = run(corgy_run, "--onnx", CLASSIFIER, "--input", tmp_path / "input.npy", "--output", tmp_path / "npy")
    assert npy.returncode == 0, npy.stderr
    np.testing.assert_allclose(np.load(tmp_path / "image.0.npy"), np.load(tmp_path / "npy.0.npy"), rtol=0, atol=1e-5)


def voc_color(index):
    r = g = b = 0
    for bit in range(8):
        r |= ((index >> (3 * bit)) & 1) << (7 - bit)
        g |= ((index >> (3 * bit + 1)) & 1) << (7 - bit)
        b |= ((index >> (3 * bit + 2)) & 1) << (7 - bit)
    return r, g, b


def mask_cells(image_size, resized_size, crop_offset, crop_size, mask_size):
    """The mask cell of each image pixel along one axis (its centre through the resize and crop), -1 outside."""
    in_crop = (np.arange(image_size) + 0.5) * resized_size / image_size - crop_offset
    cells = np.minimum(np.floor(in_crop * mask_size / crop_size).astype(int), mask_size - 1)
    return np.where((in_crop >= 0) & (in_crop < crop_size), cells, -1)


# The options, the resized size and the crop's offset: an exact resize to the network's 5 x 6, and the shorter side to
# 6 (8 x 6) with a center crop 5 x 6 at x = round(1.5) = 2, whose pixels left and right of the crop are void.
@pytest.mark.parametrize("options, resized, offset", [(["--resize", "5x6"], (5, 6), (0, 0)),
                                                      (["--resize", "6", "--crop", "5x6"], (8, 6), (2, 0))])
def test_mask_is_the_argmax_on_the_image(corgy_run, tmp_path, options, resized, offset):
    mask_path = tmp_path / "mask.png"
    result = run(corgy_run, "--onnx", SEGMENTER, "--input", PHOTO, *options, "--mask", mask_path,
                 "--output", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    scores = np.load(tmp_path / "out.0.npy")
    assert scores.shape == (1, 4, 6, 5)
    classes = scores[0].argmax(axis=0)
    columns = mask_cells(PHOTO_WIDTH, resized[0], offset[0], 5, 5)
    rows = mask_cells(PHOTO_HEIGHT, resized[1], offset[1], 6, 6)
    expected_classes = np.where((rows[:, None] >= 0) & (columns[None, :] >= 0),
                                classes[np.maximum(rows, 0)[:, None], np.maximum(columns, 0)[None, :]], 255)
    palette = np.array([voc_color(i) for i in range(256)])
    expected = palette[expected_classes]
    mask = corgy.load_image(str(mask_path))
    assert mask.shape == (1, 3, PHOTO_HEIGHT, PHOTO_WIDTH)
    actual = np.rint(np.asarray(mask)[0] * 255).astype(int).transpose(1, 2, 0)
    np.testing.assert_array_equal(actual, expected)
    assert (expected_classes == 255).any() == (offset != (0, 0))


@pytest.mark.parametrize("args, message", [
    ([], "photo.png: an ONNX model takes an image with preprocessing options (--preset imagenet"),
    (["--preset", "imagenet"], "photo.png: preprocessing gives (1, 3, 224, 224), the model takes (1, 3, 67, 61)"),
    (["--resize", "64", "--crop", "100"], "photo.png: cannot crop 100 x 100 out of the 85 x 64 image (resized from "
                                          "96 x 72)"),
    (["--resize", "12y"], "--resize 12y: expects a number N or a size WxH"),
    (["--crop", "61x67", "--mean", "0.5,0.5"], "mean takes 1 value or one per channel (3), got 2 (0.5, 0.5)"),
    (["--crop", "61x67", "--std", "0"], "std must be finite and not 0, got 0"),
    (["--crop", "61x67", "--top", "5", "--labels", DATA / "imagenet" / "imagenet_classes.txt"],
     "imagenet_classes.txt: 1000 class names, but output 'output' (1, 10) has 10 classes"),
    (["--crop", "61x67", "--mask", "mask.png"], "--mask needs class scores (N, K, H, W) as the first output; "
                                                "output 'output' (1, 10) is not"),
])
def test_bad_options_are_clear_errors(corgy_run, tmp_path, args, message):
    result = run(corgy_run, "--onnx", CLASSIFIER, "--input", PHOTO, *args)
    assert result.returncode == 1
    assert message in result.stderr


def test_top_of_a_segmentation_output_is_an_error(corgy_run):
    result = run(corgy_run, "--onnx", SEGMENTER, "--input", PHOTO, "--resize", "5x6", "--top", 3)
    assert result.returncode == 1
    assert "--top needs class scores (N, F) as the first output; output 'output_0' (1, 4, 6, 5) is not" in result.stderr


def test_preprocessing_needs_an_onnx_model_and_an_image(corgy_run):
    assert run(corgy_run, "--mnist", DATA / "mnist", "--preset", "imagenet").returncode == 1
    result = run(corgy_run, "--onnx", CLASSIFIER, "--input", FIXTURES / "onnx" / "resnet18_opset17" / "input.npy",
                 "--preset", "imagenet")
    assert result.returncode == 1
    assert "prepare an image --input, and" in result.stderr and "input.npy is none" in result.stderr
