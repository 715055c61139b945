"""corgy-serve over HTTP: every endpoint, JSON and binary tensors, outputs against the committed ONNX Runtime fixtures
(and corgy-run where none is committed), dynamic batching under concurrency, a full queue, hostile requests, and
SIGTERM under load. Every request has a timeout; every server is killed at the end (conftest.py)."""

import json
import re
import signal
import socket
import subprocess
import threading
import time

import numpy as np
import pytest
import requests

from conftest import DARKNET_CFG, DARKNET_SEED, DARKNET_SIZE, MAX_REQUEST_BYTES, MNIST, TIMEOUT, write_model

MNIST_INPUT = np.load(MNIST / "input.npy")  # (2, 1, 28, 28)
MNIST_OUTPUT = np.load(MNIST / "output_0.npy")  # (2, 10), computed by ONNX Runtime


def assert_close(actual, expected):
    """Within 1e-4 relative, the absolute part scaled by the largest expected value."""
    expected = np.asarray(expected, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float32).reshape(expected.shape), expected, rtol=1e-4,
                               atol=1e-4 * float(np.abs(expected).max()))


def json_request(x, name="input", outputs=None, binary_output=False):
    body = {"inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]}
    if outputs is not None:
        body["outputs"] = [{"name": o, "parameters": {"binary_data": binary_output}} for o in outputs]
    return body


def binary_request(x, name="input", outputs=("output",), binary_output=True):
    raw = np.ascontiguousarray(x, dtype="<f4").tobytes()
    header = json.dumps({"inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(raw)}}],
                         "outputs": [{"name": o, "parameters": {"binary_data": binary_output}} for o in outputs]})
    return header.encode() + raw, len(header.encode())


def post_binary(url, body, header_length, session=requests):
    return session.post(url, data=body, timeout=TIMEOUT, headers={
        "Inference-Header-Content-Length": str(header_length), "Content-Type": "application/octet-stream"})


def decode_response(response):
    """{output name: array} of an infer response, JSON or binary."""
    assert response.status_code == 200, response.text
    if "Inference-Header-Content-Length" in response.headers:
        length = int(response.headers["Inference-Header-Content-Length"])
        header, tail = json.loads(response.content[:length]), response.content[length:]
    else:
        header, tail = response.json(), b""
    arrays, offset = {}, 0
    for output in header["outputs"]:
        assert output["datatype"] == "FP32"
        size = output.get("parameters", {}).get("binary_data_size")
        if size is None:
            values = np.array(output["data"], dtype=np.float32)
        else:
            values = np.frombuffer(tail[offset:offset + size], dtype="<f4")
            offset += size
        arrays[output["name"]] = values.reshape(output["shape"])
    assert offset == len(tail)
    return arrays


def infer_url(server, model="mnist", version=None):
    return f"{server.url}/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/infer"


def corgy_run_outputs(corgy_run, args, x, folder):
    """The outputs corgy-run (the C++ library) computes for input x on the blas backend."""
    np.save(folder / "input.npy", x)
    subprocess.run([str(corgy_run), *args, "--input", str(folder / "input.npy"), "--backend", "blas", "--threads", "1",
                    "--output", str(folder / "out")], check=True, capture_output=True, timeout=120)
    return np.load(folder / "out.0.npy")


@pytest.fixture(scope="module")
def distinct(corgy_run, tmp_path_factory):
    """400 distinct MNIST inputs (the fixture's two images plus noise) and corgy-run's outputs for them."""
    x = MNIST_INPUT[np.arange(400) % 2] + np.random.default_rng(27).normal(0, 0.2, (400, 1, 28, 28))
    x = x.astype(np.float32)
    y = corgy_run_outputs(corgy_run, ["--onnx", str(MNIST / "model.onnx")], x, tmp_path_factory.mktemp("distinct"))
    y = y.reshape(400, 10)
    # Swapped responses must show: every pair of expected outputs differs far beyond the tolerance.
    gaps = np.abs(y[:, None, :] - y[None, :, :]).max(axis=2) + np.eye(400) * 1e9
    assert gaps.min() > 1e-2
    return x, y


def test_health_and_server_metadata(server):
    live = requests.get(server.url + "/v2/health/live", timeout=TIMEOUT)
    assert live.status_code == 200 and live.json() == {"live": True}
    ready = requests.get(server.url + "/v2/health/ready", timeout=TIMEOUT)
    assert ready.status_code == 200 and ready.json() == {"ready": True}
    meta = requests.get(server.url + "/v2", timeout=TIMEOUT)
    assert meta.status_code == 200
    assert meta.json()["name"] == "corgy-serve" and meta.json()["version"]
    assert "binary_tensor_data" in meta.json()["extensions"]


def test_model_metadata_and_ready(server):
    expected = {"name": "mnist", "versions": ["1", "2"], "platform": "corgy_onnx",
                "inputs": [{"name": "input", "datatype": "FP32", "shape": [-1, 1, 28, 28]}],
                "outputs": [{"name": "output", "datatype": "FP32", "shape": [-1, 10]}],
                "parameters": {"max_batch_size": 8}}
    for path in ("/v2/models/mnist", "/v2/models/mnist/versions/1", "/v2/models/mnist/versions/2"):
        response = requests.get(server.url + path, timeout=TIMEOUT)
        assert response.status_code == 200 and response.json() == expected
        ready = requests.get(server.url + path + "/ready", timeout=TIMEOUT)
        assert ready.status_code == 200 and ready.json() == {"name": "mnist", "ready": True}
    yolo = requests.get(server.url + "/v2/models/yolo", timeout=TIMEOUT).json()
    assert yolo["platform"] == "corgy_darknet"
    assert yolo["inputs"] == [{"name": "input", "datatype": "FP32", "shape": [-1, 3, DARKNET_SIZE, DARKNET_SIZE]}]
    assert yolo["outputs"] == [{"name": "output_0", "datatype": "FP32", "shape": [-1, 125, 3, 3]}]
    for path in ("/v2/models/nope", "/v2/models/nope/ready", "/v2/models/mnist/versions/3",
                 "/v2/models/mnist/versions/3/ready"):
        response = requests.get(server.url + path, timeout=TIMEOUT)
        assert response.status_code == 404 and "error" in response.json(), path


def test_infer_json(server):
    response = requests.post(infer_url(server), json=json_request(MNIST_INPUT) | {"id": "r1"}, timeout=TIMEOUT)
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert body["model_name"] == "mnist" and body["model_version"] == "2" and body["id"] == "r1"
    assert body["outputs"][0]["shape"] == [2, 10]
    assert_close(decode_response(response)["output"], MNIST_OUTPUT)
    # Nested data (row-major arrays) and a version named in the path.
    nested = json_request(MNIST_INPUT[:1])
    nested["inputs"][0]["data"] = MNIST_INPUT[:1].tolist()
    response = requests.post(infer_url(server, version="1"), json=nested, timeout=TIMEOUT)
    assert response.json()["model_version"] == "1"
    assert_close(decode_response(response)["output"], MNIST_OUTPUT[:1])


def test_infer_binary(server):
    body, length = binary_request(MNIST_INPUT)
    response = post_binary(infer_url(server), body, length)
    header_length = int(response.headers["Inference-Header-Content-Length"])
    header = json.loads(response.content[:header_length])
    assert header["outputs"][0]["parameters"]["binary_data_size"] == 2 * 10 * 4
    assert len(response.content) == header_length + 80
    assert_close(decode_response(response)["output"], MNIST_OUTPUT)
    # Binary input, JSON output; and JSON input with every output binary (parameters.binary_data_output).
    body, length = binary_request(MNIST_INPUT, binary_output=False)
    response = post_binary(infer_url(server), body, length)
    assert "Inference-Header-Content-Length" not in response.headers
    assert_close(decode_response(response)["output"], MNIST_OUTPUT)
    request = json_request(MNIST_INPUT) | {"parameters": {"binary_data_output": True}}
    response = requests.post(infer_url(server), json=request, timeout=TIMEOUT)
    assert "Inference-Header-Content-Length" in response.headers
    assert_close(decode_response(response)["output"], MNIST_OUTPUT)


def test_curl(server, tmp_path):
    (tmp_path / "request.json").write_text(json.dumps(json_request(MNIST_INPUT)))
    result = subprocess.run(["curl", "--silent", "--show-error", "--fail", "--max-time", str(TIMEOUT),
                             "-H", "Content-Type: application/json", "--data-binary", f"@{tmp_path / 'request.json'}",
                             infer_url(server)], check=True, capture_output=True, text=True, timeout=TIMEOUT + 5)
    output = json.loads(result.stdout)["outputs"][0]
    assert output["name"] == "output" and output["shape"] == [2, 10]
    assert_close(output["data"], MNIST_OUTPUT)


def test_darknet(server, corgy_run, tmp_path):
    x = np.random.default_rng(3).random((3, 3, DARKNET_SIZE, DARKNET_SIZE), dtype=np.float32)
    expected = corgy_run_outputs(corgy_run, ["--cfg", str(DARKNET_CFG), "--random-weights", str(DARKNET_SEED),
                                             "--width", str(DARKNET_SIZE), "--height", str(DARKNET_SIZE)], x, tmp_path)
    body, length = binary_request(x, outputs=("output_0",))
    outputs = decode_response(post_binary(infer_url(server, "yolo"), body, length))
    assert outputs["output_0"].shape == (3, 125, 3, 3)
    assert_close(outputs["output_0"], expected)


def test_a_list_of_backends_gives_each_instance_its_own(start_server, tmp_path):
    """"backend": ["naive", "blas"] loads two instances, one on each (the form that puts an instance on each GPU);
    an "instances" that disagrees with the list stops the server at start, naming both."""
    repo = tmp_path / "repo"
    write_model(repo, "mnist", {"model.onnx": MNIST / "model.onnx"},
                {"backend": ["naive", "blas"], "threads": 1, "max_batch_size": 2})
    server = start_server(repo)
    server.wait_ready()
    for _ in range(4):  # each instance answers some of them, batched or not
        body, length = binary_request(MNIST_INPUT[:1])
        assert_close(decode_response(post_binary(infer_url(server), body, length))["output"], MNIST_OUTPUT[:1])
    assert "backend naive,blas, 2 instance(s)" in server.stderr()
    bad = tmp_path / "bad"
    write_model(bad, "mnist", {"model.onnx": MNIST / "model.onnx"}, {"backend": ["blas", "blas"], "instances": 3})
    result = subprocess.run([str(server.process.args[0]), "--model-repository", str(bad), "--http-port", "0"],
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 1 and '"instances" is 3 but "backend" lists 2 backends' in result.stderr


def test_allowed_batch_sizes_pad_batches_and_bad_lists_stop_the_server(start_server, tmp_path):
    """"allowed_batch_sizes": [2, 8]: a request of one item runs padded to 2, one of three padded to 8, and each gets
    its own items' outputs; a list that does not end with max_batch_size (or does not increase) stops the server at
    start, naming the key."""
    repo = tmp_path / "repo"
    write_model(repo, "mnist", {"model.onnx": MNIST / "model.onnx"},
                {"backend": "blas", "threads": 1, "max_batch_size": 8, "allowed_batch_sizes": [2, 8]})
    server = start_server(repo)
    server.wait_ready()
    inputs, outputs = np.concatenate([MNIST_INPUT] * 4), np.concatenate([MNIST_OUTPUT] * 4)
    for items in (1, 3, 1, 8):
        body, length = binary_request(inputs[:items])
        assert_close(decode_response(post_binary(infer_url(server), body, length))["output"], outputs[:items])
    for sizes in ([2, 4], [4, 2, 8], [0, 8]):
        bad = tmp_path / f"bad{len(sizes)}{sizes[0]}"
        write_model(bad, "mnist", {"model.onnx": MNIST / "model.onnx"},
                    {"backend": "blas", "max_batch_size": 8, "allowed_batch_sizes": sizes})
        result = subprocess.run([str(server.process.args[0]), "--model-repository", str(bad), "--http-port", "0"],
                                capture_output=True, text=True, timeout=TIMEOUT)
        assert result.returncode == 1 and '"allowed_batch_sizes"' in result.stderr, result.stderr


def batch_metrics(server, model, version):
    """(forwards, forwards of one item, successes) of a model version, from /metrics."""
    text = requests.get(server.url + "/metrics", timeout=TIMEOUT).text
    labels = f'model="{model}",version="{version}"'
    values = {}
    for line in text.splitlines():
        if not line.startswith("#") and labels in line:
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return (values[f"corgy_inference_batch_size_count{{{labels}}}"],
            values[f'corgy_inference_batch_size_bucket{{{labels},le="1"}}'],
            values[f"corgy_inference_request_success_total{{{labels}}}"])


def test_concurrent_requests_are_batched_and_answered_in_order(server, distinct):
    x, y = distinct
    forwards_before, singles_before, successes_before = batch_metrics(server, "mnist", "2")
    failures = []
    requests_sent = [0]
    lock = threading.Lock()

    def client(t):
        with requests.Session() as session:
            for r in range(25):
                k = (t * 25 + r) % 400
                n = 2 if r % 5 == 4 else 1  # some requests of two items, which count two in a batch
                items = [k, (k + 1) % 400][:n]
                try:
                    if r % 2:
                        body, length = binary_request(x[items])
                        response = post_binary(infer_url(server), body, length, session)
                    else:
                        response = session.post(infer_url(server), json=json_request(x[items]), timeout=TIMEOUT)
                    assert_close(decode_response(response)["output"], y[items])
                    with lock:
                        requests_sent[0] += 1
                except Exception as e:  # noqa: BLE001: recorded, asserted below
                    failures.append(f"thread {t} request {r}: {e!r}")

    threads = [threading.Thread(target=client, args=(t,)) for t in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    assert requests_sent[0] == 400
    forwards, singles, successes = batch_metrics(server, "mnist", "2")
    assert successes - successes_before == 400
    assert forwards - forwards_before < 400, "no request was batched with another"
    assert (forwards - forwards_before) - (singles - singles_before) > 0, "no forward ran more than one item"


def test_full_queue_is_refused_with_503(server):
    """mnist_small_queue: batches of 8, a queue of 8 items, 0.6 s of batching delay. A request of 5 items starts a
    batch that waits for more; a second of 5 does not fit that batch and waits in the queue (5 items); a third finds
    5 + 5 > 8 queued and is refused at once. Both accepted requests are answered in full."""
    x = np.concatenate([MNIST_INPUT] * 3)[:5]
    expected = np.concatenate([MNIST_OUTPUT] * 3)[:5]
    results = {}

    def send(key):
        results[key] = requests.post(infer_url(server, "mnist_small_queue"), json=json_request(x), timeout=TIMEOUT)

    first = threading.Thread(target=send, args=("first",))
    first.start()
    time.sleep(0.15)
    second = threading.Thread(target=send, args=("second",))
    second.start()
    time.sleep(0.15)
    send("third")
    first.join(timeout=TIMEOUT)
    second.join(timeout=TIMEOUT)
    assert results["third"].status_code == 503 and "queue is full" in results["third"].json()["error"]
    assert_close(decode_response(results["first"])["output"], expected)
    assert_close(decode_response(results["second"])["output"], expected)


def raw_http(port, data, half_close=False):
    """Sends raw bytes and returns the response: its head and Content-Length bytes of body, or what came before the
    server closed the connection (or 15 s passed). With half_close, ends the sending side first: httplib then takes
    the client for gone and may answer nothing."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        s.settimeout(15)
        received = b""
        try:
            while chunk := s.recv(65536):
                received += chunk
                head, separator, body = received.partition(b"\r\n\r\n")
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
                if separator and length and len(body) >= int(length.group(1)):
                    break
        except (socket.timeout, ConnectionResetError):
            pass
        return received


def test_hostile_requests_get_4xx_and_the_server_lives_on(server):
    url = infer_url(server)
    good = json_request(MNIST_INPUT[:1])

    def post(body, status, *words, headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        response = requests.post(url, data=body, headers=headers or {}, timeout=TIMEOUT)
        assert response.status_code == status, response.text
        message = response.json()["error"]
        for word in words:
            assert word in message, message
        return message

    post(b"{\"inputs\": [", 400, "invalid JSON")
    post(b"\xff\xfe not json", 400, "invalid JSON")
    post({"inputs": [good["inputs"][0] | {"datatype": "INT32"}]}, 400, "INT32", "FP32")
    wrong = np.zeros((1, 3, 28, 28), np.float32)
    post(json_request(wrong), 400, "'input'", "[1, 3, 28, 28]", "[-1, 1, 28, 28]")
    post(json_request(np.zeros((9, 1, 28, 28), np.float32)), 400, "max_batch_size")
    post(json_request(MNIST_INPUT[:1], name="image"), 400, "'image'", "'input'")
    post(json_request(MNIST_INPUT[:1], outputs=["probabilities"]), 400, "'probabilities'")
    huge = {"inputs": [{"name": "input", "shape": [1, 1, 28, 1_000_000_000_000], "datatype": "FP32", "data": [1]}]}
    post(huge, 400, "limit")
    overflow = {"inputs": [{"name": "input", "shape": [2**62, 2**62, 28, 28], "datatype": "FP32", "data": [1]}]}
    post(overflow, 400, "limit")
    post({"inputs": [good["inputs"][0] | {"data": [1.0] * 10}]}, 400, "10 values")
    post({"inputs": [good["inputs"][0] | {"data": ["a"] * 784}]}, 400, "string")
    post({"inputs": []}, 400, "inputs")
    post(b"[" * 100_000 + b"]" * 100_000, 400)  # deep nesting: an error, not a stack overflow

    # Binary: truncated data, a header length past the body, a header length that leaves bytes over, garbage.
    body, length = binary_request(MNIST_INPUT[:1])
    headers = {"Inference-Header-Content-Length": str(length)}
    post(body[:-100], 400, "truncated", headers=headers)
    post(body, 400, "Inference-Header-Content-Length", headers={"Inference-Header-Content-Length": str(len(body) + 1)})
    post(body + b"\0" * 8, 400, "binary", headers=headers)
    post(body, 400, headers={"Inference-Header-Content-Length": "12abc"})
    post(body, 400, "invalid JSON", headers={"Inference-Header-Content-Length": str(len(body))})
    declared = json.dumps({"inputs": [{"name": "input", "shape": [1, 1, 28, 28], "datatype": "FP32",
                                       "parameters": {"binary_data_size": 2**40}}]}).encode()
    post(declared, 400, "binary_data_size", headers={"Inference-Header-Content-Length": str(len(declared))})

    # Unknown model, version, route; a body over the server's limit.
    for path, method in (("/v2/models/nope/infer", "post"), ("/v2/models/mnist/versions/7/infer", "post"),
                         ("/v2/nothing", "get"), ("/v2/models/mnist/infer", "get")):
        response = getattr(requests, method)(server.url + path, json=good, timeout=TIMEOUT)
        assert response.status_code == 404 and response.json()["error"], path
    too_big = requests.post(url, data=b"x" * (MAX_REQUEST_BYTES + 1), timeout=TIMEOUT)
    assert too_big.status_code == 413 and "--max-request-bytes" in too_big.json()["error"]
    # A Content-Length longer than what is sent (then the client stops sending), and one shorter.
    short = json.dumps(good).encode()
    answer = raw_http(server.port, b"POST /v2/models/mnist/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      b"\r\nContent-Length: %d\r\n\r\n" % (len(short) + 500) + short, half_close=True)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400"), answer[:100]
    answer = raw_http(server.port, b"POST /v2/models/mnist/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      b"\r\nContent-Length: %d\r\n\r\n" % (len(short) - 9) + short)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:100]
    answer = raw_http(server.port, b"GARBAGE\r\n\r\n")
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400"), answer[:100]

    assert requests.get(server.url + "/v2/health/live", timeout=TIMEOUT).status_code == 200
    response = requests.post(url, json=good, timeout=TIMEOUT)
    assert_close(decode_response(response)["output"], MNIST_OUTPUT[:1])


def test_metrics_text_format(server):
    text = requests.get(server.url + "/metrics", timeout=TIMEOUT)
    assert text.status_code == 200 and text.headers["Content-Type"].startswith("text/plain")
    lines = text.text.splitlines()
    for family, kind in (("corgy_inference_request_success_total", "counter"),
                         ("corgy_inference_request_failure_total", "counter"),
                         ("corgy_inference_queue_duration_us", "histogram"),
                         ("corgy_inference_compute_duration_us", "histogram"),
                         ("corgy_inference_batch_size", "histogram")):
        assert f"# TYPE {family} {kind}" in lines
    failures = [line for line in lines if line.startswith('corgy_inference_request_failure_total{model="mnist"')]
    assert failures, lines
    assert any(float(line.rsplit(" ", 1)[1]) > 0 for line in failures)  # the hostile requests counted


def test_sigterm_under_load_loses_no_accepted_request(start_server, distinct, tmp_path):
    """Eight clients send requests in a loop; SIGTERM arrives mid-way. Every request either completes with its own
    correct output or fails to connect (refused, or closed before it was read); the server exits 0."""
    x, y = distinct
    repo = tmp_path / "repo"
    write_model(repo, "mnist", {"model.onnx": MNIST / "model.onnx"},
                {"backend": "blas", "threads": 1, "instances": 2, "max_batch_size": 8, "max_queue_delay_us": 2000})
    server = start_server(repo)
    server.wait_ready()
    outcomes, bad = [], []
    started = threading.Event()

    def client(t):
        with requests.Session() as session:
            for r in range(500):
                k = (t * 500 + r) % 400
                try:
                    response = session.post(infer_url(server), json=json_request(x[k:k + 1]), timeout=TIMEOUT)
                except requests.ConnectionError:
                    outcomes.append("refused")
                    return
                try:
                    assert_close(decode_response(response)["output"], y[k:k + 1])
                    outcomes.append("ok")
                    started.set()
                except Exception as e:  # noqa: BLE001: recorded, asserted below
                    bad.append(f"thread {t} request {r}: {response.status_code} {e!r}")
                    return

    threads = [threading.Thread(target=client, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    assert started.wait(timeout=TIMEOUT)
    time.sleep(0.3)
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=30) == 0, server.stderr()
    for thread in threads:
        thread.join(timeout=TIMEOUT)
    assert not any(thread.is_alive() for thread in threads)
    assert bad == []
    assert outcomes.count("ok") > 8 and outcomes.count("refused") == 8  # each client stopped at a refusal
    assert "finishing the requests in flight" in server.stderr()
