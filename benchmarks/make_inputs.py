#!/usr/bin/python3
"""Writes the inputs every framework of benchmarks/run.sh reads, as float32 NCHW .npy files:

  mnist.b<N>.npy   the first N held-out digits of data/mnist (pixel = byte / 255), (N, 1, 28, 28)
  yolo.b<N>.npy    uniform [0, 1) noise from NumPy's PCG64 with seed 2026, (N, 3, 416, 416) (the time of a
                   forward does not depend on the pixels; the peers' outputs are checked on it)
  style.s<S>.npy   the same noise, (1, 3, S, S), for the style network at side S
  imagenet.b<N>.npy  standard normal noise from the same generator and seed, (N, 3, 224, 224): what an ImageNet
                   classifier sees after its mean / standard-deviation normalisation (ResNet-18, MobileNetV2);
                   imagenet<S>.b<N>.npy the same at side S (--imagenet-sides; Inception v3's 299)
  detector.b<N>.npy  uniform [0, 1) noise from the same generator and seed, (N, 3, 640, 640): YOLOv8n's input

Usage: make_inputs.py OUT_DIR --mnist-batches 1 64 --yolo-batches 1 8 --style-sides 256 512 --imagenet-batches 1 8
       [--detector-batches 1]
"""

import argparse
import os

import numpy as np

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
YOLO_SIDE = 416
YOLO_SEED = 2026
DETECTOR_SIDE = 640


def read_idx_images(path):
    with open(path, "rb") as f:
        magic = int.from_bytes(f.read(4), "big")
        if magic != 0x803:
            raise ValueError(f"{path}: not an IDX image file (magic {magic:#x})")
        count, rows, cols = (int.from_bytes(f.read(4), "big") for _ in range(3))
        return np.frombuffer(f.read(), np.uint8).reshape(count, 1, rows, cols)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--mnist-batches", type=int, nargs="*", default=[1, 64])
    parser.add_argument("--yolo-batches", type=int, nargs="*", default=[1, 8])
    parser.add_argument("--style-sides", type=int, nargs="*", default=[256, 512])
    parser.add_argument("--imagenet-batches", type=int, nargs="*", default=[1, 8])
    parser.add_argument("--imagenet-sides", type=int, nargs="*", default=[224],
                        help="224 writes imagenet.b<N>.npy, another side S imagenet<S>.b<N>.npy (Inception v3: 299)")
    parser.add_argument("--detector-batches", type=int, nargs="*", default=[1])
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    digits = read_idx_images(os.path.join(REPO, "data", "mnist", "heldout-images-idx3-ubyte"))
    for n in args.mnist_batches:
        np.save(os.path.join(args.out_dir, f"mnist.b{n}.npy"), (digits[:n] / np.float32(255)).astype(np.float32))
    for n in args.yolo_batches:
        noise = np.random.default_rng(YOLO_SEED).random((n, 3, YOLO_SIDE, YOLO_SIDE), dtype=np.float32)
        np.save(os.path.join(args.out_dir, f"yolo.b{n}.npy"), noise)
    for side in args.style_sides:
        noise = np.random.default_rng(YOLO_SEED).random((1, 3, side, side), dtype=np.float32)
        np.save(os.path.join(args.out_dir, f"style.s{side}.npy"), noise)
    for side in args.imagenet_sides:
        for n in args.imagenet_batches:
            noise = np.random.default_rng(YOLO_SEED).standard_normal((n, 3, side, side), dtype=np.float32)
            np.save(os.path.join(args.out_dir, f"imagenet{'' if side == 224 else side}.b{n}.npy"), noise)
    for n in args.detector_batches:
        noise = np.random.default_rng(YOLO_SEED).random((n, 3, DETECTOR_SIDE, DETECTOR_SIDE), dtype=np.float32)
        np.save(os.path.join(args.out_dir, f"detector.b{n}.npy"), noise)


if __name__ == "__main__":
    main()
