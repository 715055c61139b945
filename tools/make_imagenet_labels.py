#!/usr/bin/python3
"""Writes data/imagenet/imagenet_classes.txt: the 1000 ImageNet class names, one per line in class-index order, as
Debian's torchvision holds them in its models' metadata (ResNet18_Weights.IMAGENET1K_V1.meta["categories"]; every
torchvision ImageNet classifier shares the list). corgy-run --labels reads such a file (docs/corgy-run.md).

Run: tools/make_imagenet_labels.py [--out FILE]   (Debian's python3-torchvision; nothing is downloaded)
"""
import argparse
import pathlib

import torchvision

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "data/imagenet/imagenet_classes.txt")
    args = parser.parse_args()
    names = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["categories"]
    if len(names) != 1000 or any("\n" in name or name != name.strip() for name in names):
        raise SystemExit(f"unexpected ImageNet categories in torchvision {torchvision.__version__}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(name + "\n" for name in names))
    print(f"wrote {args.out}: {len(names)} names from torchvision {torchvision.__version__}")


if __name__ == "__main__":
    main()
