#!/usr/bin/python3
"""Reference outputs of darknet itself (Debian's libdarknet) for corgy's darknet parity tests.

For yolov2-tiny-voc and yolov3-tiny (cfgs in data/darknet/, input size overridden to 160 x 96 so that the tests
stay fast and catch any width/height mix-up), with deterministic random weights and a deterministic input, this
script runs Debian's /usr/lib/darknet/libdarknet.so through ctypes and writes to tests/fixtures/darknet/:

  <model>.head<k>.npy       raw input of the k-th [region]/[yolo] layer (1, C, H, W), before any activation
                            (darknet is run on the cfg cut just before that head, so its output is that tensor)
  <model>.detections.npy    darknet's own decoding of the full cfg for an image of IMAGE_W x IMAGE_H letterboxed
                            into the input: get_network_boxes(thresh, relative=0) + do_nms_sort(NMS) and every
                            (box, class) with probability > thresh, as rows (x, y, w, h, class, probability)
                            in pixels, sorted by class then decreasing probability
  mixed.layer<i>.npy        for tests/fixtures/darknet/mixed.cfg (every other layer type corgy reads: grouped conv,
                            shortcut, maxpool 3/1, route, upsample, avgpool, dropout, connected with batch norm,
                            softmax), the outputs of layers 8, 12 and 13 (the cfg cut after that layer)
  photo.png                 a small photo (Debian's /usr/share/darknet/data/dog.jpg resized by darknet to 96x72)
  photo.letterbox.npy       darknet's letterbox_image(photo.png, 80, 64)   (1, 3, 64, 80)
  photo.resize.npy          darknet's resize_image(photo.png, 50, 40)      (1, 3, 40, 50)

The weights and input come from the counter-based generator documented in corgy/io/darknet_weights.h
(random_darknet_weights, darknet_random_uniform), implemented twice, here in NumPy and there in C++; the test
regenerates them in C++ (the 63 MB weights are not committed), so a generator mismatch fails the test.

Requires Debian packages darknet and python3-numpy. Run from anywhere: tools/darknet_reference.py
"""

import ctypes
import os
import sys
import tempfile

import numpy as np

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CFG_DIR = os.path.join(REPO, "data", "darknet")
OUT_DIR = os.path.join(REPO, "tests", "fixtures", "darknet")
LIBDARKNET = "/usr/lib/darknet/libdarknet.so"
DOG = "/usr/share/darknet/data/dog.jpg"

# Keep in sync with tests/darknet_parity_test.cpp.
WIDTH, HEIGHT = 160, 96
WEIGHT_SEED = 7
INPUT_SEED = 1234
IMAGE_W, IMAGE_H = 300, 200
NMS = 0.45
MIXED_LAYERS = (8, 12, 13)
MODELS = {"yolov2-tiny-voc": 0.1, "yolov3-tiny": 0.85}  # model -> detection threshold


# --- the generator of corgy/io/darknet_weights.h -------------------------------------------------------------
def fmix32(h):
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def uniform(seed, first, count):
    """u in [0, 1) for counters first .. first + count - 1."""
    with np.errstate(over="ignore"):
        k = np.arange(first, first + count, dtype=np.uint64).astype(np.uint32)
        h = fmix32(k * np.uint32(0x9E3779B1) + np.uint32((seed * 0x85EBCA77) & 0xFFFFFFFF))
    return (h >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)


def random_values(seed, first, count, centre, amplitude):
    u = uniform(seed, first, count)
    return np.float32(centre) + np.float32(amplitude) * (np.float32(2) * u - np.float32(1))


# --- a small cfg reader: just enough to know each layer's shape ----------------------------------------------
def read_sections(text):
    sections = []
    for line in text.splitlines():
        line = "".join(line.split())
        if not line or line[0] in "#;":
            continue
        if line[0] == "[":
            sections.append((line[1:-1], {}))
        else:
            key, value = line.split("=", 1)
            sections[-1][1][key] = value
    return sections


def layer_shapes(sections, width, height):
    """(c, h, w) of every layer after [net], for the layer types of the tiny YOLO cfgs."""
    c, h, w = int(sections[0][1]["channels"]), height, width
    shapes = []
    for i, (kind, opt) in enumerate(sections[1:]):
        if kind == "convolutional":
            size, stride = int(opt.get("size", 1)), int(opt.get("stride", 1))
            pad = size // 2 if int(opt.get("pad", 0)) else 0
            c, h, w = int(opt["filters"]), (h + 2 * pad - size) // stride + 1, (w + 2 * pad - size) // stride + 1
        elif kind == "maxpool":
            stride = int(opt.get("stride", 1))
            size = int(opt.get("size", stride))
            padding = size - 1
            h, w = (h + padding - size) // stride + 1, (w + padding - size) // stride + 1
        elif kind == "route":
            sources = [int(v) if int(v) >= 0 else i + int(v) for v in opt["layers"].split(",")]
            c, h, w = sum(shapes[s][0] for s in sources), shapes[sources[0]][1], shapes[sources[0]][2]
        elif kind == "upsample":
            stride = int(opt.get("stride", 2))
            h, w = h * stride, w * stride
        elif kind == "avgpool":
            h, w = 1, 1
        elif kind == "connected":
            c, h, w = int(opt["output"]), 1, 1
        elif kind not in ("region", "yolo", "shortcut", "dropout", "softmax"):
            sys.exit(f"unexpected layer [{kind}]")
        shapes.append((c, h, w))
    return shapes


