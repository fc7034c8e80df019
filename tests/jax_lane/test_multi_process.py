"""The JAX lane over several processes (multi-host) through the same trainer: two processes on 127.0.0.1 joined by
`jax.distributed` from the CLUSTER_SPEC Vertex gives every replica (gloo collectives, one CPU device each), against
one process with two simulated devices, on the same examples.

Stated tolerance: both are the same computation over the same global batches (one input stream per device, read by
the process that owns the device), up to the order of float sums in the collectives: the eval log-loss agrees to 1e-6
relative and every weight to 1e-5 absolute."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from config_fixture import small_config, with_targets

from components.train.trained_weights import TRAINED_WEIGHTS_DIR, TrainedWeights
from configs.slices import TrainStepConfig
from foundation.local_ports import free_local_ports

ROOT = Path(__file__).resolve().parents[2]
SWEPT = {"name": "cpu-jax", "kind": "cpu", "backend": "jax", "price_per_hour": 0.38, "scale": [1, 2],
         "scale_batch": "global"}  # both points train the global batch of 256: point 2 over two devices
REPLICA = f"""
import json, sys
sys.path.insert(0, {str(ROOT / 'tests' / 'components' / 'train')!r})
sys.path.insert(0, {str(ROOT / 'tests' / 'jax_lane')!r})
from test_multi_process import swept_config
from components.train import lanes
summary = lanes.train(swept_config(), "cpu-jax-x2", 0, sys.argv[1], sys.argv[2])
print("SUMMARY " + (summary.model_dump_json() if summary is not None else "null"), flush=True)
"""


def swept_config() -> TrainStepConfig:
    return TrainStepConfig.of(with_targets(small_config(epochs=1), SWEPT), "cpu-jax-x2")


def cluster_spec(port: int, pool: int) -> str:
    return json.dumps({"cluster": {"workerpool0": [f"127.0.0.1:{port}"], "workerpool1": ["127.0.0.1:1"]},
                       "environment": "cloud", "task": {"type": f"workerpool{pool}", "index": 0}})


def start(blocks_dir: Path, model_dir: Path, spec: str | None) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if key not in ("XLA_FLAGS", "CLUSTER_SPEC")}
    env.update({"PYTHONPATH": str(ROOT), **({"CLUSTER_SPEC": spec} if spec else {})})
    return subprocess.Popen([sys.executable, "-c", REPLICA, str(blocks_dir), str(model_dir)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def summary_of(process: subprocess.Popen) -> dict | None:
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output[-4000:]
    (line,) = [line for line in output.splitlines() if line.startswith("SUMMARY ")]
    return json.loads(line.removeprefix("SUMMARY "))


def test_two_processes_train_the_model_one_process_trains_over_two_devices(blocks_dir, tmp_path):
    (port,) = free_local_ports(1)
    chief, other = (start(blocks_dir, tmp_path / "two-processes", cluster_spec(port, pool)) for pool in (0, 1))
    simulated = start(blocks_dir, tmp_path / "one-process", None)
    processes, alone, local = summary_of(chief), summary_of(other), summary_of(simulated)

    assert alone is None  # the other replica writes nothing: the chief evaluates and writes the run
    assert (processes["hardware"]["replicas"], processes["hardware"]["processes"]) == (2, 2)
    assert processes["hardware"]["simulated"] is False and "2 processes" in processes["hardware"]["strategy"]
    assert (local["hardware"]["replicas"], local["hardware"]["processes"], local["hardware"]["simulated"]) == (2, 1,
                                                                                                                 True)
    assert processes["global_batch_size"] == local["global_batch_size"] == 256
    assert processes["input_stall_fraction"] is None and local["input_stall_fraction"] is not None
    logloss = processes["metrics"]["engagement"]["logloss"]
    assert logloss == pytest.approx(local["metrics"]["engagement"]["logloss"], rel=1e-6)
    over_processes, over_devices = (TrainedWeights.read(tmp_path / name / TRAINED_WEIGHTS_DIR)
                                    for name in ("two-processes", "one-process"))
    for a, b in zip(over_processes.dense, over_devices.dense, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    for name, table in over_processes.tables.items():
        np.testing.assert_allclose(table, over_devices.tables[name], atol=1e-5)
