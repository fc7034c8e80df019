"""The local parameter-server cluster a `cpu-ps` train step starts: real server processes on 127.0.0.1 that
never outlive the step, whether it succeeds, fails, is interrupted with Ctrl-C or is killed with kill -9."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.train.local_cluster import cluster_spec
from components.train.strategy import local_cluster_for
from configs.training import LocalClusterShape, TargetConfig
from foundation.process_table import process_running

ROOT = Path(__file__).parents[3]

# A stand-in train step: starts the cluster, prints its servers' pids, then succeeds, fails or waits to be killed.
# SIGINT is restored to Python's handler: a shell without job control (CI, `cmd &`) starts its children with
# SIGINT ignored, which would make "Ctrl-C" a no-op for the stand-in rather than test the cluster.
STEP = """
import json, os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from components.train.local_cluster import LocalParameterServerCluster
with LocalParameterServerCluster(int(sys.argv[3]), 1, sys.argv[1]) as cluster:
    tf_config = json.loads(os.environ["TF_CONFIG"])
    assert tf_config["task"] == {"type": "chief", "index": 0} and len(tf_config["cluster"]["worker"]) == int(sys.argv[3])
    print("SERVERS", *cluster.server_pids, flush=True)
    if sys.argv[2] == "fail":
        raise RuntimeError("the step failed")
    if sys.argv[2] == "wait":
        time.sleep(600)
print("TF_CONFIG after", os.environ.get("TF_CONFIG"), flush=True)
"""


def wait_until_gone(pids: list[int], timeout_s: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [pid for pid in pids if process_running(pid)]
        if not left:
            return []
        time.sleep(0.2)
    return [pid for pid in pids if process_running(pid)]


def start_step(tmp_path, mode: str, workers: int = 1) -> tuple[subprocess.Popen, list[int]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("TF_CONFIG", None)
    step = subprocess.Popen([sys.executable, "-c", STEP, str(tmp_path / "logs"), mode, str(workers)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    for line in step.stdout:
        if line.startswith("SERVERS "):
            pids = [int(pid) for pid in line.split()[1:]]
            assert len(pids) == workers + 1
            return step, pids
        assert time.monotonic() < deadline
    raise AssertionError(f"the step printed no servers: {step.wait()} {step.stderr.read()[-3000:]}")


@pytest.mark.slow
def test_servers_end_with_the_step_that_succeeds_or_fails(tmp_path):
    step, pids = start_step(tmp_path, "succeed")
    assert step.wait(timeout=60) == 0
    assert "TF_CONFIG after None" in step.stdout.read()  # the chief's TF_CONFIG is restored
    assert wait_until_gone(pids, timeout_s=1) == []  # reaped before the block returned
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["ps-0.log", "worker-0.log"]

    step, pids = start_step(tmp_path, "fail")
    assert step.wait(timeout=60) == 1 and "the step failed" in step.stderr.read()
    assert wait_until_gone(pids, timeout_s=1) == []


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["kill -9", "ctrl-c"])
def test_no_server_survives_a_killed_or_interrupted_step(tmp_path, how):
    step, pids = start_step(tmp_path, "wait", workers=2)
    assert all(process_running(pid) for pid in pids)
    step.send_signal(how)
    step.wait(timeout=60)
    # kill -9 runs no cleanup in the step: the kernel's parent-death signal ends the servers
    assert wait_until_gone(pids) == [], f"servers still running after {how.name} of the step"


def test_ports_are_distinct_and_local():
    spec = cluster_spec(workers=4, parameter_servers=2)
    addresses = spec["chief"] + spec["worker"] + spec["ps"]
    assert len(spec["worker"]) == 4 and len(spec["ps"]) == 2 and len(set(addresses)) == 7
    assert all(address.startswith("127.0.0.1:") for address in addresses)


def test_only_a_cpu_ps_target_outside_a_cluster_starts_one(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    ps_target = TargetConfig(name="cpu-ps", kind="cpu-ps", local_cluster=LocalClusterShape(workers=3))
    cluster = local_cluster_for(ps_target, tmp_path)
    assert (cluster.workers, cluster.parameter_servers) == (3, 1)
    assert local_cluster_for(TargetConfig(name="cpu", kind="cpu"), tmp_path) is None
    default = local_cluster_for(TargetConfig(name="ps", kind="cpu-ps"), tmp_path)
    assert (default.workers, default.parameter_servers) == (2, 1)
    # under Vertex or an executor that starts the replicas, TF_CONFIG already has the ps job
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"chief": ["h:1"], "worker": ["h:2"], "ps": ["h:3"]}, '
                                    '"task": {"type": "chief", "index": 0}}')
    assert local_cluster_for(ps_target, tmp_path) is None
    with pytest.raises(ValueError, match="local_cluster is for 'cpu-ps' targets"):
        TargetConfig(name="cpu", kind="cpu", local_cluster=LocalClusterShape())
