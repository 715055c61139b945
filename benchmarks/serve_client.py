#!/usr/bin/env python3
"""The load generator of the serve benchmark (benchmarks/serve_benchmark.py), usable by hand against any server of
the KServe v2 protocol with the binary tensor data extension (corgy-serve, benchmarks/ort_serve.py or .js, Triton).

Closed loop: each client holds one keep-alive HTTP connection and sends its next request when the previous answer
has arrived, one input item per request, the items of a pool of distinct inputs in turn (client c sends items c,
c + clients, c + 2 * clients, ... of the pool, so requests in flight at the same time carry different inputs).
Each client first sends --warmup untimed requests; all wait for each other, then the timed phase runs for at most
--duration seconds and at most --max-requests requests over all clients, whichever ends first. Every response is
checked (status 200, the output's shape, its values within --tolerance of the expected output of its own input, as
the largest difference relative to that output's largest magnitude): a batching server that mixed up the items of a
batch fails. Where the server has corgy-serve's /metrics, the mean batch size of the timed phase is read from it.

The clients run as threads, spread over --processes processes (default: half the cores, at most one per client) so
that Python's global interpreter lock does not bound a fast server on a machine with cores to spare. The client
harness runs on the same machine as the server and takes CPU from it: on a small machine it is part of what is
measured.

  serve_client.py --url http://127.0.0.1:8000 --model mnist --input-name input --inputs pool.npy \\
      --expected expected.npy [--clients 1 8 32] [--duration 10] [--max-requests 100000] [--warmup 2]

One JSON object per client count on stdout.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's BLAS is not used here; its threads would only compete

import argparse  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import re  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.parse  # noqa: E402

import numpy as np  # noqa: E402

BARRIER_SECONDS = 600  # the longest the clients wait for each other (a slow server's warm-up included)
REQUEST_SECONDS = 120  # the longest one request may take


class Connection(http.client.HTTPConnection):
    """A keep-alive connection with Nagle's algorithm off, also when it reconnects (corgy-serve closes a connection
    after 1000 requests; http.client opens the next one by itself)."""

    def connect(self):
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Pool:
    """The inputs (K, ...) and their expected outputs (K, ...), and each input's request body, built once."""

    def __init__(self, inputs, expected, input_name, tolerance):
        self.inputs, self.expected, self.tolerance = inputs, expected, tolerance
        self.scale = np.abs(expected.reshape(len(expected), -1)).max(axis=1)
        self.bodies = []
        for item in inputs:
            raw = np.ascontiguousarray(item[None], np.float32).tobytes()
            header = json.dumps({"inputs": [{"name": input_name, "shape": [1, *item.shape], "datatype": "FP32",
                                             "parameters": {"binary_data_size": len(raw)}}],
                                 "parameters": {"binary_data_output": True}}).encode()
            self.bodies.append((header + raw, len(header)))

    def check_distinct(self):
        """A response swapped with another request's must fail the check: every two expected outputs differ by more
        than ten times the tolerance."""
        flat = self.expected.reshape(len(self.expected), -1)
        for k in range(len(flat)):
            gaps = np.abs(flat - flat[k]).max(axis=1) / self.scale[k]
            gaps[k] = np.inf
            if gaps.min() <= 10 * self.tolerance:
                raise SystemExit(f"expected outputs {k} and {int(gaps.argmin())} are too alike to tell a mix-up")

    def check(self, k, status, header_length, body):
        """None when the response is item k's expected output, else what is wrong with it."""
        if status != 200:
            return f"status {status}: {body[:200]!r}"
        if header_length is None:
            return "no Inference-Header-Content-Length: the output is not binary"
        header = json.loads(body[:int(header_length)])
        output = header["outputs"][0]
        want = [1, *self.expected.shape[1:]]
        if output["shape"] != want:
            return f"output shape {output['shape']}, expected {want}"
        values = np.frombuffer(body, np.float32, int(np.prod(want)), int(header_length))
        error = float(np.abs(values - self.expected[k].ravel()).max() / self.scale[k])
        if not error <= self.tolerance:  # NaN fails too
            return f"item {k}: largest difference {error:.2e} of the output's largest magnitude"
        return None


def client(pool, url, index, clients, args, barrier, start, results):
    """One client: warm-up, wait for the others, then timed requests; appends its outcome to `results`."""
    latencies, errors, sent = [], [], 0
    end = None
    try:
        connection = Connection(url.hostname, url.port, timeout=REQUEST_SECONDS)
        path = f"/v2/models/{args.model}/infer"

        def send(n):
            k = (index + n * clients) % len(pool.bodies)
            body, header_length = pool.bodies[k]
            began = time.monotonic()
            connection.request("POST", path, body, {"Inference-Header-Content-Length": str(header_length),
                                                    "Content-Type": "application/octet-stream"})
            response = connection.getresponse()
            data = response.read()
            took = time.monotonic() - began
            problem = pool.check(k, response.status, response.getheader("Inference-Header-Content-Length"), data)
            if problem:
                errors.append(f"client {index}, request {n}: {problem}")
            return took

        for n in range(args.warmup):
            send(n)
        # The wait for the others can outlast a server's keep-alive timeout (corgy-serve's 2 s, node's 5 s), which
        # would close this connection under the first timed request: closed here, it opens again on that request.
        connection.close()
        barrier.wait(BARRIER_SECONDS)  # everyone warmed up; the parent reads /metrics
        barrier.wait(BARRIER_SECONDS)  # the parent has started the clock
        deadline = start.value + args.duration
        # This client's share of --max-requests (the first clients take the remainder).
        quota = args.max_requests // clients + (index < args.max_requests % clients)
        while sent < quota and time.monotonic() < deadline:
            latencies.append(send(args.warmup + sent))
            sent += 1
        end = time.monotonic()
        connection.close()
    except Exception as e:  # noqa: BLE001: reported as the client's error; the others must not wait for it
        errors.append(f"client {index}: {type(e).__name__}: {e}")
        barrier.abort()
    results.append({"latencies": latencies, "errors": errors, "end": end})


