"""The GIL is released during forward: two Python threads with models of their own run at once and get the results
of a single thread; two threads on one model get corgy.Error, never corrupted results."""

import threading

import numpy as np

import corgy
from conftest import DATA, FIXTURES


def test_two_models_in_two_threads():
    digits = np.load(FIXTURES / "mnist" / "input.npy")
    models = [corgy.load_mnist(str(DATA / "mnist"), backend="blas", threads=1) for _ in range(2)]
    expected = models[0](digits, copy=True)
    failures = []

    def work(model):
        try:
            for _ in range(30):
                if not np.array_equal(model(digits), expected):
                    failures.append("wrong result")
        except Exception as error:  # noqa: BLE001 (reported below)
            failures.append(repr(error))

    threads = [threading.Thread(target=work, args=(m,)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert failures == []


def test_one_model_in_two_threads_raises_instead_of_racing():
    digits = np.load(FIXTURES / "mnist" / "input.npy")
    model = corgy.load_mnist(str(DATA / "mnist"), backend="blas", threads=1)
    expected = model(digits, copy=True)
    refused, wrong = [], []
    barrier = threading.Barrier(2)

    def work():
        barrier.wait()
        for _ in range(200):
            try:
                if not np.array_equal(model(digits, copy=True), expected):
                    wrong.append(1)
            except corgy.Error as error:
                assert "another thread" in str(error)
                refused.append(1)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not wrong
    # With the GIL released for each forward, the two threads meet inside the model at least once in 400 calls.
    assert refused
