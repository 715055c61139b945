"""The examples of docs/python.md and README.md (python/examples/; scripts/check-doc-examples.sh checks that the
documents show these files) run and print what an independent computation gives."""

import re
import subprocess
import sys

import numpy as np

from conftest import FIXTURES, REPOSITORY
from test_sequential import numpy_conv2d

EXAMPLES = REPOSITORY / "python" / "examples"


def run(script, *args):
    return subprocess.run([sys.executable, str(EXAMPLES / script), *map(str, args)], check=True,
                          capture_output=True, text=True).stdout


def test_readme_example_prints_what_numpy_computes():
    output = run("readme_example.py")
    sobel = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float64)
    image = np.zeros((1, 1, 8, 8))
    image[0, 0, :, 4:] = 1
    y = np.maximum(numpy_conv2d(image, np.stack([sobel, -sobel])[:, None], np.zeros(2), padding=1), 0)
    pooled = y.reshape(1, 2, 4, 2, 4, 2).max(axis=(3, 5)).reshape(32)
    logits = (0.05 * (np.arange(96) % 5).reshape(3, 32)) @ pooled
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    printed = [float(v) for v in re.findall(r"class \d: ([0-9.]+)", output)]
    np.testing.assert_allclose(printed, expected, atol=6e-4)
    assert "conv2d" in output


def test_onnx_example_prints_the_models_output():
    folder = FIXTURES / "onnx" / "resnet18_opset17"
    output = run("onnx_example.py", folder / "model.onnx", folder / "input.npy")
    expected = np.load(folder / "output_0.npy").ravel()[:5]
    printed = [float(v) for v in output.split("first values:")[1].split()]
    np.testing.assert_allclose(printed, expected, atol=1e-4 * np.abs(np.load(folder / "output_0.npy")).max() + 5e-5)
    assert "(1, 10)" in output


def test_face_demo_finds_the_faces():
    output = run("detect_faces.py", "--backend", "blas", REPOSITORY / "data" / "face_api" / "sample1.png")
    assert "3 face(s)" in output
