"""The worker side of corgy.dask: the plugin that holds each worker's models, and the functions its tasks run.

A separate module because it imports `distributed` (WorkerPlugin) at once, which corgy.dask must not: a worker
unpickling the plugin or a task imports this module, and so does corgy.dask when one of its functions is called.
"""

from __future__ import annotations

import collections
import os
import threading

import numpy as np
from distributed import WorkerPlugin, get_worker

import corgy

from .dask import PLUGIN_NAME, ModelSpec


class CorgyModels(WorkerPlugin):
    """Loads each ModelSpec once per worker, on first use, and runs the worker's forwards through it.

    A corgy model runs one forward at a time (another thread gets corgy.Error), and a worker's threads share its
    models, so each model has a lock: forwards of one model on one worker take turns."""

    def setup(self, worker):
        # State made here, not in __init__: the plugin travels pickled, and models cannot be pickled.
        self.lock = threading.Lock()   # guards the dicts below
        self.models = {}               # ModelSpec -> (model, its lock)
        self.loads = collections.Counter()
        self.blocks = collections.Counter()

    def teardown(self, worker):
        for model, _ in self.models.values():
            model.close()
        self.models.clear()

    def model(self, spec: ModelSpec):
        """The worker's model for `spec` and its lock, loading it the first time."""
        with self.lock:
            if spec not in self.models:
                # Loading under the lock: two first tasks of one spec must not both load it.
                self.models[spec] = (spec.load(), threading.Lock())
                self.loads[spec] += 1
            return self.models[spec]

    def forward(self, spec: ModelSpec, x: np.ndarray, count: bool = True) -> np.ndarray:
        model, lock = self.model(spec)
        with lock:
            # copy=True: a forward's output is a view of the model's buffer, which its next forward overwrites.
            y = model(np.ascontiguousarray(x), copy=True)
        if count:
            with self.lock:
                self.blocks[spec] += 1
        return y


def plugin() -> CorgyModels:
    return get_worker().plugins[PLUGIN_NAME]


def predict_block(block: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """One chunk of corgy.dask.predict: (n, C, H, W) -> (n, *out)."""
    return plugin().forward(spec, block)


def output_shape(spec: ModelSpec, shape: tuple) -> tuple:
    """The output shape of the model for an input of `shape` (run on zeros; not counted as a block)."""
    return plugin().forward(spec, np.zeros(shape, np.float32), count=False).shape


def predict_image(image, spec: ModelSpec, channels: int) -> np.ndarray:
    """One image of corgy.dask.predict_images: a path (read by corgy.load_image as (1, channels, H, W) in [0, 1])
    or a float32 array (C, H, W) or (1, C, H, W); returns the output without its batch axis."""
    if isinstance(image, (str, bytes)) or hasattr(image, "__fspath__"):
        x = corgy.load_image(os.fsdecode(image), channels)
    else:
        x = np.asarray(image)
        if x.ndim == 3:
            x = x[None]
    return plugin().forward(spec, x)[0]


def stats(dask_worker) -> dict:
    """For corgy.dask.worker_stats (client.run passes the worker as dask_worker)."""
    models = dask_worker.plugins.get(PLUGIN_NAME)
    if models is None:
        return {"corgy": corgy.__file__, "loads": {}, "blocks": {}}
    with models.lock:
        return {"corgy": corgy.__file__, "loads": {repr(s): n for s, n in models.loads.items()},
                "blocks": {repr(s): n for s, n in models.blocks.items()}}
