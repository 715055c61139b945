#!/usr/bin/env python3
"""The serve benchmark of one model (benchmarks/serve_benchmark.sh runs it per model and machine): three servers of
the same ONNX file, each started fresh for every repetition, loaded by serve_client.py at each client count:

  corgy-batching   corgy-serve with dynamic batching: max_batch_size --max-batch-size, max_queue_delay_us
                   --queue-delay-us, allowed_batch_sizes --allowed-batch-sizes (default: the server's, the powers of
                   two up to max_batch_size; docs/serving.md)
  corgy-batch1     corgy-serve with max_batch_size 1: every request its own forward, as it arrives
  onnxruntime      ONNX Runtime behind benchmarks/ort_serve.py (or .js): one session, its intra-op threads on every
                   core, one request at a time, no batching

corgy-serve runs on --backend (one name, or a comma-separated list: one instance per backend, such as
vulkan:0,vulkan:1 for an instance on each of two GPUs). The expected outputs (--expected) come from corgy-run on the
blas backend; every response of every server is checked against them (serve_client.py). The servers' order is the
same in every repetition; the load average is recorded after each server.

  serve_benchmark.py --model mnist --onnx mnist.onnx --inputs pool.npy --expected expected.npy \\
      --corgy-serve build/release/serve/corgy-serve [--backend blas] [--ort 'node benchmarks/ort_serve.js'] \\
      [--max-batch-size 32] [--queue-delay-us 0] [--allowed-batch-sizes 1 2 4 8 16 32] [--clients 1 8 32] [--duration 10] \\
      [--max-requests 100000] [--repetitions 3] [--work DIR]

JSON lines on stdout: one per (repetition, server, client count), serve_client.py's record with the server's
configuration; exits 1 when any response was wrong or any server failed (after running the rest).
"""

import argparse
import ctypes
import json
import os
import pathlib
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import numpy as np

import serve_client

READY_SECONDS = 900  # corgy-serve plans (and times) its convolutions at load: Tiny YOLO at batch 32 on 2 cores
LIFETIME_SECONDS = 3600  # the ONNX Runtime servers exit by themselves after this, whatever happens here


