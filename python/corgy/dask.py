"""Runs corgy models over Dask collections on a `distributed` cluster.

    from distributed import Client
    import corgy.dask

    client = Client("tcp://scheduler:8786")                 # or a LocalCluster
    x = dask.array.from_zarr(...)                           # float32 (N, 1, 28, 28), chunked along N
    y = corgy.dask.predict(client, x, loader="onnx", path="/models/mnist.onnx", backend="blas", threads=4)
    y.compute()                                             # (N, 10)

Each worker loads a model once, the first time one of its tasks needs it, and keeps it for the later blocks and
calls: a `distributed.WorkerPlugin` (corgy._dask_worker) holds the worker's models, one per (loader, path,
options). corgy models cannot be pickled, so what travels to the workers is how to load one: the loader's name and
its arguments. The path is read on the workers, so the model file must be there (a shared or copied folder).

Importing this module needs neither Dask nor `distributed`; calling its functions needs both (Debian:
python3-distributed).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Union

import numpy as np

# The corgy loaders a worker may call, by the name given as `loader`: each takes a path and backend=, threads=,
# and gives a model whose forward returns one array. (Darknet models return one array per head: not here.)
LOADERS = {
    "onnx": "load_onnx",                      # an .onnx file
    "mnist": "load_mnist",                    # a folder such as data/mnist
    "face_detector": "load_face_detector",    # face-api's weights manifest (.json)
    "style_transfer": "load_style_transfer",  # a folder such as data/style_transfer/weights
}

PLUGIN_NAME = "corgy-models"


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """How to load a model on a worker: `corgy.<LOADERS[loader]>(path, backend=backend, threads=threads)`.

    Hashable: the worker plugin keeps one model per distinct spec."""

    loader: str
    path: str
    backend: str = "blas"
    threads: int = 1

    def __post_init__(self):
        if self.loader not in LOADERS:
            raise ValueError(f"unknown loader {self.loader!r}; corgy.dask knows {sorted(LOADERS)}")

    def load(self):
        import corgy

        return getattr(corgy, LOADERS[self.loader])(self.path, backend=self.backend, threads=self.threads)


def register(client) -> None:
    """Registers corgy's worker plugin (which holds the models) on the cluster of `client`, for its present and
    future workers, unless it is registered already. predict and predict_images call it.

    Registering a plugin again under the same name would replace it on every worker and drop the models they
    loaded, so this asks the scheduler first."""
    from ._dask_worker import CorgyModels

    # A lambda, so that cloudpickle sends it by value: the scheduler needs no corgy installed.
    if not client.run_on_scheduler(lambda dask_scheduler: PLUGIN_NAME in dask_scheduler.worker_plugins):
        client.register_worker_plugin(CorgyModels(), name=PLUGIN_NAME)


def predict(client, array, *, loader: str = "onnx", path: str, backend: str = "blas", threads: int = 1,
            timeout: float | None = 300):
    """Runs a model over a Dask array, one forward per chunk, on the workers of `client`.

    array: a dask.array.Array of float32, (N, C, H, W) (or (N, features) for a network that starts with Linear),
        chunked along N; chunks along the other axes are merged first, since a forward needs whole samples.
    loader, path, backend, threads: the model, as ModelSpec loads it on each worker (`threads` is corgy's own
        threads per forward: give each Dask worker one thread and corgy the worker's cores).

    Returns a lazy dask.array.Array of float32 with the model's output per sample: (N, *out) with the input's
    chunks along N; e.g. (N, 10) for an MNIST classifier. One task (on some worker) runs the model on zeros of the
    first chunk's shape to learn `out`, waiting at most `timeout` seconds (a cluster without workers would wait
    forever); that worker keeps the model it loaded for it.
    """
    import dask.array as da

    if not isinstance(array, da.Array):
        raise TypeError(f"predict takes a dask.array.Array, not {type(array).__name__}; "
                        "dask.array.from_array(x, chunks=(n, -1, -1, -1)) makes one from numpy")
    if array.dtype != np.float32:
        raise TypeError(f"the array is {array.dtype}; corgy runs float32 (array.astype(numpy.float32))")
    if array.ndim not in (2, 4):
        raise ValueError(f"the array has rank {array.ndim}; corgy takes (N, C, H, W) or (N, features)")
    spec = ModelSpec(loader, str(path), backend, threads)
    register(client)

    array = array.rechunk({axis: -1 for axis in range(1, array.ndim)})
    from ._dask_worker import output_shape, predict_block

    first = (array.chunks[0][0],) + array.shape[1:]
    out = client.submit(output_shape, spec, first, pure=False).result(timeout=timeout)[1:]

    # map_blocks keeps the chunks along N; the sample axes become the output's, in one chunk each.
    rank = 1 + len(out)
    return array.map_blocks(
        predict_block, spec, dtype=np.float32, chunks=(array.chunks[0],) + tuple((d,) for d in out),
        drop_axis=list(range(rank, array.ndim)), new_axis=list(range(array.ndim, rank)),
        meta=np.empty((0,) * rank, np.float32))


def predict_images(client, images: Union[Iterable[Any], Any], *, loader: str = "onnx", path: str,
                   backend: str = "blas", threads: int = 1, channels: int = 3, npartitions: int | None = None):
    """Runs a model over images, one forward per image (images may differ in size), on the workers of `client`.

    images: a dask.bag.Bag, or a list, of image file paths (PNG, JPEG, PGM...: anything corgy.load_image reads,
        read on the workers) or of float32 arrays (C, H, W) or (1, C, H, W).
    Preprocessing is corgy.load_image's and nothing more: pixels as float32 in [0, 1], (1, channels, H, W),
        channels 1 (grey) or 3 (RGB), at the file's size. A model that wants another size or normalisation needs
        arrays prepared for it (a bag of arrays), or predict on a stacked array.
    npartitions: for a list, how many tasks share it (default: one per image, up to 4 per worker thread).

    Returns a lazy dask.bag.Bag, in the order of `images`, of float32 numpy arrays: each image's model output
    without the batch axis, e.g. (10,) for an MNIST ONNX classifier, (25, ceil(H/32), ceil(W/32)) for the face
    detector.
    """
    import dask.bag as db

    spec = ModelSpec(loader, str(path), backend, threads)
    register(client)
    if not isinstance(images, db.Bag):
        images = list(images)
        if npartitions is None:
            threads_total = sum(client.nthreads().values()) or 1
            npartitions = min(len(images), 4 * threads_total)
        images = db.from_sequence(images, npartitions=max(npartitions, 1))
    from ._dask_worker import predict_image

    return images.map(predict_image, spec, channels)


def worker_stats(client) -> dict[str, dict[str, Any]]:
    """What each worker of `client` did, by worker address: {"corgy": the corgy package it imported,
    "loads": {spec: models loaded}, "blocks": {spec: forwards run}}, specs written as repr(ModelSpec).
    For monitoring, and for the tests (every worker loads a model once)."""
    from ._dask_worker import stats

    return client.run(stats)
