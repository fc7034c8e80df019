"""The Keras backend of a training process, chosen once before Keras loads (`components.train.lanes`)."""

from __future__ import annotations

import os
import sys

BACKENDS = ("tensorflow", "jax")


class BackendAlreadyLoaded(RuntimeError):
    """Keras (or TensorFlow, for the JAX lane) was loaded in this process before its lane was chosen."""


def select_backend(backend: str) -> None:
    """Make this process train on `backend`: `KERAS_BACKEND` set before Keras loads; under JAX, TensorFlow blocked
    (`sys.modules["tensorflow"] = None`: importing it raises ImportError, so Keras's and keras-rs's optional uses of
    it stay off). Refused when Keras already loaded another backend, or TensorFlow is loaded for a JAX run."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; one of {BACKENDS}")
    keras = sys.modules.get("keras")
    if keras is not None and keras.backend.backend() != backend:
        raise BackendAlreadyLoaded(f"Keras is already loaded with the {keras.backend.backend()} backend in this "
                                   f"process; a {backend} run needs a process of its own")
    if backend == "jax":
        if sys.modules.get("tensorflow") is not None:
            raise BackendAlreadyLoaded("TensorFlow is already loaded in this process; a JAX run needs a process "
                                       "without it")
        sys.modules["tensorflow"] = None  # type: ignore[assignment]
    os.environ["KERAS_BACKEND"] = backend
