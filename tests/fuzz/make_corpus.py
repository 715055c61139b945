#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) from the repository's real files.

Every seed is a real file of the repository, or a small file cut, shrunk or re-encoded from one, so that the
fuzzers start from inputs that reach deep into each parser. Run it from anywhere with Debian's python3 (numpy and
PIL: python3-numpy, python3-pil); it rewrites the seed folders completely and is deterministic.

    /usr/bin/python3 tests/fuzz/make_corpus.py
"""

import io
import json
import re
import shutil
import struct
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
FACE_API = ROOT / "data" / "face_api"
MNIST = ROOT / "data" / "mnist"
DARKNET = ROOT / "data" / "darknet"


def seed_folder(target):
    folder = CORPUS / target
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def scale_filters(cfg, divisor, classes):
    """A YOLO cfg with fewer filters per convolution and `classes` classes, at 32 x 32 pixels: it runs in a
    millisecond in the darknet_forward target. The convolution before each head keeps anchors x (5 + classes)."""
    sections = re.split(r"(?m)^(?=\[)", cfg)
    out = []
    for i, section in enumerate(sections):
        following = sections[i + 1] if i + 1 < len(sections) else ""
        feeds_head = following.startswith("[yolo]") or following.startswith("[region]")
        if section.startswith("[convolutional]") and not feeds_head:
            section = re.sub(r"(?m)^filters=(\d+)", lambda m: f"filters={max(int(m.group(1)) // divisor, 1)}", section)
        if section.startswith("[yolo]") or section.startswith("[region]"):
            section = re.sub(r"(?m)^classes=\d+", f"classes={classes}", section)
        if feeds_head:
            head = following
            num = int(re.search(r"(?m)^num=(\d+)", head).group(1))
            mask = re.search(r"(?m)^mask\s*=\s*([\d,\s]+)$", head)
            anchors = len(mask.group(1).split(",")) if mask else num
            section = re.sub(r"(?m)^filters=\d+", f"filters={anchors * (5 + classes)}", section)
        out.append(section)
    text = "".join(out)
    text = re.sub(r"(?m)^width=\d+", "width=32", text)
    return re.sub(r"(?m)^height=\d+", "height=32", text)


# Every section and key corgy reads, in one small network (classifier tail) and one detector, so that the fuzzers
# start with all of them.
EVERY_SECTION_CFG = """[net]
width=16
height=16
channels=3

[convolutional]
batch_normalize=1
filters=4
size=3
stride=1
pad=1
activation=mish

[conv]
filters=4
size=3
stride=2
padding=1
groups=4
activation=swish

[route]
layers=-1,-2

[maxpool]
size=2
stride=2

[shortcut]
from=-2
activation=relu

[upsample]
stride=2

[dropout]
probability=.5

[avgpool]

[connected]
output=5
activation=tanh

[softmax]
groups=1

[cost]
type=sse
"""

REGION_CFG = """[net]
width=32
height=32
channels=3

[convolutional]
filters=8
size=3
stride=2
pad=1
activation=leaky

[max]
size=2
stride=1

[convolutional]
filters=14
size=1
activation=linear

