#!/usr/bin/env python3
"""Checks corgy's Vulkan backend on a real GPU against ONNX Runtime, on the GPU machine of the device tool (which has
Python with numpy and onnxruntime, but neither a compiler nor node): every committed ONNX fixture of
tests/fixtures/onnx (reduced-width models whose ONNX Runtime outputs were computed by tools/onnx_reference.mjs and
committed) and the full-size benchmark exports that benchmarks/gpu_machine_prepare.sh packs (torchvision's zoo, the
modern set and YOLOv8n with seeded weights, at their benchmark sizes), whose references ONNX Runtime computes here,
on the same machine, from the same input file.

    source .gl/env.sh; tools/check_onnx_gpu.py --prebuilt build-gpu/bench [--backends vulkan:0] [--work /tmp/chk]

Passes when every output of every model on every backend is within 1e-4 of the largest magnitude of ONNX Runtime's
output (fp16 backends, `vulkan:0+fp16`, within 2e-2), with the shape ONNX Runtime gives. Prints one line per model
and backend, and a JSON line per check to --results if given.
"""

import argparse
import json
import lzma
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent


def largest_relative_error(expected, actual):
    expected = expected.astype(np.float64)
    actual = actual.astype(np.float64)
    if actual.size != expected.size:
        raise ValueError(f"{actual.size} values, ONNX Runtime gives {expected.size} {list(expected.shape)}")
    actual = actual.reshape(expected.shape)
    return float(np.abs(actual - expected).max() / max(np.abs(expected).max(), 1e-6))


def run_corgy(prebuilt, model, input_path, backend, prefix):
    """One forward of corgy (after its warm-up) writing every graph output as PREFIX.<k>.npy."""
    environment = dict(os.environ)  # the prebuilt libcorgy and ONNX libraries, which the GPU machine lacks
    environment["LD_LIBRARY_PATH"] = ":".join(filter(None, [str(prebuilt / "lib"), os.environ.get("LD_LIBRARY_PATH")]))
    command = [str(prebuilt / "bin/model_benchmark"), "--onnx", str(model), "--input", str(input_path), "--backend", backend,
               "--repeat", "1", "--warmup", "1", "--warmup-ms", "0", "--output", str(prefix)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment)
    if done.returncode != 0:
        raise RuntimeError(f"model_benchmark failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")


def fixture_cases():
    """(name, model, input, expected outputs) of every committed fixture with ONNX Runtime's outputs."""
    for directory in sorted((REPO / "tests/fixtures/onnx").iterdir()):
        outputs = directory / "outputs.json"
        if not outputs.exists():
            continue
        if np.load(directory / "input.npy", mmap_mode="r").ndim != 4:
            # model_benchmark takes NCHW inputs; the two fixtures of (N, F) vectors (a Gemm, a MatMul) run on
            # lavapipe in CI (tests/onnx_models_test.cpp).
            print(f"skip   {directory.name}: its input is not NCHW")
            continue
        count = len(json.loads(outputs.read_text())["outputs"])
        expected = [np.load(directory / f"output_{k}.npy") for k in range(count)]
        yield directory.name, directory / "model.onnx", directory / "input.npy", expected


def benchmark_cases(onnx_folder, work):
    """The packed full-size exports, each with a seeded input at its declared size (batch 1 where free) and ONNX
    Runtime's outputs computed now."""
    import onnxruntime

    for packed in sorted(onnx_folder.glob("*.onnx.xz")):
        name = packed.name.removesuffix(".onnx.xz")
        model = work / f"{name}.onnx"
        if not model.exists():
            with lzma.open(packed) as source, open(model, "wb") as target:
                shutil.copyfileobj(source, target)
        session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        declared = session.get_inputs()[0]
        shape = [d if isinstance(d, int) else 1 for d in declared.shape]
        x = np.random.default_rng(20261126).uniform(0.0, 1.0, shape).astype(np.float32)
        input_path = work / f"{name}-input.npy"
        np.save(input_path, x)
        expected = session.run(None, {declared.name: x})
        yield f"{name} (full size, {'x'.join(map(str, shape))})", model, input_path, expected


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prebuilt", type=pathlib.Path, required=True,
                        help="benchmarks/gpu_machine_prepare.sh's folder (bin/model_benchmark, lib/, onnx/)")
    parser.add_argument("--backends", default="vulkan:0", help="space-separated corgy backends")
    parser.add_argument("--work", type=pathlib.Path, default=pathlib.Path("/tmp/corgy-check-onnx-gpu"))
    parser.add_argument("--results", type=pathlib.Path, help="also write one JSON line per check here")
    parser.add_argument("--no-full-size", action="store_true", help="only the committed fixtures")
    options = parser.parse_args()
    options.work.mkdir(parents=True, exist_ok=True)
    cases = list(fixture_cases())
    if not options.no_full_size:
        cases += list(benchmark_cases(options.prebuilt / "onnx", options.work))
    failed = 0
    records = []
    for name, model, input_path, expected in cases:
        for backend in options.backends.split():
            limit = 2e-2 if backend.endswith("+fp16") else 1e-4
            prefix = options.work / f"{name.split()[0]}-{backend.replace(':', '').replace('+', '-')}"
            try:
                run_corgy(options.prebuilt, model, input_path, backend, prefix)
                worst = max(largest_relative_error(e, np.load(f"{prefix}.{k}.npy")) for k, e in enumerate(expected))
                verdict = "ok" if worst <= limit else "FAILED"
                message = f"max relative error {worst:.2e} (limit {limit:g})"
            except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as error:
                worst, verdict, message = None, "FAILED", str(error)
            failed += verdict != "ok"
            print(f"{verdict:6} {name} on {backend}: {message}", flush=True)
            records.append({"model": name, "backend": backend, "max_rel_err": worst, "limit": limit,
                            "ok": verdict == "ok"})
    if options.results:
        options.results.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"{len(records) - failed} of {len(records)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
