#!/usr/bin/python3
"""Writes the PyTorch reference outputs that tests/style_transfer_test.cpp compares corgy's style network with.

tests/fixtures/style_transfer/random/: a network with random weights (width 8, 5 residual blocks, 3 styles) in
corgy's weights format (weights/manifest.json + .npy), a batch of two random images (input.npy, (2, 3, 37, 45):
odd sizes, so the stride-2 convolutions and the upsampling meet uneven planes), and PyTorch's outputs for the
style mix in cases.json, once with reflect padding (output_reflect.npy) and once with zero padding
(output_zeros.npy). The instance-norm gammas and betas are random too, so a wrong mix shows.

tests/fixtures/style_transfer/trained/: the trained network of data/style_transfer/weights on a 64 x 64 crop of
data/style_transfer/dog.png (a PNG: it decodes to the same pixels everywhere), style mix in cases.json:
output.npy (1, 3, 64, 64).

Outputs are computed in float64 from the float32 weights and inputs and rounded to float32 once, so the reference
carries no float32 accumulation error of its own. Deterministic: re-running rewrites the same files.

    /usr/bin/python3 tools/style_transfer_reference.py     (Debian's python3-torch, python3-numpy, python3-pil)
"""

import json
import os
import shutil
import sys

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import style_transfer_net as stn  # noqa: E402

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIXTURES = os.path.join(REPO_ROOT, "tests", "fixtures", "style_transfer")
TRAINED = os.path.join(REPO_ROOT, "data", "style_transfer", "weights")
DOG = os.path.join(REPO_ROOT, "data", "style_transfer", "dog.png")

RANDOM_STYLE_WEIGHTS = [0.5, 0.3, 0.2]
TRAINED_STYLE_WEIGHTS = [0.7, 0.3, 0.0, 0.0]
CROP = {"x": 160, "y": 160, "side": 64}


def reference(net, image, style_weights):
    """The float64 forward of a float32 network, rounded to float32."""
    net64 = net.double().eval()
    with torch.no_grad():
        out = net64(torch.from_numpy(image).double(), torch.tensor(style_weights, dtype=torch.float64))
    net.float()
    return out.numpy().astype(np.float32)


def random_network():
    torch.manual_seed(20261123)
    net = stn.StyleTransferNet(styles=3, width=8, residual_blocks=5, padding="reflect")
    with torch.no_grad():
        for name, param in net.named_parameters():
            if name.endswith("gamma"):
                param.uniform_(0.5, 1.5)
            elif name.endswith("beta"):
                param.normal_(0.0, 0.5)
    image = torch.rand(2, 3, 37, 45, dtype=torch.float32).numpy()
    directory = os.path.join(FIXTURES, "random")
    shutil.rmtree(directory, ignore_errors=True)
    stn.save_weights(net, os.path.join(directory, "weights"), ["a", "b", "c"])
    np.save(os.path.join(directory, "input.npy"), image)
    np.save(os.path.join(directory, "output_reflect.npy"), reference(net, image, RANDOM_STYLE_WEIGHTS))
    net_zeros, _ = stn.load_weights(os.path.join(directory, "weights"), padding="zeros")
    np.save(os.path.join(directory, "output_zeros.npy"), reference(net_zeros, image, RANDOM_STYLE_WEIGHTS))
    return {"style_weights": RANDOM_STYLE_WEIGHTS, "input": "input.npy",
            "outputs": {"reflect": "output_reflect.npy", "zeros": "output_zeros.npy"}}


def trained_network():
    net, styles = stn.load_weights(TRAINED)
    pixels = np.asarray(Image.open(DOG).convert("RGB"), dtype=np.float32) / 255.0
    crop = pixels[CROP["y"]:CROP["y"] + CROP["side"], CROP["x"]:CROP["x"] + CROP["side"]]
    image = np.ascontiguousarray(crop.transpose(2, 0, 1)[None])
    directory = os.path.join(FIXTURES, "trained")
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    np.save(os.path.join(directory, "output.npy"), reference(net, image, TRAINED_STYLE_WEIGHTS))
    return {"weights": "data/style_transfer/weights", "styles": styles, "style_weights": TRAINED_STYLE_WEIGHTS,
            "image": "data/style_transfer/dog.png", "crop": CROP, "output": "output.npy"}


def main():
    os.makedirs(FIXTURES, exist_ok=True)
    cases = {"random": random_network(), "trained": trained_network(), "torch": torch.__version__}
    with open(os.path.join(FIXTURES, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    print("wrote", FIXTURES)


if __name__ == "__main__":
    main()