def random_weights(sections, shapes, seed):
    """The bytes random_darknet_weights() writes: header 0.2.0, seen 0, then each conv's values."""
    chunks = [np.array([0, 2, 0], dtype="<i4").tobytes(), np.zeros(1, dtype="<u8").tobytes()]
    k = 0
    net = sections[0][1]
    previous = (int(net["channels"]), None, None)
    for i, (kind, opt) in enumerate(sections[1:]):
        batch_norm = [(0, 1.0, 0.2), (0, 0.0, 0.1), (0, 1.0, 0.2)]  # scales, means, variances
        if kind == "convolutional":
            n, size, groups = int(opt["filters"]), int(opt.get("size", 1)), int(opt.get("groups", 1))
            fan_in = previous[0] // groups * size * size
            blocks = [(n, 0.0, 0.1)]  # biases
            if int(opt.get("batch_normalize", 0)):
                blocks += [(n, centre, amplitude) for _, centre, amplitude in batch_norm]
            blocks.append((n * fan_in, 0.0, np.sqrt(np.float32(6) / np.float32(fan_in))))
        elif kind == "connected":
            n, fan_in = int(opt["output"]), previous[0] * previous[1] * previous[2]
            blocks = [(n, 0.0, 0.1), (n * fan_in, 0.0, np.sqrt(np.float32(6) / np.float32(fan_in)))]
            if int(opt.get("batch_normalize", 0)):
                blocks += [(n, centre, amplitude) for _, centre, amplitude in batch_norm]
        else:
            blocks = []
        for count, centre, amplitude in blocks:
            chunks.append(random_values(seed, k, count, centre, amplitude).astype("<f4").tobytes())
            k += count
        previous = shapes[i]
    return b"".join(chunks)


def cfg_text(sections, width, height, layers):
    """The cfg with the input size replaced and only the first `layers` layers."""
    lines = []
    for index, (kind, opt) in enumerate(sections[: layers + 1]):
        lines.append(f"[{kind}]")
        for key, value in opt.items():
            if index == 0 and key == "width":
                value = width
            if index == 0 and key == "height":
                value = height
            lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


# --- libdarknet through ctypes (declarations from /usr/lib/darknet/include/darknet.h) ------------------------
class Box(ctypes.Structure):
    _fields_ = [("x", ctypes.c_float), ("y", ctypes.c_float), ("w", ctypes.c_float), ("h", ctypes.c_float)]


class Detection(ctypes.Structure):
    _fields_ = [("bbox", Box), ("classes", ctypes.c_int), ("prob", ctypes.POINTER(ctypes.c_float)),
                ("mask", ctypes.POINTER(ctypes.c_float)), ("objectness", ctypes.c_float), ("sort_class", ctypes.c_int)]


class Image(ctypes.Structure):
    _fields_ = [("w", ctypes.c_int), ("h", ctypes.c_int), ("c", ctypes.c_int), ("data", ctypes.POINTER(ctypes.c_float))]