def die_with_parent():
    """A server must not outlive the benchmark, even one killed with SIGKILL: the kernel sends it SIGTERM when its
    parent dies (prctl PR_SET_PDEATHSIG)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


class Server:
    """A server process that prints `listening on 127.0.0.1:PORT` first, as corgy-serve --http-port 0 does."""

    def __init__(self, command, log_path):
        self.log = open(log_path, "w")
        self.started = time.monotonic()
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                        preexec_fn=die_with_parent)
        lines = queue.Queue()
        threading.Thread(target=lambda: lines.put(self.process.stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=120)
        except queue.Empty:
            self.stop()
            raise RuntimeError(f"{command[0]}: no 'listening on' line within 120 s (log {log_path})")
        if not line.startswith("listening on 127.0.0.1:"):
            self.stop()
            raise RuntimeError(f"{command[0]}: first line {line!r} (log {log_path})")
        self.url = f"http://127.0.0.1:{int(line.strip().rsplit(':', 1)[1])}"

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=30) as response:
            return json.load(response)

    def wait_ready(self):
        """Seconds from the start to /v2/health/ready answering 200 (loading and planning the model)."""
        deadline = self.started + READY_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with status {self.process.returncode} (log {self.log.name})")
            try:
                self.get("/v2/health/ready")
                return time.monotonic() - self.started
            except OSError:  # not listening yet, or 400 while loading
                time.sleep(0.1)
        raise RuntimeError(f"the server was not ready within {READY_SECONDS} s (log {self.log.name})")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        self.log.close()


def corgy_repository(work, name, model, onnx, backends, config):
    """work/name/<model>/1/model.onnx (a link to the file) and its config.json."""
    version = pathlib.Path(work) / name / model / "1"
    version.mkdir(parents=True, exist_ok=True)
    link = version / "model.onnx"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(os.path.abspath(onnx))
    config = {"backend": backends if len(backends) > 1 else backends[0], "threads": 0} | config
    (version.parent / "config.json").write_text(json.dumps(config))
    return version.parent.parent


def server_commands(args):
    """(server name, its configuration tags, a function work -> command) of every server of the run."""
    backends = args.backend.split(",")
    # Written out even when it is corgy-serve's default (the powers of two below max_batch_size, then it), so that
    # the records say what ran.
    allowed = args.allowed_batch_sizes or [1 << k for k in range(args.max_batch_size.bit_length())
                                           if 1 << k < args.max_batch_size] + [args.max_batch_size]
    batching = {"max_batch_size": args.max_batch_size, "max_queue_delay_us": args.queue_delay_us,
                "allowed_batch_sizes": allowed, "max_queue_size": max(64, 2 * max(args.clients))}
    batch1 = {"max_batch_size": 1, "max_queue_delay_us": 0, "max_queue_size": max(64, 2 * max(args.clients))}

    def corgy(name, config):
        def command(work):
            repo = corgy_repository(work, f"repo-{name}", args.model, args.onnx, backends, config)
            # A connection holds an HTTP thread while open: at least as many threads as clients, for them all to be
            # served (and batched) at once.
            return [args.corgy_serve, "--model-repository", str(repo), "--http-port", "0",
                    "--http-thread-count", str(max(64, 2 * max(args.clients)))]
        return (name, {"backend": args.backend, **config}, command)

    servers = [corgy("corgy-batching", batching), corgy("corgy-batch1", batch1)]
    if args.ort:
        threads = os.cpu_count()
        servers.append(("onnxruntime", {"backend": "cpu", "threads": threads}, lambda work: shlex.split(args.ort) + [
            "--onnx", args.onnx, "--model", args.model, "--threads", str(threads), "--port", "0",
            "--lifetime", str(LIFETIME_SECONDS)]))
    return servers


def warm_shader_cache(args):
    """Starts each corgy-serve configuration once, untimed: on the H100 a process that compiled its Vulkan pipelines
    while the driver's shader cache was cold ran 3-4x slower all its life (benchmarks/run.sh, docs/vulkan.md); the
    timed processes then find the cache warm, as every start of a deployed server but its very first does. Returns
    the number of failures."""
    failures = 0
    for name, _, command in server_commands(args):
        if name.startswith("corgy") and name in args.servers.split(","):
            server = None
            try:
                server = Server(command(args.work), pathlib.Path(args.work) / f"{args.model}-{name}-warm.log")
                server.wait_ready()
            except (RuntimeError, OSError) as e:
                print(f"{args.model} {name} warming the shader cache: {e}", file=sys.stderr)
                failures += 1
            finally:
                if server:
                    server.stop()
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="the model's name in the results and the routes")
    parser.add_argument("--onnx", required=True)
    parser.add_argument("--input-name", default="input")
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--expected", required=True)
    parser.add_argument("--corgy-serve", required=True)
    parser.add_argument("--backend", default="blas")
    parser.add_argument("--ort", help="the ONNX Runtime server's command (without its arguments); none: no peer")
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--queue-delay-us", type=int, default=0)
    parser.add_argument("--allowed-batch-sizes", type=int, nargs="+")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--max-requests", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--tolerance", type=float, default=1e-3)
    parser.add_argument("--processes", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--servers", default="corgy-batching,corgy-batch1,onnxruntime",
                        help="which of the servers run (a check of one by hand)")
    parser.add_argument("--work", default=".")
    args = parser.parse_args()

    pool = serve_client.Pool(np.load(args.inputs), np.load(args.expected), args.input_name, args.tolerance)
    pool.check_distinct()
    failures = 0
    if any(backend.startswith("vulkan") for backend in args.backend.split(",")):
        failures += warm_shader_cache(args)
    for repetition in range(1, args.repetitions + 1):
        for name, tags, command in server_commands(args):
            if name not in args.servers.split(","):
                continue
            base = {"framework": "serve", "model": args.model, "server": name, "round": repetition, **tags}
            log = pathlib.Path(args.work) / f"{args.model}-{name}-{repetition}.log"
            server = None
            try:
                server = Server(command(args.work), log)
                ready_s = server.wait_ready()
                # The peer's version for the tables' header (corgy's own is the machine record's commit).
                version = server.get("/v2").get("version", "") if name == "onnxruntime" else ""
                print(f"[{time.strftime('%H:%M:%S')}] {args.model} round {repetition}: {name} ready in {ready_s:.1f} s",
                      file=sys.stderr, flush=True)
                for clients in args.clients:
                    record = serve_client.run(pool, urllib.parse.urlsplit(server.url), clients, args)
                    extra = {"version": version} if version else {}
                    print(json.dumps(base | extra | {"ready_s": ready_s} | record), flush=True)
                    failures += record["errors"] > 0
                    for error in record["first_errors"]:
                        print(f"{args.model} {name} {clients} clients: {error}", file=sys.stderr)
            except (RuntimeError, OSError) as e:
                print(f"{args.model} {name} round {repetition}: {e}", file=sys.stderr)
                failures += 1
            finally:
                if server:
                    server.stop()
            load = " ".join(open("/proc/loadavg").read().split()[:3])
            print(json.dumps({"framework": "load", "round": repetition, "loadavg": load}), flush=True)
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