[region]
anchors=1.08,1.19,3.42,4.41
bias_match=1
classes=2
coords=4
num=2
softmax=1
thresh=.6
"""


def write_darknet_cfg_seeds():
    for target in ("darknet_cfg", "darknet_forward"):
        folder = seed_folder(target)
        for cfg in sorted(DARKNET.glob("*.cfg")):
            text = cfg.read_text()
            if target == "darknet_cfg":
                (folder / cfg.name).write_text(text)
            (folder / f"{cfg.stem}-small.cfg").write_text(scale_filters(text, 8, 2))
        (folder / "every-section.cfg").write_text(EVERY_SECTION_CFG)
        (folder / "region.cfg").write_text(REGION_CFG)


def fmix32(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def darknet_weights_parameters():
    """The parameter count of the darknet_weights target's fixed cfg (tests/fuzz/fuzz_darknet_weights.cpp):
    conv 3->4 3x3 with batch norm, conv 4->4 1x1 groups 2, connected 64->6 with batch norm, connected 6->3."""
    conv1 = 4 + 3 * 4 + 4 * 3 * 9
    conv2 = 4 + 4 * 2
    fc1 = 6 + 6 * 64 + 3 * 6
    fc2 = 3 + 3 * 6
    return conv1 + conv2 + fc1 + fc2


def write_darknet_weights_seeds():
    folder = seed_folder("darknet_weights")
    count = darknet_weights_parameters()
    values = np.array([(fmix32((k * 0x9E3779B1 + 7 * 0x85EBCA77) & 0xFFFFFFFF) >> 8) / 2**24 - 0.5
                       for k in range(count)], dtype="<f4")
    headers = {
        "v0.2.0-seen64": struct.pack("<iiiQ", 0, 2, 0, 0),
        "v0.1.0-seen32": struct.pack("<iiiI", 0, 1, 0, 0),
        "v1001-transposed": struct.pack("<iiiI", 1001, 0, 0, 32000),
    }
    for name, header in headers.items():
        (folder / f"{name}.weights").write_bytes(header + values.tobytes())


def tfjs_seed(entries, shard):
    manifest = json.dumps([{"paths": ["shard.bin"], "weights": entries}], indent=1).encode()
    return manifest + b"\0" + shard


def write_tfjs_seeds():
    folder = seed_folder("tfjs_manifest")
    manifest = json.loads((FACE_API / "tiny_face_detector_model-weights_manifest.json").read_text())
    shard = (FACE_API / "tiny_face_detector_model.bin").read_bytes()
    entries = manifest[0]["weights"]
    (folder / "face-detector.seed").write_bytes(tfjs_seed(entries, shard))
    # The first tensors alone, with the bytes they take (uint8: one per value).
    sizes = [int(np.prod(e["shape"])) for e in entries]
    (folder / "first-three-uint8.seed").write_bytes(tfjs_seed(entries[:3], shard[:sum(sizes[:3])]))
    # The first kernel dequantized to float32 and float16, and requantized to uint16.
    first = entries[0]
    q = first["quantization"]
    values = np.frombuffer(shard[:sizes[0]], dtype=np.uint8).astype(np.float64) * q["scale"] + q["min"]
    plain = {"name": first["name"], "shape": first["shape"], "dtype": "float32"}
    (folder / "float32.seed").write_bytes(tfjs_seed([plain], values.astype("<f4").tobytes()))
    half = dict(plain, quantization={"dtype": "float16"})
    (folder / "float16.seed").write_bytes(tfjs_seed([half], values.astype("<f2").tobytes()))
    scale = (values.max() - values.min()) / 65535
    wide = dict(plain, quantization={"dtype": "uint16", "scale": scale, "min": values.min()})
    levels = np.round((values - values.min()) / scale).astype("<u2")
    (folder / "uint16.seed").write_bytes(tfjs_seed([wide], levels.tobytes()))
    # A model.json, which carries the manifest under "weightsManifest".
    model = json.dumps({"format": "graph-model", "weightsManifest": [{"paths": ["shard.bin"], "weights": [plain]}]})
    (folder / "model-json.seed").write_bytes(model.encode() + b"\0" + values.astype("<f4").tobytes())


def write_npy_seeds():
    folder = seed_folder("npy")
    for npy in sorted((ROOT / "tests" / "fixtures" / "pytorch" / "npy").glob("*.npy")):
        shutil.copy(npy, folder / npy.name)
    for npy in sorted(MNIST.glob("*.npy")):
        if npy.stat().st_size <= 4096:
            shutil.copy(npy, folder / f"mnist-{npy.name}")


def write_idx_seeds():
    folder = seed_folder("idx")
    images = (MNIST / "heldout-images-idx3-ubyte").read_bytes()
    labels = (MNIST / "heldout-labels-idx1-ubyte").read_bytes()
    for count in (1, 3):
        (folder / f"images-{count}.idx").write_bytes(images[:4] + struct.pack(">I", count) + images[8:16] +
                                                     images[16:16 + count * 28 * 28])
        (folder / f"labels-{count}.idx").write_bytes(labels[:4] + struct.pack(">I", count) + labels[8:8 + count])


def write_raw_weights_seeds():
    # Exactly the sizes of the raw_weights target's layers (tests/fuzz/fuzz_raw_weights.cpp), cut from MNIST's.
    folder = seed_folder("raw_weights")
    weights = (MNIST / "weights_conv1.dat").read_bytes()
    bias = (MNIST / "bias_conv1.dat").read_bytes()
    for name, floats, source in [("conv-2x3x3x3", 54, weights), ("grouped-2x2", 4, weights),
                                 ("linear-2x12", 24, weights), ("conv-bias-3", 3, bias), ("linear-bias-2", 2, bias)]:
        (folder / f"{name}.dat").write_bytes(source[:4 * floats])


def encoded(image, fmt, **options):
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def write_image_seeds():
    folder = seed_folder("image")
    for sample in sorted((MNIST / "samples").iterdir())[:2]:
        shutil.copy(sample, folder / sample.name)
    photo = Image.open(FACE_API / "sample1.png").convert("RGB")
    small = photo.resize((24, 16), Image.BILINEAR)
    seeds = {
        "baseline.jpg": encoded(small, "JPEG", quality=80),
        "progressive.jpg": encoded(small, "JPEG", quality=80, progressive=True),
        "grey.jpg": encoded(small.convert("L"), "JPEG", quality=80),
        "rgb.png": encoded(small, "PNG"),
        "rgba.png": encoded(small.convert("RGBA"), "PNG"),
        "grey-alpha.png": encoded(small.convert("LA"), "PNG"),
        "palette.png": encoded(small.convert("P", palette=Image.ADAPTIVE, colors=16), "PNG"),
        "grey16.png": encoded(Image.fromarray(np.asarray(small.convert("L"), dtype=np.uint16) * 257), "PNG"),
        "rgb.bmp": encoded(small, "BMP"),
        "palette.bmp": encoded(small.convert("P", palette=Image.ADAPTIVE, colors=16), "BMP"),
        "palette.gif": encoded(small.convert("P", palette=Image.ADAPTIVE, colors=16), "GIF"),
        "rgb.tga": encoded(small, "TGA"),
        "rle.tga": encoded(small, "TGA", compression="tga_rle"),
        "rgb.ppm": encoded(small, "PPM"),
        "grey.pgm": encoded(small.convert("L"), "PPM"),
    }
    # Radiance HDR, which PIL cannot write: run-length-free scanlines of RGBE pixels.
    rgb = np.asarray(small, dtype=np.float32) / 255.0 + 1e-3
    exponent = np.ceil(np.log2(rgb.max(axis=2)))
    mantissa = np.clip(rgb / (2.0 ** exponent)[..., None] * 256, 0, 255).astype(np.uint8)
    rgbe = np.concatenate([mantissa, (exponent + 128).astype(np.uint8)[..., None]], axis=2)
    seeds["flat.hdr"] = b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 16 +X 24\n" + rgbe.tobytes()
    for name, data in seeds.items():
        (folder / name).write_bytes(data)


def write_onnx_seeds():
    """The operator test models of tests/fixtures/onnx (hand-built by tools/make_onnx_op_models.py, and exported
    from PyTorch by tools/make_onnx_torch_op_models.py: ConvTranspose, Resize in every mode): each is a few hundred
    bytes to a few KB and together they hold every operator and attribute the loader maps."""
    folder = seed_folder("onnx")
    fixtures = ROOT / "tests" / "fixtures" / "onnx"
    for model in sorted([*fixtures.glob("op_*/model.onnx"), *fixtures.glob("torch_*/model.onnx")]):
        shutil.copyfile(model, folder / f"{model.parent.name}.onnx")

# Lines of a blas tuning cache that corgy wrote (DenseNet-121, MobileNetV2 and MobileNetV3-Large on an AMD EPYC,
# one and two threads, two processes): every kind of choice and key, choices measured once and agreed twice, the
# best core FMA rate seen while measuring, a measurement made while the cores were disturbed (agreed 0) after two
# disturbed ones of the same choice (measured 3), and a choice four processes in a row measured. The seeds carry the
# fuzz target's identity in their header.
TUNING_CACHE_LINES = [
    '{"core_fma_gflops":233.6}',
    '{"agreed":0,"choice":"winograd f2x2","key":"64->64 k3 s1 p1 d1 g1 in (1, 64, 56, 56) t2 avx512","measured":3,"ms":0.713}',
    '{"agreed":1,"choice":"packed_gemm","key":"1024->512 k1 s1 p0 d1 g1 in (1, 1024, 7, 7) t1 avx512","measured":1,"ms":0.335}',
    '{"agreed":1,"choice":"packed_gemm","key":"1024->512 k1 s1 p0 d1 g1 in (1, 1024, 7, 7) t2 avx512","measured":1,"ms":0.254}',
    '{"agreed":1,"choice":"depthwise_channel_blocks","key":"120->120 k5 s1 p2 d1 g120 in (1, 120, 28, 28) t1 avx512","measured":1,"ms":0.063}',
    '{"agreed":1,"choice":"depthwise_channel_blocks","key":"120->120 k5 s1 p2 d1 g120 in (1, 120, 28, 28) t2 avx512","measured":1,"ms":0.032}',
    '{"agreed":1,"choice":"winograd f4x4","key":"128->32 k3 s1 p1 d1 g1 in (1, 128, 14, 14) t1 avx512","measured":1,"ms":0.096}',
    '{"agreed":1,"choice":"winograd f2x2","key":"128->32 k3 s1 p1 d1 g1 in (1, 128, 14, 14) t2 avx512","measured":1,"ms":0.065}',
    '{"agreed":1,"choice":"winograd f4x4","key":"128->32 k3 s1 p1 d1 g1 in (1, 128, 28, 28) t2 avx512","measured":1,"ms":0.129}',
    '{"agreed":1,"choice":"channels_in_lanes","key":"128->32 k3 s1 p1 d1 g1 in (1, 128, 7, 7) t1 avx512","measured":1,"ms":0.045}',
    '{"agreed":2,"choice":"channels_in_lanes","key":"1280->1000 k1 s1 p0 d1 g1 in (8, 1280, 1, 1) t2 avx512","measured":4,"ms":0.343}',
    '{"agreed":2,"choice":"depthwise_channel_blocks","key":"144->144 k3 s2 p1 d1 g144 in (1, 144, 56, 56) t2 avx512","measured":2,"ms":0.052}',
    '{"agreed":1,"choice":"few_channels","key":"3->16 k3 s2 p1 d1 g1 in (1, 3, 224, 224) t1 avx512","measured":1,"ms":0.11}',
    '{"agreed":1,"choice":"few_channels","key":"3->16 k3 s2 p1 d1 g1 in (1, 3, 224, 224) t2 avx512","measured":1,"ms":0.072}',
    '{"agreed":2,"choice":"few_channels","key":"3->32 k3 s2 p1 d1 g1 in (8, 3, 224, 224) t2 avx512","measured":2,"ms":1.225}',
    '{"agreed":1,"choice":"few_channels","key":"3->64 k7 s2 p3 d1 g1 in (1, 3, 224, 224) t1 avx512 + max pool","measured":1,"ms":1.711}',
    '{"agreed":1,"choice":"few_channels","key":"3->64 k7 s2 p3 d1 g1 in (1, 3, 224, 224) t2 avx512 + max pool","measured":1,"ms":0.862}',
    '{"agreed":1,"choice":"depthwise","key":"672->672 k5 s2 p2 d1 g672 in (1, 672, 14, 14) t2 avx512","measured":1,"ms":0.065}',
    '{"agreed":1,"choice":"depthwise","key":"72->72 k3 s1 p1 d1 g72 in (1, 72, 56, 56) t1 avx512","measured":1,"ms":0.107}',
    '{"agreed":1,"choice":"pointwise_batch","key":"960->160 k1 s1 p0 d1 g1 in (1, 960, 7, 7) t2 avx512 + add","measured":1,"ms":0.082}',
    '{"agreed":1,"choice":"convolutions","key":"inverted residual 112->672 k1 s1 p0 d1 g1 in (1, 112, 14, 14) t0 avx512 / 301 / 0 in (1, 112, 14, 14) t2 avx512","measured":1,"ms":0.128}',
    '{"agreed":1,"choice":"apart","key":"inverted residual 112->672 k1 s1 p0 d1 g1 in (1, 112, 14, 14) t0 avx512 / 301 / 112 + add in (1, 112, 14, 14) t1 avx512 + excite","measured":1,"ms":0.459}',
    '{"agreed":1,"choice":"channel_blocks","key":"inverted residual 112->672 k1 s1 p0 d1 g1 in (1, 112, 14, 14) t0 avx512 / 301 / 112 + add in (1, 112, 14, 14) t2 avx512 + excite","measured":1,"ms":0.239}',
    '{"agreed":1,"choice":"channel_blocks","key":"inverted residual 112->672 k1 s1 p0 d1 g1 in (1, 112, 14, 14) t0 avx512 / 502 / 160 in (1, 112, 14, 14) t1 avx512 + excite","measured":1,"ms":0.307}',
    '{"agreed":1,"choice":"convolutions","key":"inverted residual 16->64 k1 s1 p0 d1 g1 in (1, 16, 112, 112) t0 avx512 / 302 / 24 in (1, 16, 112, 112) t1 avx512","measured":1,"ms":0.449}',
    '{"agreed":1,"choice":"whole_images","key":"inverted residual 16->96 k1 s1 p0 d1 g1 in (8, 16, 112, 112) t0 avx512 / 302 / 24 in (8, 16, 112, 112) t2 avx512","measured":1,"ms":2.981}',
    '{"agreed":1,"choice":"apart","key":"inverted residual 160->960 k1 s1 p0 d1 g1 in (1, 160, 7, 7) t0 avx512 / 501 / 160 + add in (1, 160, 7, 7) t2 avx512 + excite","measured":1,"ms":0.164}',
    '{"agreed":2,"choice":"channel_blocks","key":"inverted residual 160->960 k1 s1 p0 d1 g1 in (8, 160, 7, 7) t0 avx512 / 301 / 160 + add in (8, 160, 7, 7) t2 avx512","measured":2,"ms":0.848}',
    '{"agreed":2,"choice":"whole_images","key":"inverted residual 24->144 k1 s1 p0 d1 g1 in (8, 24, 56, 56) t0 avx512 / 301 / 24 + add in (8, 24, 56, 56) t2 avx512","measured":2,"ms":2.149}',
    '{"agreed":1,"choice":"bands","key":"inverted residual 24->72 k1 s1 p0 d1 g1 in (1, 24, 56, 56) t0 avx512 / 301 / 24 + add in (1, 24, 56, 56) t2 avx512","measured":1,"ms":0.141}',
    '{"agreed":1,"choice":"channel_blocks","key":"inverted residual 40->240 k1 s1 p0 d1 g1 in (1, 40, 28, 28) t0 avx512 / 302 / 80 in (1, 40, 28, 28) t1 avx512","measured":1,"ms":0.17}',
    '{"agreed":1,"choice":"channel_blocks","key":"inverted residual 80->184 k1 s1 p0 d1 g1 in (1, 80, 14, 14) t0 avx512 / 301 / 80 + add in (1, 80, 14, 14) t2 avx512","measured":1,"ms":0.049}',
]
TUNING_CACHE_HEADER = ('{"corgy":"0.1.0","corgy_blas_tuning":1,"cpu":"Fuzz CPU","isa":"avx512",'
                       '"library":"f00d"}')


def write_tuning_cache_seeds():
    folder = seed_folder("tuning_cache")
    (folder / "all.jsonl").write_text(TUNING_CACHE_HEADER + "\n" + "\n".join(TUNING_CACHE_LINES) + "\n")
    (folder / "one.jsonl").write_text(TUNING_CACHE_HEADER + "\n" + TUNING_CACHE_LINES[0] + "\n")
    (folder / "header.jsonl").write_text(TUNING_CACHE_HEADER + "\n")


def main():
    write_darknet_cfg_seeds()
    write_darknet_weights_seeds()
    write_tfjs_seeds()
    write_npy_seeds()
    write_idx_seeds()
    write_raw_weights_seeds()
    write_image_seeds()
    write_onnx_seeds()
    write_tuning_cache_seeds()
    for folder in sorted(CORPUS.iterdir()):
        files = list(folder.iterdir())
        print(f"{folder.relative_to(ROOT)}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
