"""corgy.dask on a two-process local `distributed` cluster (loopback only): the blocks and images run on both
workers, each worker loads its model once, and the results equal the single-process corgy run of the same model
(itself tested against ONNX Runtime in test_models.py)."""

import subprocess
import sys

import numpy as np
import pytest

import corgy
import corgy.dask
from conftest import DATA, FIXTURES, max_relative_error

try:
    import dask.array as da
    import distributed
except ImportError:  # the test of the import alone still runs
    distributed = None
needs_distributed = pytest.mark.skipif(distributed is None, reason="corgy.dask needs Dask's `distributed` (Debian: "
                                       "python3-distributed, in scripts/setup.sh's CORGY_PYTHON_PACKAGES)")

MNIST_ONNX = FIXTURES / "onnx" / "mnist_opset17" / "model.onnx"
TIMEOUT = 60  # seconds, for every wait on the cluster


@pytest.fixture(scope="module")
def client():
    # Two worker processes of one thread each, as a real cluster of two machines would be; they start with this
    # interpreter (sys.executable: the venv's, when the tests run in one) and this sys.path, so they import the
    # corgy under test.
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       host="127.0.0.1", timeout=TIMEOUT)
    try:
        client = distributed.Client(cluster, timeout=TIMEOUT)
        try:
            client.wait_for_workers(2, timeout=TIMEOUT)
            yield client
        finally:
            client.close(timeout=TIMEOUT)
    finally:
        cluster.close(timeout=TIMEOUT)


def mnist_batch(n):
    """n MNIST inputs: the fixture's two digits, repeated and made distinct by small deterministic noise."""
    x = np.load(FIXTURES / "onnx" / "mnist_opset17" / "input.npy")
    noise = np.random.default_rng(27).uniform(-0.05, 0.05, (n,) + x.shape[1:])
    return np.ascontiguousarray(np.clip(np.resize(x, (n,) + x.shape[1:]) + noise, 0, 1), np.float32)


def test_import_does_not_need_distributed():
    # corgy.dask imports Dask only when called, so the package works without it.
    code = "import sys, corgy.dask; assert 'distributed' not in sys.modules and 'dask' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT)


@needs_distributed
def test_predict_array_on_two_workers(client):
    x = mnist_batch(1000)
    expected = corgy.load_onnx(str(MNIST_ONNX), backend="blas", threads=1)(x, copy=True)

    array = da.from_array(x, chunks=(125, 1, 28, 28))  # 8 blocks for 2 workers
    y = corgy.dask.predict(client, array, loader="onnx", path=str(MNIST_ONNX), backend="blas", threads=1,
                           timeout=TIMEOUT)
    assert y.shape == (1000, 10) and y.dtype == np.float32 and y.chunks == ((125,) * 8, (10,))
    result = client.compute(y).result(timeout=TIMEOUT)
    assert result.shape == expected.shape
    # Equal up to rounding: blas tunes its algorithms per process, so a worker may sum in another order.
    assert max_relative_error(result, expected) <= 1e-6

    # A second call reuses the workers' models.
    again = client.compute(corgy.dask.predict(client, array[:250], loader="onnx", path=str(MNIST_ONNX),
                                              backend="blas", threads=1, timeout=TIMEOUT)).result(timeout=TIMEOUT)
    assert max_relative_error(again, expected[:250]) <= 1e-6

    stats = corgy.dask.worker_stats(client)
    assert len(stats) == 2
    spec = repr(corgy.dask.ModelSpec("onnx", str(MNIST_ONNX), "blas", 1))
    for worker in stats.values():
        assert worker["corgy"] == corgy.__file__  # the workers run the corgy under test
        assert worker["loads"][spec] == 1
        assert worker["blocks"].get(spec, 0) >= 1, stats
    assert sum(w["blocks"][spec] for w in stats.values()) == 8 + 2


@needs_distributed
def test_predict_images_on_two_workers(client):
    # MNIST's five sample digits (28 x 28 PNGs) through the trained classifier, read by corgy.load_image on the workers.
    paths = sorted(str(p) for p in (DATA / "mnist" / "samples").glob("*.png"))
    assert len(paths) == 5
    model = corgy.load_mnist(str(DATA / "mnist"), backend="blas", threads=1)
    expected = [model(corgy.load_image(p, 1), copy=True)[0] for p in paths]

    bag = corgy.dask.predict_images(client, paths, loader="mnist", path=str(DATA / "mnist"), backend="blas",
                                    threads=1, channels=1)
    outputs = client.compute(bag).result(timeout=TIMEOUT)
    assert len(outputs) == len(paths)
    for output, want in zip(outputs, expected):
        assert output.shape == (10, 1, 1)
        assert max_relative_error(output, want) <= 1e-6
    # The labels are in the file names (digit_K_label_L.png); the classifier gets these five right.
    assert [int(o.argmax()) for o in outputs] == [int(p.rsplit("_", 1)[1][:-4]) for p in paths]

    # Arrays work as well as paths: the same images, loaded here.
    arrays = [corgy.load_image(p, 1)[0] for p in paths]
    outputs = client.compute(corgy.dask.predict_images(client, arrays, loader="mnist", path=str(DATA / "mnist"),
                                                       backend="blas", threads=1)).result(timeout=TIMEOUT)
    assert all(max_relative_error(o, w) <= 1e-6 for o, w in zip(outputs, expected))

    spec = repr(corgy.dask.ModelSpec("mnist", str(DATA / "mnist"), "blas", 1))
    stats = corgy.dask.worker_stats(client)
    assert all(w["loads"].get(spec) == 1 for w in stats.values()), stats
    assert sum(w["blocks"].get(spec, 0) for w in stats.values()) == 2 * len(paths)
    assert all(w["blocks"].get(spec, 0) >= 1 for w in stats.values()), stats


@needs_distributed
def test_bad_input(client):
    with pytest.raises(TypeError, match="float32"):
        corgy.dask.predict(client, da.zeros((4, 1, 28, 28), chunks=2), path=str(MNIST_ONNX))
    with pytest.raises(ValueError, match="unknown loader"):
        corgy.dask.predict(client, da.zeros((4, 1, 28, 28), dtype=np.float32, chunks=2), loader="darknet",
                           path=str(MNIST_ONNX))
