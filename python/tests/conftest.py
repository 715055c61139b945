"""Shared fixtures of corgy's Python tests: the repository's data and fixtures, the backends to run on, and the C++
command-line program (corgy-run) whose outputs the binding's must equal."""

import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import corgy

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = REPOSITORY / "tests" / "fixtures"
DATA = REPOSITORY / "data"


def pytest_addoption(parser):
    parser.addoption("--corgy-run", default=None,
                     help="the C++ corgy-run program of the same build (scripts/test.sh passes it); the tests that "
                          "compare the binding with the C++ API need it")


@pytest.fixture(scope="session")
def corgy_run(request):
    path = request.config.getoption("--corgy-run")
    if path is None:
        pytest.skip("no --corgy-run given")
    return pathlib.Path(path)


def vulkan_available():
    try:
        return any(True for _ in corgy.vulkan_devices())
    except corgy.Error:
        return False


# Every backend this build has and this machine runs: lavapipe gives a Vulkan device where there is no GPU.
BACKENDS = ["naive", "blas"] + (["vulkan"] if "vulkan" in corgy.backends() and vulkan_available() else [])


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


# The optimised backends, for whole detectors that the naive one takes seconds to run (the C++ tests compare them
# with naive).
@pytest.fixture(params=[b for b in BACKENDS if b != "naive"])
def fast_backend(request):
    return request.param


def max_relative_error(actual, expected):
    scale = max(float(np.abs(expected).max()), 1e-30)
    return float(np.abs(np.asarray(actual, np.float64) - expected).max()) / scale


def run_cpp(corgy_run, args, tmp_path):
    """Runs corgy-run with --output into tmp_path and returns its outputs, in order."""
    prefix = tmp_path / "cpp"
    subprocess.run([str(corgy_run), *args, "--output", str(prefix)], check=True, capture_output=True)
    outputs = []
    k = 0
    while (tmp_path / f"cpp.{k}.npy").exists():
        outputs.append(np.load(tmp_path / f"cpp.{k}.npy"))
        k += 1
    return outputs
