#!/usr/bin/python3
"""Writes the reference outputs of corgy's image preprocessing (corgy/io/image_preprocess.h) for
tests/image_preprocess_test.cpp, computed independently with OpenCV and numpy.

Each case of CASES prepares tests/fixtures/darknet/photo.png (96 x 72, RGB) as torchvision's transforms and OpenCV's
blobFromImage do: cv2.resize(INTER_LINEAR) of the 8-bit values as float32 (the shorter side to N with the longer one
int(N * longer / shorter), as torchvision's Resize(int), or an exact size), a center crop at
int(round((size - crop) / 2)) (torchvision's center_crop; Python's round takes halves to even), value * scale, then
(value - mean) / std per channel, and RGB or BGR order; NCHW float32. Writes <out>/cases.json (the options of each
case, in corgy's terms) and <out>/<case>.npy.

Run: tools/image_preprocess_reference.py [--out DIR]   (Debian's python3-opencv and python3-numpy)
"""
import argparse
import json
import pathlib

import cv2
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
IMAGE = "darknet/photo.png"  # under tests/fixtures
IMAGENET = dict(resize_shorter=256, crop=[224, 224], scale=1 / 255, mean=[0.485, 0.456, 0.406],
                std=[0.229, 0.224, 0.225], bgr=False)

# name: options (resize_shorter, or resize = [w, h]; crop = [w, h]; scale; mean; std; bgr). Defaults: no resize, no
# crop, scale 1/255, mean 0, std 1, RGB.
CASES = {
    # ImageNet's normalisation at a size the 96 x 72 photo allows: 85 x 64, crop offset (14.5 -> 14, 4).
    "imagenet_small": dict(IMAGENET, resize_shorter=64, crop=[56, 56]),
    # A shrink by a non-integer factor in both axes, one mean and std for every channel, BGR, no scale.
    "exact_shrink_bgr": dict(resize=[40, 30], scale=1.0, mean=[127.5], std=[127.5], bgr=True),
    # An enlargement (120 x 90) and a crop of margins 79 / 2 = 39.5 -> 40 (halves to even: up) and 60 / 2 = 30.
    "enlarge_crop": dict(resize_shorter=90, crop=[41, 30]),
    # Exactly half: OpenCV switches INTER_LINEAR to INTER_AREA here; both average 2 x 2 pixels.
    "half": dict(resize=[48, 36], mean=[0.5, 0.4, 0.3], std=[0.2, 0.3, 0.4]),
    # A crop without a resize: margins 47 / 2 = 23.5 -> 24 and 35 / 2 = 17.5 -> 18.
    "crop_only": dict(crop=[49, 37], scale=2.0),
}


def center_crop(image, width, height):
    rows, cols = image.shape[:2]
    top = int(round((rows - height) / 2.0))
    left = int(round((cols - width) / 2.0))
    return image[top:top + height, left:left + width]


def preprocess(rgb, options):
    image = rgb.astype(np.float32)
    rows, cols = image.shape[:2]
    if "resize_shorter" in options:
        size = options["resize_shorter"]
        short, long = min(cols, rows), max(cols, rows)
        new_short, new_long = size, int(size * long / short)
        width, height = (new_short, new_long) if cols <= rows else (new_long, new_short)
        image = cv2.resize(image, (width, height), interpolation=cv2.INTER_LINEAR)
    elif "resize" in options:
        image = cv2.resize(image, tuple(options["resize"]), interpolation=cv2.INTER_LINEAR)
    if "crop" in options:
        image = center_crop(image, *options["crop"])
    image = image * np.float32(options.get("scale", 1 / 255))
    image = (image - np.float32(options.get("mean", [0.0]))) / np.float32(options.get("std", [1.0]))
    if options.get("bgr", False):
        image = image[:, :, ::-1]
    return np.ascontiguousarray(image.transpose(2, 0, 1)[None], dtype=np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "tests/fixtures/image_preprocess")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    bgr = cv2.imread(str(ROOT / "tests/fixtures" / IMAGE), cv2.IMREAD_COLOR)
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    for name, options in CASES.items():
        tensor = preprocess(rgb, options)
        np.save(args.out / f"{name}.npy", tensor)
        print(f"{name}: {tensor.shape}")
    (args.out / "cases.json").write_text(json.dumps({"image": IMAGE, "cases": CASES}, indent=1) + "\n")


if __name__ == "__main__":
    main()
