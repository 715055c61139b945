#!/usr/bin/python3
"""Make data/style_transfer/: the style images and content photos that tools/train_style_transfer.py trains on.

Every picture comes from a Debian package whose licence allows redistribution (data/style_transfer/README.md
lists each file, its package, path and licence). The script fetches the packages with `apt-get download` into a
scratch folder (no install, no root needed beyond what apt-get download needs), unpacks them with `dpkg -x` and
writes small copies:

    style/<name>.jpg     the two paintings, longer side 512 pixels
    style/<name>.png     the two textures, tiled to 256 x 256
    content/<name>.jpg   training photos, longer side at most 384 pixels
    dog.png              darknet's dog.jpg, 512 x 384, held out of training: the demo and test photo

Re-running it rewrites the same files (PIL's resize and encoders are deterministic for one PIL version).

    /usr/bin/python3 tools/make_style_data.py [--scratch /tmp/style-pkgs]
"""

import argparse
import glob
import os
import struct
import subprocess

from PIL import Image

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT_DIR = os.path.join(REPO_ROOT, "data", "style_transfer")

DARKNET = "/usr/share/darknet/data"  # package darknet (installed by scripts/setup.sh --reference-tools)
OPENCV = "usr/share/doc/opencv-doc/examples/data"  # inside package opencv-doc
GIMP = "usr/share/gimp/2.0/patterns"  # inside package gimp-data

# Style index -> (name, source). The order is the network's style order.
STYLES = [
    ("starry_night", ("opencv-doc", OPENCV + "/starry_night.jpg")),
    ("the_scream", ("darknet", DARKNET + "/scream.jpg")),
    ("stone_mosaic", ("gimp-data", GIMP + "/Stone/stone33.pat")),
    ("leopard", ("gimp-data", GIMP + "/Animal/leopard.pat")),
]

CONTENT = [
    ("darknet", DARKNET + "/eagle.jpg"),
    ("darknet", DARKNET + "/giraffe.jpg"),
    ("darknet", DARKNET + "/horses.jpg"),
    ("darknet", DARKNET + "/person.jpg"),
    ("darknet", DARKNET + "/kite.jpg"),
    ("opencv-doc", OPENCV + "/fruits.jpg"),
    ("opencv-doc", OPENCV + "/baboon.jpg"),
    ("opencv-doc", OPENCV + "/building.jpg"),
    ("opencv-doc", OPENCV + "/home.jpg"),
    ("opencv-doc", OPENCV + "/butterfly.jpg"),
    ("opencv-doc", OPENCV + "/messi5.jpg"),
    ("opencv-doc", OPENCV + "/aero3.jpg"),
]
HELD_OUT = ("darknet", DARKNET + "/dog.jpg")

CONTENT_SIDE = 384
PAINTING_SIDE = 512
TEXTURE_SIDE = 256  # textures are tiles of 62 to 156 pixels: tiled (after TEXTURE_ZOOM) to this size
TEXTURE_ZOOM = 2


def read_gimp_pattern(path):
    """GIMP .pat: a big-endian header (header size, version 1, width, height, bytes per pixel, 'GPAT', name)."""
    data = open(path, "rb").read()
    header_size, version, width, height, depth = struct.unpack(">5I", data[:20])
    if data[20:24] != b"GPAT" or version != 1:
        raise SystemExit(f"{path}: not a GIMP pattern (version 1)")
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[depth]
    pixels = data[header_size:header_size + width * height * depth]
    return Image.frombytes(mode, (width, height), pixels).convert("RGB")


def tile(image, side):
    out = Image.new("RGB", (side, side))
    for y in range(0, side, image.height):
        for x in range(0, side, image.width):
            out.paste(image, (x, y))
    return out


def shrink(image, longest):
    scale = longest / max(image.size)
    if scale >= 1.0:
        return image
    size = (round(image.width * scale), round(image.height * scale))
    return image.resize(size, Image.LANCZOS)


def unpack(package, scratch):
    """Directory holding the package's files: / for installed darknet, else an apt-get download unpacked."""
    if package == "darknet":
        if not os.path.isdir(DARKNET):
            raise SystemExit("darknet's images are missing: apt-get install darknet")
        return "/"
    root = os.path.join(scratch, package)
    if not os.path.isdir(root):
        os.makedirs(scratch, exist_ok=True)
        subprocess.run(["apt-get", "download", package], cwd=scratch, check=True)
        debs = glob.glob(os.path.join(scratch, package + "_*.deb"))
        subprocess.run(["dpkg", "-x", debs[0], root], check=True)
    return root


def source_path(package, path, scratch):
    return os.path.join(unpack(package, scratch), path.lstrip("/"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scratch", default="/tmp/style-pkgs", help="where packages are downloaded and unpacked")
    args = parser.parse_args()

    os.makedirs(os.path.join(OUT_DIR, "style"), exist_ok=True)
    os.makedirs(os.path.join(OUT_DIR, "content"), exist_ok=True)
    for name, (package, path) in STYLES:
        src = source_path(package, path, args.scratch)
        if src.endswith(".pat"):
            texture = read_gimp_pattern(src)
            texture = texture.resize((texture.width * TEXTURE_ZOOM, texture.height * TEXTURE_ZOOM), Image.BICUBIC)
            image = tile(texture, TEXTURE_SIDE)
        else:
            image = shrink(Image.open(src).convert("RGB"), PAINTING_SIDE)
        if src.endswith(".pat"):
            image.save(os.path.join(OUT_DIR, "style", name + ".png"), optimize=True)
        else:
            image.save(os.path.join(OUT_DIR, "style", name + ".jpg"), quality=92)
        print(f"style {name}: {image.size} from {package}:{path}")
    for package, path in CONTENT:
        image = shrink(Image.open(source_path(package, path, args.scratch)).convert("RGB"), CONTENT_SIDE)
        name = os.path.splitext(os.path.basename(path))[0]
        image.save(os.path.join(OUT_DIR, "content", name + ".jpg"), quality=90)
        print(f"content {name}: {image.size}")
    dog = Image.open(source_path(*HELD_OUT, args.scratch)).convert("RGB").resize((512, 384), Image.LANCZOS)
    dog.save(os.path.join(OUT_DIR, "dog.png"), optimize=True)
    print(f"held out dog: {dog.size}")


if __name__ == "__main__":
    main()
