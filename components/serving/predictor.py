"""The model behind the server: a SavedModel's `serving_default` signature, serialized tf.Examples in, one
probability per task out, instances checked against what the signature parses before TensorFlow sees them."""

from __future__ import annotations

import threading

import tensorflow as tf

from components.serving.request import SIGNATURE, BadRequest
from components.serving.signature import InstanceError, check_instances, signature_expectations

INPUT = "examples"


class Predictor:
    """The SavedModel's `serving_default` signature: serialized examples → one probability per task."""

    def __init__(self, model_dir: str, max_concurrent: int = 4):
        self.model_dir = model_dir
        self._loaded = tf.saved_model.load(model_dir)
        if SIGNATURE not in self._loaded.signatures:
            raise ValueError(f"{model_dir}: the SavedModel has no '{SIGNATURE}' signature")
        self._signature = self._loaded.signatures[SIGNATURE]
        self.expectations = signature_expectations(self._signature)
        self._slots = threading.BoundedSemaphore(max_concurrent)  # the rest wait here, not inside TensorFlow

    def predict(self, examples: list[bytes]) -> list[dict[str, float]]:
        try:
            check_instances(examples, self.expectations)
        except InstanceError as error:
            raise BadRequest(str(error)) from None
        try:
            with self._slots:
                outputs = self._signature(**{INPUT: tf.constant(examples, dtype=tf.string)})
        except (tf.errors.InvalidArgumentError, ValueError) as error:
            message = getattr(error, "message", str(error)).strip().splitlines()[0]
            raise BadRequest(f"the model rejected the examples: {message}") from None
        columns = {task: values.numpy().reshape(-1).tolist() for task, values in outputs.items()}
        return [{task: float(values[row]) for task, values in columns.items()} for row in range(len(examples))]
