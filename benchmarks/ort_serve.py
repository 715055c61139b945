#!/usr/bin/env python3
"""ONNX Runtime behind a minimal KServe v2 HTTP server: the peer of corgy-serve in the serve benchmark
(benchmarks/serve_benchmark.py), where the Python package onnxruntime is importable (the GPU machine).
benchmarks/ort_serve.js is the same server over npm onnxruntime-node, for machines that have only that (this one);
both speak the same subset of the protocol that corgy-serve speaks (docs/serving.md), so one client times all three:

  GET  /v2/health/ready                 200 {"ready": true} (the session is created before the port opens)
  GET  /v2                              server metadata: name, version (ONNX Runtime's), extensions
  POST /v2/models/{model}/infer         FP32 inputs as JSON "data" or binary (the binary tensor data extension:
                                        Inference-Header-Content-Length, parameters.binary_data_size); outputs binary
                                        when the request's parameters.binary_data_output is true, else JSON "data"

One session runs one request at a time (a lock), with ONNX Runtime's intra-op threads on every core: as one
corgy-serve instance runs one forward at a time, and as onnxruntime-node does anyway (its run() is synchronous on
node's one thread). No batching: requests run as they come, which is what the benchmark sets against corgy-serve's
dynamic batching. Listens on 127.0.0.1 only; prints `listening on 127.0.0.1:PORT` first (--port 0 picks a free
port, as corgy-serve --http-port 0); exits on SIGTERM or SIGINT, or by itself after --lifetime seconds, so that a
benchmark that dies cannot leave it running.

  ort_serve.py --onnx M.onnx --model NAME [--threads N] [--port 0] [--lifetime 3600]
"""

import argparse
import http.server
import json
import os
import re
import signal
import sys
import threading

import numpy as np
import onnxruntime

INFER_PATH = re.compile(r"^/v2/models/([A-Za-z0-9_.-]+)/infer$")


class InferenceError(Exception):
    """A request the model cannot take: answered 400 with its message."""


def make_session(path, threads):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def read_inputs(request, binary):
    """{name: float32 array} of a KServe v2 request; `binary` is the body after the JSON header."""
    feeds, offset = {}, 0
    for tensor in request.get("inputs", []):
        if tensor.get("datatype") != "FP32":
            raise InferenceError(f"input {tensor.get('name')!r}: datatype {tensor.get('datatype')!r}, only FP32")
        shape = [int(d) for d in tensor["shape"]]
        size = tensor.get("parameters", {}).get("binary_data_size")
        if size is not None:
            if offset + size > len(binary) or size != 4 * int(np.prod(shape)):
                raise InferenceError(f"input {tensor['name']!r}: binary_data_size {size} does not fit the shape "
                                     "or the body")
            values = np.frombuffer(binary, np.float32, size // 4, offset)
            offset += size
        else:
            values = np.asarray(tensor["data"], np.float32)
        feeds[tensor["name"]] = values.reshape(shape)
    if offset != len(binary):
        raise InferenceError(f"{len(binary) - offset} bytes of binary data that no input declares")
    return feeds


def make_handler(session, model_name):
    lock = threading.Lock()
    output_names = [o.name for o in session.get_outputs()]
    metadata = {"name": "ort_serve.py", "version": f"ONNX Runtime {onnxruntime.__version__} (Python, CPU)",
                "extensions": ["binary_tensor_data"]}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the benchmark's clients hold one connection each
        disable_nagle_algorithm = True  # else a response's last segment waits for the client's delayed ACK

        def log_message(self, *args):  # one line per request would cost more than the request
            pass

        def reply(self, status, header, binary=b""):
            body = json.dumps(header).encode()
            self.send_response(status)
            if binary:
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Inference-Header-Content-Length", str(len(body)))
            else:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) + len(binary)))
            self.end_headers()
            self.wfile.write(body + binary)  # one send (headers went in one already, end_headers)

        def do_GET(self):
            if self.path == "/v2/health/ready":
                self.reply(200, {"ready": True})
            elif self.path == "/v2":
                self.reply(200, metadata)
            else:
                self.reply(404, {"error": f"no route {self.path}"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length)
            match = INFER_PATH.match(self.path)
            if not match or match.group(1) != model_name:
                self.reply(404, {"error": f"no route or model {self.path}"})
                return
            try:
                header_length = int(self.headers.get("Inference-Header-Content-Length", length))
                request = json.loads(body[:header_length])
                feeds = read_inputs(request, memoryview(body)[header_length:])
                with lock:
                    outputs = session.run(output_names, feeds)
            except Exception as e:  # noqa: BLE001: a bad request or an input the model rejects; the server lives on
                self.reply(400, {"error": f"{type(e).__name__}: {e}"})
                return
            as_binary = bool(request.get("parameters", {}).get("binary_data_output"))
            response = {"model_name": model_name, "outputs": []}
            chunks = []
            for name, value in zip(output_names, outputs):
                value = np.ascontiguousarray(value, np.float32)
                tensor = {"name": name, "datatype": "FP32", "shape": list(value.shape)}
                if as_binary:
                    tensor["parameters"] = {"binary_data_size": value.nbytes}
                    chunks.append(value.tobytes())
                else:
                    tensor["data"] = value.ravel().tolist()
                response["outputs"].append(tensor)
            if "id" in request:
                response["id"] = request["id"]
            self.reply(200, response, b"".join(chunks))

    return Handler


class Server(http.server.ThreadingHTTPServer):
    # socketserver's listen backlog is 5: 32 clients connecting at once had connections reset (the GPU machine's
    # first run). corgy-serve's and node's backlogs are larger.
    request_queue_size = 128


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnx", required=True)
    parser.add_argument("--model", required=True, help="the model name of the infer route")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="intra-op threads (default: the cores)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--lifetime", type=float, default=3600, help="seconds before it exits by itself")
    args = parser.parse_args()
    session = make_session(args.onnx, args.threads)
    server = Server(("127.0.0.1", args.port), make_handler(session, args.model))
    server.daemon_threads = True  # open keep-alive connections do not hold the exit
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)

    def stop(*_):
        # shutdown() waits for serve_forever() to return: from another thread, not from the handler's own.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    timer = threading.Timer(args.lifetime, stop)
    timer.daemon = True
    timer.start()
    server.serve_forever()
    server.server_close()
    print("ort_serve.py: stopped", file=sys.stderr)


if __name__ == "__main__":
    main()