def open_darknet():
    lib = ctypes.CDLL(LIBDARKNET, ctypes.RTLD_GLOBAL)
    lib.load_network.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
    lib.load_network.restype = ctypes.c_void_p
    lib.set_batch_network.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.network_predict.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float)]
    lib.network_predict.restype = ctypes.POINTER(ctypes.c_float)
    lib.get_network_boxes.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_float, ctypes.c_float,
                                      ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.get_network_boxes.restype = ctypes.POINTER(Detection)
    lib.do_nms_sort.argtypes = [ctypes.POINTER(Detection), ctypes.c_int, ctypes.c_int, ctypes.c_float]
    lib.free_detections.argtypes = [ctypes.POINTER(Detection), ctypes.c_int]
    lib.free_network.argtypes = [ctypes.c_void_p]
    lib.load_image_color.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.load_image_color.restype = Image
    lib.resize_image.argtypes = [Image, ctypes.c_int, ctypes.c_int]
    lib.resize_image.restype = Image
    lib.letterbox_image.argtypes = [Image, ctypes.c_int, ctypes.c_int]
    lib.letterbox_image.restype = Image
    lib.save_image_options.argtypes = [Image, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.free_image.argtypes = [Image]
    return lib


def image_array(im):
    return np.ctypeslib.as_array(im.data, shape=(im.c * im.h * im.w,)).reshape(1, im.c, im.h, im.w).copy()


def predict(lib, cfg_path, weights_path, data):
    net = lib.load_network(cfg_path.encode(), weights_path.encode(), 0)
    lib.set_batch_network(net, 1)
    out = lib.network_predict(net, data.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
    return net, out


def model_fixtures(lib, name, threshold, workdir):
    with open(os.path.join(CFG_DIR, name + ".cfg")) as f:
        sections = read_sections(f.read())
    shapes = layer_shapes(sections, WIDTH, HEIGHT)
    weights_path = os.path.join(workdir, name + ".weights")
    with open(weights_path, "wb") as f:
        f.write(random_weights(sections, shapes, WEIGHT_SEED))
    data = uniform(INPUT_SEED, 0, 3 * WIDTH * HEIGHT)
    heads = [i for i, (kind, _) in enumerate(sections[1:]) if kind in ("region", "yolo")]
    for k, head in enumerate(heads):
        cfg_path = os.path.join(workdir, f"{name}.head{k}.cfg")
        with open(cfg_path, "w") as f:
            f.write(cfg_text(sections, WIDTH, HEIGHT, head))
        net, out = predict(lib, cfg_path, weights_path, data)
        c, h, w = shapes[head - 1]
        raw = np.ctypeslib.as_array(out, shape=(c * h * w,)).reshape(1, c, h, w).copy()
        lib.free_network(net)
        np.save(os.path.join(OUT_DIR, f"{name}.head{k}.npy"), raw)
        print(f"{name} head {k}: {raw.shape}, max |value| {np.abs(raw).max():.3f}")

    cfg_path = os.path.join(workdir, f"{name}.full.cfg")
    with open(cfg_path, "w") as f:
        f.write(cfg_text(sections, WIDTH, HEIGHT, len(sections) - 1))
    net, _ = predict(lib, cfg_path, weights_path, data)
    count = ctypes.c_int(0)
    dets = lib.get_network_boxes(net, IMAGE_W, IMAGE_H, threshold, 0.5, None, 0, ctypes.byref(count))
    classes = int(sections[heads[0] + 1][1]["classes"])
    lib.do_nms_sort(dets, count.value, classes, NMS)
    rows = []
    for i in range(count.value):
        b = dets[i].bbox
        for j in range(classes):
            if dets[i].prob[j] > threshold:
                rows.append((b.x, b.y, b.w, b.h, j, dets[i].prob[j]))
    lib.free_detections(dets, count.value)
    lib.free_network(net)
    rows.sort(key=lambda r: (r[4], -r[5]))
    np.save(os.path.join(OUT_DIR, f"{name}.detections.npy"), np.array(rows, dtype=np.float32).reshape(-1, 6))
    print(f"{name}: {len(rows)} detections above {threshold} after NMS {NMS}")


def mixed_fixtures(lib, workdir):
    with open(os.path.join(OUT_DIR, "mixed.cfg")) as f:
        sections = read_sections(f.read())
    width, height = int(sections[0][1]["width"]), int(sections[0][1]["height"])
    shapes = layer_shapes(sections, width, height)
    weights_path = os.path.join(workdir, "mixed.weights")
    with open(weights_path, "wb") as f:
        f.write(random_weights(sections, shapes, WEIGHT_SEED))
    data = uniform(INPUT_SEED, 0, 3 * width * height)
    for layer in MIXED_LAYERS:
        cfg_path = os.path.join(workdir, f"mixed.{layer}.cfg")
        with open(cfg_path, "w") as f:
            f.write(cfg_text(sections, width, height, layer + 1))
        net, out = predict(lib, cfg_path, weights_path, data)
        c, h, w = shapes[layer]
        values = np.ctypeslib.as_array(out, shape=(c * h * w,)).reshape(1, c, h, w).copy()
        lib.free_network(net)
        np.save(os.path.join(OUT_DIR, f"mixed.layer{layer}.npy"), values)
        print(f"mixed layer {layer}: {values.shape}, max |value| {np.abs(values).max():.3f}")


def image_fixtures(lib, workdir):
    dog = lib.load_image_color(DOG.encode(), 0, 0)
    small = lib.resize_image(dog, 96, 72)
    lib.save_image_options(small, os.path.join(OUT_DIR, "photo").encode(), 0, 0)  # 0 = PNG
    photo = lib.load_image_color(os.path.join(OUT_DIR, "photo.png").encode(), 0, 0)
    np.save(os.path.join(OUT_DIR, "photo.letterbox.npy"), image_array(lib.letterbox_image(photo, 80, 64)))
    np.save(os.path.join(OUT_DIR, "photo.resize.npy"), image_array(lib.resize_image(photo, 50, 40)))
    print("photo.png and its letterbox/resize fixtures written")


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    lib = open_darknet()
    with tempfile.TemporaryDirectory() as workdir:
        for name, threshold in MODELS.items():
            model_fixtures(lib, name, threshold, workdir)
        mixed_fixtures(lib, workdir)
        image_fixtures(lib, workdir)


if __name__ == "__main__":
    main()
