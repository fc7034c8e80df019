"""Tiny configs and hand-written logs for preprocess tests (in-memory Beam: fast, deterministic)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the tests share block_rows.py

from configs.loader import config_from_dict
from configs.slices import PreprocessStepConfig

BASE = {
    "name": "preprocess-test",
    "seed": 1,
    "split": {"eval_days": 1},
    "preprocess": {"runner": "DirectRunner", "direct_running_mode": "in_memory", "direct_num_workers": 1,
                   "output_shards": 1, "max_invalid_fraction": 0.5,
                   # hand-written logs of a few rows: their splits may hold one label class
                   "min_positives_per_task": 0, "min_negatives_per_task": 0},
    "targets": [{"name": "cpu", "kind": "cpu"}],
    "runs_per_target": 1,
}


def make_config(**sections) -> PreprocessStepConfig:
    """BASE with `sections` replaced, validated as a whole config, cut to what the preprocess step receives."""
    raw = json.loads(json.dumps(BASE))
    raw.update(sections)
    return PreprocessStepConfig.of(config_from_dict(raw))


def write_lines(path: Path, lines: list) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(path)




@pytest.fixture(scope="session")
def config_for():
    """`config_for(logs=..., tasks=..., features=...)`: the preprocess slice of a validated tiny config running Beam
    in memory."""
    return make_config


@pytest.fixture(scope="session")
def log_writer():
    """`log_writer(path, lines)`: write JSON lines (dicts are dumped, strings written as they are)."""
    return write_lines

