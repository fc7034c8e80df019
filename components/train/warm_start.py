"""Warm start from the champion: dense weights where shapes match, embedding rows by what each row means.

Today's vocabulary differs from the champion's (new ads, new users, a different frequency order), so table rows
are matched by key, not by index:

    vocabulary feature   row ↔ "t:<token>"            (the same token keeps its row wherever its id moved)
                         OOV bucket k of n ↔ "o:k/n"   (same bucket count → same hash bucket)
    list feature         row 0 ↔ "pad", then as above, shifted by one
    hashed / bucketized  row r of R ↔ "r:r/R"          (same bucket count → the same bucket)
    shared table         row r of R ↔ "r:r/R"

A key the champion has keeps the champion's row; a new key keeps its fresh initial row. Dense weights (cross
layers, MLP, heads) are copied by Keras variable path where the shape is unchanged. Optimizer slots start fresh.

The state lives beside the exported SavedModel (`<saved_model>/warm_start/`), so whatever registry holds the
model (a local directory, the Vertex Model Registry's artifact URI) holds it too.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from components.contracts.manifest import Manifest
from components.contracts.run_summary import TableCarryOver, WarmStartSummary

log = logging.getLogger(__name__)

STATE_DIR = "warm_start"
TABLES_FILE = "tables.npz"
DENSE_FILE = "dense.npz"
KEYS_FILE = "row_keys.json"


class WarmStartUnavailable(RuntimeError):
    """The champion directory holds no warm-start state (exported by an older adrank, or not a model dir)."""


# -- row keys --------------------------------------------------------------------------------------
def table_row_keys(model, manifest: Manifest, vocabularies: dict[str, list[bytes]]) -> dict[str, list[str]]:
    """Per embedding table, what each row means (see the module docstring)."""
    features_of: dict[str, list[str]] = {}
    for name, config in model.feature_configs.items():
        features_of.setdefault(config.table.name, []).append(name)
    kinds = {f.name: f.kind for f in manifest.features}
    keys = {}
    for table, features in features_of.items():
        rows = model.feature_configs[features[0]].table.vocabulary_size
        feature = features[0]
        if len(features) > 1 or feature not in vocabularies:
            keys[table] = [f"r:{r}/{rows}" for r in range(rows)]
            continue
        tokens = [f"t:{token.decode('utf-8', 'backslashreplace')}" for token in vocabularies[feature]]
        padding = ["pad"] if kinds.get(feature) == "categorical_list" else []
        oov = rows - len(padding) - len(tokens)
        keys[table] = padding + tokens + [f"o:{k}/{oov}" for k in range(oov)]
    return keys


def _dense_variables(model) -> list:
    tables = {id(v) for v in model.embedding.weights}
    return [v for v in model.weights if id(v) not in tables]


# -- write (at export) and apply (before the first step) -------------------------------------------
def write_state(model, manifest: Manifest, vocabularies: dict[str, list[bytes]], export_dir: str | Path) -> Path | None:
    """Write the champion-to-be's tables, row keys and dense weights under `<export_dir>/warm_start/`."""
    if not model.embedding.warm_startable:
        return None
    directory = Path(export_dir) / STATE_DIR
    directory.mkdir(parents=True, exist_ok=True)
    np.savez(directory / TABLES_FILE, allow_pickle=False, **model.embedding.table_values())
    np.savez(directory / DENSE_FILE, allow_pickle=False, **{f"w{i}": np.asarray(v.value) for i, v in enumerate(_dense_variables(model))})
    (directory / KEYS_FILE).write_text(json.dumps({
        "tables": table_row_keys(model, manifest, vocabularies),
        "dense_paths": [v.path for v in _dense_variables(model)],
    }))
    return directory


def apply_state(model, manifest: Manifest, vocabularies: dict[str, list[bytes]], source_dir: str) -> WarmStartSummary:
    """Copy the champion's rows (by key) and dense weights (by path, same shape) into `model`'s variables."""
    directory = Path(source_dir) / STATE_DIR
    if not (directory / KEYS_FILE).is_file():
        raise WarmStartUnavailable(f"{source_dir} has no {STATE_DIR}/ state (exported by an older adrank?)")
    if not model.embedding.warm_startable:
        raise WarmStartUnavailable(f"warm start into {type(model.embedding).__name__} tables is not supported")
    saved = json.loads((directory / KEYS_FILE).read_text())
    champion_tables = np.load(directory / TABLES_FILE)
    champion_dense = np.load(directory / DENSE_FILE)
    new_keys = table_row_keys(model, manifest, vocabularies)

    carried = []
    values = model.embedding.table_values()
    changed = {}
    for name, value in values.items():
        rows = int(value.shape[0])
        old_keys = saved["tables"].get(name)
        copied = 0
        if old_keys is not None and name in champion_tables.files:
            old = champion_tables[name]
            if old.shape[1] == value.shape[1]:
                old_row = {key: index for index, key in enumerate(old_keys)}
                targets, sources = [], []
                for row, key in enumerate(new_keys[name]):
                    if key in old_row:
                        targets.append(row)
                        sources.append(old_row[key])
                if targets:
                    value = value.copy()
                    value[np.array(targets)] = old[np.array(sources)]
                    changed[name], copied = value, len(targets)
        carried.append(TableCarryOver(table=name, rows=rows, copied=copied, new=rows - copied))
    model.embedding.assign_tables(changed)

    paths = {path: index for index, path in enumerate(saved["dense_paths"])}
    copied_dense, skipped = 0, []
    for variable in _dense_variables(model):
        index = paths.get(variable.path)
        if index is None:
            skipped.append(variable.path)
            continue
        old = champion_dense[f"w{index}"]
        if tuple(old.shape) != tuple(variable.shape):
            skipped.append(variable.path)
            continue
        variable.assign(np.asarray(old).astype(variable.dtype))
        copied_dense += 1
    summary = WarmStartSummary(source=str(source_dir), tables=carried, dense_copied=copied_dense,
                               dense_skipped=skipped)
    log.info(summary.describe())
    return summary
