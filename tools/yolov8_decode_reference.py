#!/usr/bin/python3
"""The expected detections of tests/yolov8_decode_test.cpp, computed the way Ultralytics' non_max_suppression does
(multi_label off: each anchor's best class; torchvision.ops.batched_nms per class), independently of corgy.

A seeded YOLOv8-layout output (1, 4 + classes, anchors) of a 96 x 64 network input with 3 classes: a few objects,
each seen by several anchors whose boxes jitter around it and whose scores differ (so that NMS has overlaps to
settle, within a class and across classes), among low-scoring background anchors. The boxes that survive are mapped
back to a 150 x 200 photo through darknet's letterbox (corgy's letterbox_image: scaled to fit with integer division,
centred).

Writes tests/fixtures/yolov8_decode/output.npy (float32, (1, 7, 126)) and expected.json:
    {"net_width", "net_height", "image_width", "image_height", "threshold", "nms",
     "detections": [{"class", "score", "left", "top", "right", "bottom"}, ...]}   most probable first

Run: tools/yolov8_decode_reference.py [--out DIR]   (Debian's python3-torch and python3-torchvision)
"""
import argparse
import json
import pathlib

import numpy as np
import torch
import torchvision

ROOT = pathlib.Path(__file__).resolve().parent.parent
NET_W, NET_H, CLASSES = 96, 64, 3
ANCHORS = (NET_W // 8) * (NET_H // 8) + (NET_W // 16) * (NET_H // 16) + (NET_W // 32) * (NET_H // 32)
IMAGE_W, IMAGE_H = 150, 200
THRESHOLD, NMS = 0.25, 0.45


def make_output(rng):
    out = np.zeros((1, 4 + CLASSES, ANCHORS), np.float32)
    # Background: small boxes anywhere, every class score under the threshold.
    out[0, 0] = rng.uniform(0, NET_W, ANCHORS)
    out[0, 1] = rng.uniform(0, NET_H, ANCHORS)
    out[0, 2:4] = rng.uniform(2, 10, (2, ANCHORS))
    out[0, 4:] = rng.uniform(0, 0.2, (CLASSES, ANCHORS))
    # Objects (cx, cy, w, h, class): two of class 0 overlapping each other a little, one of class 1 on top of the
    # first (suppressed only within its class), one of class 2 near the photo's corner.
    objects = [(36, 25, 20, 24, 0), (48, 30, 18, 26, 0), (38, 26, 16, 22, 1), (62, 50, 12, 14, 2)]
    anchors = rng.permutation(ANCHORS)
    taken = 0
    for cx, cy, w, h, cls in objects:
        for _ in range(6):
            a = anchors[taken]
            taken += 1
            out[0, 0:4, a] = [cx + rng.normal(0, 2), cy + rng.normal(0, 2), w * rng.uniform(0.8, 1.2),
                              h * rng.uniform(0.8, 1.2)]
            out[0, 4:, a] = rng.uniform(0, 0.2, CLASSES)
            out[0, 4 + cls, a] = rng.uniform(0.2, 0.95)  # some under the threshold
            if rng.uniform() < 0.3:  # a runner-up class above the threshold, which multi_label off ignores
                other = (cls + 1) % CLASSES
                out[0, 4 + other, a] = rng.uniform(0.25, out[0, 4 + cls, a])
    return out


def detections(output, net_w=NET_W, net_h=NET_H, image_w=IMAGE_W, image_h=IMAGE_H, threshold=THRESHOLD, nms=NMS):
    """The detections of a YOLOv8 output (1, 4 + classes, anchors) of a net_w x net_h input letterboxed from an
    image_w x image_h photo, most probable first (python/tests/test_yolov8.py calls this on corgy's raw outputs)."""
    x = torch.from_numpy(output[0]).T  # (anchors, 4 + classes)
    scores, classes = x[:, 4:].max(1)
    keep = scores > threshold
    xywh, scores, classes = x[keep, :4], scores[keep], classes[keep]
    xyxy = torch.cat((xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2), 1)
    kept = torchvision.ops.batched_nms(xyxy, scores, classes, nms)
    # darknet's letterbox: the photo scaled to fit (integer division), centred.
    if net_w / image_w < net_h / image_h:
        scaled_w, scaled_h = net_w, image_h * net_w // image_w
    else:
        scaled_w, scaled_h = image_w * net_h // image_h, net_h
    pad_x, pad_y = (net_w - scaled_w) / 2, (net_h - scaled_h) / 2
    gain_x, gain_y = scaled_w / image_w, scaled_h / image_h
    found = []
    for i in kept.tolist():
        x1, y1, x2, y2 = xyxy[i].tolist()
        found.append({"class": int(classes[i]), "score": float(scores[i]), "left": (x1 - pad_x) / gain_x,
                      "top": (y1 - pad_y) / gain_y, "right": (x2 - pad_x) / gain_x, "bottom": (y2 - pad_y) / gain_y})
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "tests" / "fixtures" / "yolov8_decode")
    args = parser.parse_args()
    output = make_output(np.random.default_rng(8))
    args.out.mkdir(parents=True, exist_ok=True)
    np.save(args.out / "output.npy", output)
    expected = {"net_width": NET_W, "net_height": NET_H, "image_width": IMAGE_W, "image_height": IMAGE_H,
                "threshold": THRESHOLD, "nms": NMS, "detections": detections(output)}
    (args.out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    print(f"{args.out}: {len(expected['detections'])} detections")
    for d in expected["detections"]:
        print(f"  class {d['class']} {d['score']:.3f} ({d['left']:.1f}, {d['top']:.1f}, {d['right']:.1f}, "
              f"{d['bottom']:.1f})")


if __name__ == "__main__":
    main()
