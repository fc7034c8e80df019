"""Multi-replica training for real: MirroredStrategy over two logical CPUs, and an asynchronous
parameter-server cluster on 127.0.0.1. Each runs in a subprocess so it cannot change this process's
devices or cluster."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.step_processes import running_pids

HERE = Path(__file__).parent
ROOT = HERE.parents[2]


def run_python(code_or_file: list[str], timeout: int = 150) -> str:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{HERE}", "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("TF_CONFIG", None)
    result = subprocess.run(
        [sys.executable, *code_or_file], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT
    )
    traceback_at = result.stderr.find("Traceback (most recent call last)")
    assert result.returncode == 0, result.stderr[traceback_at:][:6000] if traceback_at >= 0 else result.stderr[-4000:]
    return result.stdout


def summary_from(stdout: str) -> dict:
    line = next(line for line in stdout.splitlines() if line.startswith("SUMMARY "))
    return json.loads(line[len("SUMMARY "):])


MIRRORED = """
import sys, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from config_fixture import small_config
from components.train.training_run import train
summary = train(small_config(epochs=1), "cpu", 0, sys.argv[1], sys.argv[2])
print("SUMMARY " + summary.model_dump_json())
"""


@pytest.mark.slow
def test_mirrored_strategy_over_two_logical_cpus(examples_dir, tmp_path):
    summary = summary_from(run_python(["-c", MIRRORED, str(examples_dir), str(tmp_path / "model")]))
    assert summary["hardware"]["strategy"] == "MirroredStrategy"
    assert summary["hardware"]["replicas"] == 2 and summary["hardware"]["device_count"] == 2
    assert summary["steps"] == 2048 // 256
    assert summary["metrics"]["engagement"]["logloss"] < 0.7
    assert 0.0 <= summary["input_stall_fraction"] <= 1.0  # the host clock around the train function


PARAMETER_SERVERS = """
import os, sys
from config_fixture import small_config, with_targets
from components.contracts.manifest import Manifest
from components.train.export import tft_output_dir
from components.train.input import InputOptions, make_dataset
from components.train.models import build_model
from components.train.training_run import train
from components.preprocess.vocabulary_file import transform_vocabularies
from components.train.warm_start import write_state
from components.train.embedding import table_factory
print("STEP", os.getpid(), flush=True)
config = with_targets(small_config(epochs=1, ps_table_shard_bytes=1024),
                      {"name": "cpu-ps", "kind": "cpu-ps", "local_cluster": {"workers": 2, "parameter_servers": 2}})
# a champion's warm-start state (an untrained model of the same shape is enough to carry rows and weights from)
manifest = Manifest.read(sys.argv[1])
champion = build_model(config.model, manifest, 8, table_factory())
champion(next(iter(make_dataset(sys.argv[1], manifest, "eval", InputOptions(8, training=False))))[0])
write_state(champion, manifest, transform_vocabularies(tft_output_dir(sys.argv[1], manifest)), sys.argv[3])
summary = train(config, "cpu-ps", 0, sys.argv[1], sys.argv[2], warm_start_from=sys.argv[3])
print("SUMMARY " + summary.model_dump_json(), flush=True)
print("TF_CONFIG after training:", os.environ.get("TF_CONFIG"), flush=True)
"""


def servers_of(step_pid: int) -> list[int]:
    """Local-cluster server processes (running, not zombies) started by the step with this pid."""
    return running_pids("components.train.local_cluster", str(step_pid))


@pytest.mark.long
@pytest.mark.slow
def test_a_cpu_ps_target_trains_on_its_own_local_cluster_with_a_table_split_over_two_ps(examples_dir, tmp_path):
    # train() of a cpu-ps target without TF_CONFIG starts 2 workers + 2 ps as server processes on 127.0.0.1,
    # trains as their chief, and ends them before it returns. The fixture's stacked table (82 rows x 8 x 4 B)
    # is over 1 KiB: split in two.
    # It starts warm from a champion (`training.warm_start: champion`): the chief carries the champion's rows and
    # dense weights into the variables the ps tasks hold before the first step.
    stdout = run_python(["-c", PARAMETER_SERVERS, str(examples_dir), str(tmp_path / "model"),
                         str(tmp_path / "champion")], timeout=300)
    step_pid = int(next(line for line in stdout.splitlines() if line.startswith("STEP ")).split()[1])
    assert servers_of(step_pid) == []  # the step exited normally and left no server behind
    assert "TF_CONFIG after training: None" in stdout
    assert sorted(p.name for p in (tmp_path / "model" / "cluster_logs").iterdir()) == [
        "ps-0.log", "ps-1.log", "worker-0.log", "worker-1.log"]
    summary = summary_from(stdout)
    hardware = summary["hardware"]
    assert hardware["strategy"] == "ParameterServerStrategy"
    assert hardware["device_count"] == 2  # workers
    assert hardware["device_names"] == ["/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"]
    assert hardware["device_descriptions"] == ["2 parameter server(s)"]
    (table,) = summary["embedding_tables"]
    assert table["shards"] == 2 and table["rows"] == 82
    assert table["devices"] == ["/job:ps/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:1/device:CPU:0"]
    assert summary["steps"] == 2048 // 256
    # every scheduled step ran on a worker and returned a finite loss: one curve point per chunk
    assert summary["curve"][-1]["step"] == summary["steps"]
    assert all(math.isfinite(point["loss"]) for point in summary["curve"])
    for task in ("engagement", "conversion"):
        assert math.isfinite(summary["metrics"][task]["logloss"])
    assert summary["metrics"]["engagement"]["logloss"] < 0.7
    assert 0.0 <= summary["input_stall_fraction"] <= 1.0  # stamped by the workers around next(iterator)
    assert summary["model_uri"]  # exported from the chief
    assert summary["examples_per_second"] > 0  # one chunk only: timed over it, start-up included
    warm = summary["warm_start"]
    assert warm is not None and warm["source"] == str(tmp_path / "champion")
    assert [(t["table"], t["copied"]) for t in warm["tables"]] == [(t["table"], t["rows"]) for t in warm["tables"]]
    assert warm["dense_copied"] > 0 and warm["dense_skipped"] == []
