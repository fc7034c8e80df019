"""A trained model as plain arrays: what a training process hands to the export step that writes the serving
SavedModel in another process (the JAX lane trains without TensorFlow; a TensorFlow process exports).

    <dir>/model.json   {"class": model class, "config": model.get_config(), "dense_paths": [...], "policy": ...}
    <dir>/dense.npz    every weight but the tables, in the model's order (w0, w1, ...), float32
    <dir>/tables.npz   every embedding table by name, [rows, dim], float32

Keras weights are backend-neutral: the exporting process rebuilds the same model class from the config with its own
lane's tables (`components.train.export.rebuilt_model`) and checks every dense weight's path and shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from foundation.gcs_mount import container_path

TRAINED_WEIGHTS_DIR = "trained"  # under a training step's model output: what its export step reads
MODEL_FILE = "model.json"
DENSE_FILE = "dense.npz"
TABLES_FILE = "tables.npz"


@dataclass
class TrainedWeights:
    model_class: str
    config: dict[str, Any]
    dense_paths: list[str]
    dense: list[np.ndarray]
    tables: dict[str, np.ndarray]

    def write(self, directory: str | Path) -> Path:
        directory = Path(container_path(str(directory)))
        directory.mkdir(parents=True, exist_ok=True)
        np.savez(directory / DENSE_FILE, allow_pickle=False, **{f"w{i}": value for i, value in enumerate(self.dense)})
        np.savez(directory / TABLES_FILE, allow_pickle=False, **self.tables)
        (directory / MODEL_FILE).write_text(json.dumps(
            {"class": self.model_class, "config": self.config, "dense_paths": self.dense_paths}, indent=1))
        return directory

    @classmethod
    def read(cls, directory: str | Path) -> TrainedWeights:
        directory = Path(container_path(str(directory)))
        if not (directory / MODEL_FILE).is_file():
            raise FileNotFoundError(f"{directory} holds no trained weights ({MODEL_FILE}): was it a JAX train step's "
                                    "model output?")
        described = json.loads((directory / MODEL_FILE).read_text())
        with np.load(directory / DENSE_FILE) as dense, np.load(directory / TABLES_FILE) as tables:
            return cls(described["class"], described["config"], list(described["dense_paths"]),
                       [dense[f"w{i}"] for i in range(len(dense.files))], {name: tables[name] for name in tables.files})


def trained_weights(model, dense_values: list[Any], tables: dict[str, np.ndarray]) -> TrainedWeights:
    """`model`'s class and config with its dense weights' values (`dense_values`, in `dense_variables` order) and its
    tables."""
    dense = dense_variables(model)
    if len(dense) != len(dense_values):
        raise ValueError(f"{len(dense_values)} dense values for {len(dense)} dense weights")
    return TrainedWeights(type(model).__name__, model.get_config(), [v.path for v in dense],
                          [np.asarray(value, np.float32) for value in dense_values],
                          {name: np.asarray(value, np.float32) for name, value in tables.items()})


def dense_variables(model) -> list:
    """Every weight of `model` but its embedding tables, in the model's order."""
    tables = {id(v) for v in model.embedding.weights}
    return [v for v in model.weights if id(v) not in tables]
