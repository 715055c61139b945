"""What the Python binding adds to a forward: the same models timed through `import corgy` and through the C++
program model_benchmark, in alternating fresh processes, on one backend.

    build/venv/bin/python benchmarks/python_binding.py --build build/release [--backend blas] [--rounds 5]

Per round and model: model_benchmark's median forward (C++, steady_clock around Sequential::forward) and, in a
fresh Python process, the median of `model(x)` timed with perf_counter_ns around each call, for an ordinary numpy
input (scanned for NaN/infinity, then copied into corgy's input buffer), a corgy.empty input (scanned, read in
place) and a corgy.empty input with check_finite=False (the binding alone). Also the floor: a model
whose only layer is a Flatten (no arithmetic), which times the binding and Sequential's own bookkeeping. Prints a
Markdown table of the medians over the rounds, with the CPU and the load average.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]
MODELS = {
    "MNIST b1": {"cpp": ["--mnist", "data/mnist"], "input": (1, 1, 28, 28), "calls": 3000},
    "Tiny YOLO v2-VOC b1": {"cpp": ["--cfg", "data/darknet/yolov2-tiny-voc.cfg", "--random-weights", "1"],
                            "input": (1, 3, 416, 416), "calls": 60},
}

WORKER = r"""
import json, sys, time
import numpy as np
import corgy
name, backend, threads, calls, shape = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), tuple(map(int, sys.argv[5].split(",")))
if name == "MNIST b1":
    model = corgy.load_mnist("data/mnist", backend=backend, threads=threads)
elif name == "floor":
    model = corgy.Sequential(); model.add(corgy.Flatten()); model.set_backend(backend, threads)
else:
    model = corgy.load_darknet("data/darknet/yolov2-tiny-voc.cfg", random_weights_seed=1, backend=backend, threads=threads)
x = np.load(sys.argv[6]) if len(sys.argv) > 6 else np.random.default_rng(0).random(shape, dtype=np.float32)
empty = corgy.empty(x.shape)
empty[...] = x
variants = {"numpy": (x, True), "corgy.empty": (empty, True), "corgy.empty, unchecked": (empty, False)}
result = {}
for kind, (array, check) in variants.items():
    for _ in range(max(calls // 10, 3)):
        model(array, check_finite=check)
    times = []
    for _ in range(calls):
        start = time.perf_counter_ns(); model(array, check_finite=check); times.append(time.perf_counter_ns() - start)
    times.sort()
    result[kind] = times[len(times) // 2] / 1e6
print(json.dumps(result))
"""


def cpp_median_ms(build, name, backend, threads, input_path):
    spec = MODELS[name]
    command = [str(build / "benchmarks" / "model_benchmark"), *spec["cpp"], "--input", str(input_path),
               "--backend", backend, "--threads", str(threads), "--repeat", str(spec["calls"]),
               "--warmup", str(max(spec["calls"] // 10, 3))]
    output = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPOSITORY).stdout
    return json.loads(output)["median_ms"]


def python_medians_ms(name, backend, threads, calls, shape, input_path=None):
    command = [sys.executable, "-c", WORKER, name, backend, str(threads), str(calls), ",".join(map(str, shape))]
    if input_path:
        command.append(str(input_path))
    output = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPOSITORY).stdout
    return json.loads(output.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build/release", type=pathlib.Path)
    parser.add_argument("--backend", default="blas")
    parser.add_argument("--threads", default=1, type=int)
    parser.add_argument("--rounds", default=5, type=int)
    parser.add_argument("--work", default="/tmp/corgy-python-binding", type=pathlib.Path)
    args = parser.parse_args()
    build = args.build if args.build.is_absolute() else REPOSITORY / args.build
    args.work.mkdir(parents=True, exist_ok=True)

    import numpy as np  # the worker's numpy; imported here only to write the shared inputs

    inputs = {}
    for name, spec in MODELS.items():
        inputs[name] = args.work / f"input_{spec['input'][1]}x{spec['input'][2]}.npy"
        np.save(inputs[name], np.random.default_rng(1).random(spec["input"], dtype=np.float32))

    load_before = os.getloadavg()
    kinds = ["numpy", "corgy.empty", "corgy.empty, unchecked"]
    rows = {name: {"cpp": [], **{kind: [] for kind in kinds}} for name in MODELS}
    floor = {kind: [] for kind in kinds}
    for _ in range(args.rounds):
        for name, spec in MODELS.items():
            rows[name]["cpp"].append(cpp_median_ms(build, name, args.backend, args.threads, inputs[name]))
            python = python_medians_ms(name, args.backend, args.threads, spec["calls"], spec["input"], inputs[name])
            for kind, value in python.items():
                rows[name][kind].append(value)
        for kind, value in python_medians_ms("floor", args.backend, args.threads, 20000, (1, 1, 28, 28)).items():
            floor[kind].append(value)
    load_after = os.getloadavg()

    with open("/proc/cpuinfo") as cpuinfo:
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "?")
    print(f"CPU: {cpu}; backend {args.backend}, {args.threads} thread(s); {args.rounds} rounds of fresh processes, "
          f"medians of the per-process medians; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print()
    print("| model | C++ forward (ms) | Python: numpy input (ms) | added (us) | corgy.empty input (ms) | added (us) | "
          "corgy.empty, check_finite=False (ms) | added (us) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, values in rows.items():
        cpp = statistics.median(values["cpp"])
        cells = []
        for kind in kinds:
            python = statistics.median(values[kind])
            cells += [f"{python:.4f}", f"{(python - cpp) * 1e3:+.1f}"]
        print(f"| {name} | {cpp:.4f} | " + " | ".join(cells) + " |")
    print("| Flatten only (no arithmetic: the binding and Sequential's bookkeeping) | - | " +
          " | ".join(f"{statistics.median(floor[kind]):.4f} | " for kind in kinds) + " |")
    print()
    print("per round (ms):", json.dumps({"models": rows, "floor": floor}))


if __name__ == "__main__":
    main()
