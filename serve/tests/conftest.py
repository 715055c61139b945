"""Fixtures of corgy-serve's tests: the programs of the build (corgy-serve, and corgy-run, the C++ library's own
command line, for expected outputs the committed fixtures do not have), a model repository built from committed
files in a temporary folder, and servers started on a free port of 127.0.0.1 and always killed at the end."""

import json
import pathlib
import queue
import shutil
import signal
import subprocess
import threading
import time

import pytest
import requests

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = REPOSITORY / "tests" / "fixtures"
MNIST = FIXTURES / "onnx" / "mnist_opset17"
DARKNET_CFG = REPOSITORY / "data" / "darknet" / "yolov2-tiny-voc.cfg"
# The darknet model: yolov2-tiny-voc at 96 x 96 with corgy's deterministic random weights (no trained file is
# committed); corgy-run computes its expected outputs with the same seed.
DARKNET_SEED = 7
DARKNET_SIZE = 96
TIMEOUT = 30  # seconds, for every request
MAX_REQUEST_BYTES = 1_000_000  # --max-request-bytes of the module's server


def pytest_addoption(parser):
    parser.addoption("--corgy-serve", default=str(REPOSITORY / "build" / "release" / "serve" / "corgy-serve"),
                     help="the corgy-serve program to test (default: the release build's)")
    parser.addoption("--corgy-run", default=str(REPOSITORY / "build" / "release" / "examples" / "corgy-run"),
                     help="corgy-run of the same build, for expected outputs (default: the release build's)")


@pytest.fixture(scope="session")
def corgy_serve(request):
    path = pathlib.Path(request.config.getoption("--corgy-serve"))
    assert path.is_file(), f"{path} is missing: build it first (scripts/setup.sh's build_release)"
    return path


@pytest.fixture(scope="session")
def corgy_run(request):
    path = pathlib.Path(request.config.getoption("--corgy-run"))
    assert path.is_file(), f"{path} is missing: build it first (scripts/setup.sh's build_release)"
    return path


def write_model(repo, name, files, config=None, versions=("1",)):
    for version in versions:
        folder = repo / name / version
        folder.mkdir(parents=True)
        for target, source in files.items():
            shutil.copyfile(source, folder / target)
    if config is not None:
        (repo / name / "config.json").write_text(json.dumps(config))


@pytest.fixture(scope="session")
def model_repository(tmp_path_factory):
    """mnist (versions 1 and 2: two instances, batches of up to 8), mnist_small_queue (a long batching delay and a
    queue of 8 items, to fill it), yolo (darknet cfg, random weights; every batch padded to 4: one plan to make at
    start instead of three, which under the sanitizers took 30 of the server's 47 s to start)."""
    repo = tmp_path_factory.mktemp("model_repository")
    onnx = {"model.onnx": MNIST / "model.onnx"}
    write_model(repo, "mnist", onnx, {"backend": "blas", "threads": 1, "instances": 2, "max_batch_size": 8,
                                      "max_queue_delay_us": 5000, "max_queue_size": 512}, versions=("1", "2"))
    write_model(repo, "mnist_small_queue", onnx, {"backend": "blas", "threads": 1, "max_batch_size": 8,
                                                  "max_queue_delay_us": 1_000_000, "max_queue_size": 8})
    write_model(repo, "yolo", {"model.cfg": DARKNET_CFG},
                {"backend": "blas", "threads": 1, "max_batch_size": 4, "allowed_batch_sizes": [4],
                 "width": DARKNET_SIZE, "height": DARKNET_SIZE, "random_weights_seed": DARKNET_SEED})
    return repo


class Server:
    """A corgy-serve process on 127.0.0.1 with --http-port 0: the port is read from its first line of stdout."""

    def __init__(self, program, repo, extra_args=()):
        self.log = open(repo.parent / f"corgy-serve-{time.monotonic_ns()}.log", "w+")
        self.process = subprocess.Popen([str(program), "--model-repository", str(repo), "--http-port", "0",
                                         "--http-thread-count", "64", *extra_args],
                                        stdout=subprocess.PIPE, stderr=self.log, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: lines.put(self.process.stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=30)
        except queue.Empty:
            self.kill()
            raise AssertionError("corgy-serve printed no 'listening on' line within 30 s")
        assert line.startswith("listening on 127.0.0.1:"), f"unexpected first line {line!r}: {self.stderr()}"
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def wait_ready(self, seconds=120):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"corgy-serve exited: {self.stderr()}"
            if requests.get(self.url + "/v2/health/ready", timeout=TIMEOUT).status_code == 200:
                return
            time.sleep(0.05)
        raise AssertionError(f"corgy-serve not ready within {seconds} s: {self.stderr()}")

    def stderr(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def kill(self):
        """Stops the server; fails when a sanitizer (a build with CORGY_SANITIZE, scripts/test.sh) reported an error in
        it, however the test went."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.process.stdout.close()
        report = self.stderr()
        self.log.close()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert marker not in report, f"corgy-serve's sanitizer report:\n{report}"


@pytest.fixture
def start_server(corgy_serve):
    """start_server(repo, *args): a started server, killed at the end of the test whatever happens."""
    servers = []

    def start(repo, *extra_args):
        servers.append(Server(corgy_serve, repo, extra_args))
        return servers[-1]

    yield start
    for server in servers:
        server.kill()


@pytest.fixture(scope="module")
def server(corgy_serve, model_repository):
    """One ready server over model_repository for the module, killed at its end."""
    s = Server(corgy_serve, model_repository, ["--max-request-bytes", str(MAX_REQUEST_BYTES)])
    try:
        s.wait_ready()
        yield s
    finally:
        s.kill()
