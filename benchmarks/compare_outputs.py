#!/usr/bin/python3
"""Checks that corgy's backends agree with each other in a benchmarks/run.sh run: for every model and batch, the
outputs each model_benchmark run wrote (OUT_DIR/corgy-<model>-b<batch>-<configuration>.<k>.npy) against those of
the naive backend (or, where naive did not run that batch, of blas, or on the GPU machine's zoo of vulkan fp32,
which its fp16 run is checked against): the largest absolute
difference over every output, divided by the largest magnitude of the reference. One JSON object per run."""

import collections
import glob
import json
import os
import re
import sys

import numpy as np

NAME = re.compile(r"corgy-(?P<model>.+)-b(?P<batch>\d+)-(?P<config>.+)\.(?P<k>\d+)\.npy$")
REFERENCES = ("naive-t1-given", "blas-t1-given", "blas-t1-given-pin", "blas-t0-given", "vulkan0-t0-given")


def relative_error(actual, expected):
    if actual.shape != expected.shape or not (np.all(np.isfinite(actual)) and np.all(np.isfinite(expected))):
        return float("inf")  # NaN must not compare as agreement
    return float(np.max(np.abs(actual - expected)) / max(np.max(np.abs(expected)), 1e-30))


def main():
    runs = collections.defaultdict(lambda: collections.defaultdict(dict))
    for path in glob.glob(os.path.join(sys.argv[1], "corgy-*.npy")):
        match = NAME.match(os.path.basename(path))
        runs[(match["model"], int(match["batch"]))][match["config"]][int(match["k"])] = path
    for (model, batch), configs in sorted(runs.items()):
        reference = next((r for r in REFERENCES if r in configs), None)
        if reference is None:
            continue
        expected = [np.load(configs[reference][k]) for k in sorted(configs[reference])]
        for config, files in sorted(configs.items()):
            actual = [np.load(files[k]) for k in sorted(files)]
            error = max(relative_error(a, e) for a, e in zip(actual, expected))
            print(json.dumps({"framework": "check", "model": model, "batch": batch, "config": config,
                              "reference": reference, "max_rel_err": error}))


if __name__ == "__main__":
    main()
