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
from components.train.task import train
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


@pytest.mark.slow
def test_parameter_server_training_on_a_local_cluster_with_a_table_split_over_two_ps(examples_dir, tmp_path):
    # 2 workers + 2 ps as tf.distribute.Servers in one server subprocess, this test's subprocess as the chief;
    # the runner kills the servers in a finally and dumps stacks + exits after 120 s (the servers exit when
    # orphaned), so it cannot hang CI. The fixture's stacked table (82 rows x 8 x 4 B) is over 1 KiB: split in two.
    stdout = run_python(
        [str(HERE / "ps_cluster_run.py"), str(examples_dir), str(tmp_path / "model"), "2", "1024"], timeout=180
    )
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