def process_main(pool, url, indices, clients, args, barrier, start, queue):
    """The clients `indices`, as threads of this process; their outcomes go to `queue`."""
    results = []
    threads = [threading.Thread(target=client, args=(pool, url, i, clients, args, barrier, start, results))
               for i in indices]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue.put(results)


METRICS = ("corgy_inference_exec_total", "corgy_inference_items_total", "corgy_inference_compute_duration_us_sum",
           "corgy_inference_queue_duration_us_sum", "corgy_inference_queue_duration_us_count")


def scrape_batches(url, model):
    """{metric: value} of METRICS for the model from corgy-serve's /metrics, summed over versions; None for a server
    without them."""
    try:
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        text = response.read().decode()
        connection.close()
    except OSError:
        return None
    if response.status != 200:
        return None
    totals = {}
    for name in METRICS:
        values = re.findall(rf'^{name}{{model="{re.escape(model)}",[^}}]*}} (\S+)$', text, re.M)
        if not values:
            return None
        totals[name] = sum(float(v) for v in values)
    return totals


def run(pool, url, clients, args):
    """One client count: the timed phase's requests/s, latency percentiles and mean batch size, as a dict."""
    context = multiprocessing.get_context("fork")  # the children share the pool's request bodies
    processes = max(1, min(clients, args.processes))
    barrier = context.Barrier(clients + 1)
    start = context.Value("d", 0.0)
    queue = context.Queue()
    workers = [context.Process(target=process_main,
                               args=(pool, url, range(p, clients, processes), clients, args, barrier, start, queue))
               for p in range(processes)]
    for worker in workers:
        worker.start()
    outcome = []
    before = after = None
    try:
        barrier.wait(BARRIER_SECONDS)
        before = scrape_batches(url, args.model)
        start.value = time.monotonic()
        barrier.wait(BARRIER_SECONDS)
    except threading.BrokenBarrierError:
        pass  # a client failed: its error is in its outcome
    for _ in workers:  # bounded: a child that died without a word fails the run instead of hanging it
        outcome += queue.get(timeout=2 * BARRIER_SECONDS + args.duration + REQUEST_SECONDS)
    for worker in workers:
        worker.join()
    after = scrape_batches(url, args.model)
    latencies = np.array([t for o in outcome for t in o["latencies"]]) * 1e3
    errors = [e for o in outcome for e in o["errors"]]
    ends = [o["end"] for o in outcome if o["end"] is not None]
    seconds = max(ends) - start.value if ends and start.value else None
    record = {"clients": clients, "requests": int(latencies.size), "seconds": seconds, "errors": len(errors),
              "first_errors": errors[:3], "processes": processes, "warmup_per_client": args.warmup,
              "duration_limit_s": args.duration, "max_requests": args.max_requests}
    if latencies.size and seconds:
        p50, p99 = np.percentile(latencies, [50, 99])
        record |= {"requests_per_s": latencies.size / seconds, "p50_ms": float(p50), "p99_ms": float(p99),
                   "mean_ms": float(latencies.mean()), "max_ms": float(latencies.max())}
    if before and after and after["corgy_inference_exec_total"] > before["corgy_inference_exec_total"]:
        delta = {name: after[name] - before[name] for name in METRICS}
        forwards = delta["corgy_inference_exec_total"]
        record["mean_batch"] = delta["corgy_inference_items_total"] / forwards
        record["forwards"] = int(forwards)
        # Where a request's time goes inside the server: its batch's forward, and its wait in the queue before it.
        record["mean_forward_ms"] = delta["corgy_inference_compute_duration_us_sum"] / forwards / 1e3
        record["mean_queue_ms"] = (delta["corgy_inference_queue_duration_us_sum"]
                                  / delta["corgy_inference_queue_duration_us_count"] / 1e3)
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="http://HOST:PORT of the server")
    parser.add_argument("--model", required=True)
    parser.add_argument("--input-name", required=True)
    parser.add_argument("--inputs", required=True, help=".npy of K distinct inputs, (K, ...) without the batch axis")
    parser.add_argument("--expected", required=True, help=".npy of their expected outputs, (K, ...)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--duration", type=float, default=10, help="seconds of the timed phase, at most")
    parser.add_argument("--max-requests", type=int, default=100_000, help="requests of the timed phase, at most")
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests of each client first")
    parser.add_argument("--tolerance", type=float, default=1e-3)
    parser.add_argument("--processes", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    args = parser.parse_args()
    pool = Pool(np.load(args.inputs), np.load(args.expected), args.input_name, args.tolerance)
    pool.check_distinct()
    url = urllib.parse.urlsplit(args.url)
    failed = False
    for clients in args.clients:
        record = run(pool, url, clients, args)
        print(json.dumps(record), flush=True)
        failed |= record["errors"] > 0
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
