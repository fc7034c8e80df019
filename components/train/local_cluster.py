"""A parameter-server cluster of processes on 127.0.0.1, started and torn down by a `cpu-ps` train step.

    with LocalParameterServerCluster(workers=2, parameter_servers=1, log_dir=...) as cluster:
        ...  # this process is the chief: TF_CONFIG names it task `chief` of `cluster.spec`

On the local backend nothing else starts the workers and parameter servers a `cpu-ps` target asks for, so
the train step does: every worker and ps is its own process (`python -m components.train.local_cluster
--serve`: `ps_server.serve_from_tf_config`, a `tf.distribute.Server` for the task its TF_CONFIG names, which
is what the worker and ps replicas of a Vertex CustomJob run too), on ports chosen free when the cluster starts. The step's own process is the chief.

No server outlives the step:
- success, an exception, Ctrl-C: leaving the `with` block SIGKILLs the servers' process group (they share
  one, apart from the step's) and reaps every server;
- `kill -9` of the step (no `finally` runs): each server asked the kernel to SIGKILL it when its parent dies
  (`foundation.process_supervision.die_with_parent`), and exits at once if its parent already died before it
  asked.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from foundation.local_ports import LOOPBACK, free_local_ports
from foundation.process_supervision import die_with_parent, signal_process_group

log = logging.getLogger(__name__)

SERVER_START_TIMEOUT_S = 600.0  # a TensorFlow import per server; slow on a busy 2-core machine
HOST = LOOPBACK


class ClusterStartError(RuntimeError):
    """A server of the local parameter-server cluster exited or did not listen in time."""


def cluster_spec(workers: int, parameter_servers: int) -> dict[str, list[str]]:
    ports = free_local_ports(1 + workers + parameter_servers)
    return {
        "chief": [f"{HOST}:{ports[0]}"],
        "worker": [f"{HOST}:{port}" for port in ports[1 : 1 + workers]],
        "ps": [f"{HOST}:{port}" for port in ports[1 + workers :]],
    }


class LocalParameterServerCluster:
    """Worker and ps server processes on 127.0.0.1; this process is the chief while the block runs."""

    def __init__(self, workers: int, parameter_servers: int, log_dir: str | Path):
        self.workers = workers
        self.parameter_servers = parameter_servers
        self.log_dir = Path(log_dir)
        self.spec: dict[str, list[str]] = {}
        self.processes: list[subprocess.Popen] = []
        self.process_group: int | None = None
        self._saved_tf_config: str | None = None

    @property
    def server_pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def __enter__(self) -> LocalParameterServerCluster:
        self.spec = cluster_spec(self.workers, self.parameter_servers)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            for job in ("ps", "worker"):
                for index in range(len(self.spec[job])):
                    self._start_server(job, index)
            self._wait_until_listening()
        except BaseException:
            self.stop()
            raise
        self._saved_tf_config = os.environ.get("TF_CONFIG")
        os.environ["TF_CONFIG"] = json.dumps(
            {"cluster": self.spec, "task": {"type": "chief", "index": 0}, "rpc_layer": "grpc"}
        )
        log.info("local parameter-server cluster: %d worker(s), %d ps on %s (pids %s)", self.workers,
                 self.parameter_servers, HOST, self.server_pids)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._saved_tf_config is None:
            os.environ.pop("TF_CONFIG", None)
        else:
            os.environ["TF_CONFIG"] = self._saved_tf_config
        self.stop()

    def _start_server(self, job: str, index: int) -> None:
        tf_config = {"cluster": self.spec, "task": {"type": job, "index": index}, "rpc_layer": "grpc"}
        env = {**os.environ, "TF_CONFIG": json.dumps(tf_config), "TF_CPP_MIN_LOG_LEVEL": "2"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                          env.get("PYTHONPATH")]))
        with open(self.log_dir / f"{job}-{index}.log", "wb") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-m", "components.train.local_cluster", "--serve", "--parent", str(os.getpid())],
                env=env, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                # the first server leads a new process group, the others join it: one killpg ends them all,
                # and a Ctrl-C at the terminal reaches the step, which then ends them
                process_group=0 if self.process_group is None else self.process_group,
            )
        if self.process_group is None:
            self.process_group = process.pid
        self.processes.append(process)

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        pending = self.spec["ps"] + self.spec["worker"]
        while pending:
            for process, log_name in zip(self.processes, self._log_names()):
                if process.poll() is not None:
                    tail = (self.log_dir / log_name).read_text(errors="replace")[-2000:]
                    raise ClusterStartError(f"server {log_name} exited with code {process.returncode} before "
                                            f"listening:\n{tail}")
            if time.monotonic() > deadline:
                raise ClusterStartError(f"servers not listening after {SERVER_START_TIMEOUT_S:.0f}s: {pending}")
            host, port = pending[0].rsplit(":", 1)
            try:
                with socket.create_connection((host, int(port)), timeout=1):
                    pending.pop(0)
            except OSError:
                time.sleep(0.2)

    def _log_names(self) -> list[str]:
        return [f"{job}-{i}.log" for job in ("ps", "worker") for i in range(len(self.spec[job]))]

    def stop(self) -> None:
        """SIGKILL every server (their whole process group) and reap them."""
        if self.process_group is not None:
            signal_process_group(self.process_group, signal.SIGKILL)
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait()
        self.process_group = None


def serve(parent: int) -> None:
    die_with_parent(parent)
    # imported only now: TensorFlow's import takes seconds, and a server must die with its parent from the start
    from components.train.ps_server import serve_from_tf_config

    serve_from_tf_config()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="one server of a local parameter-server cluster (TF_CONFIG)")
    parser.add_argument("--serve", action="store_true", required=True)
    parser.add_argument("--parent", type=int, required=True, help="the train step's pid; die with it")
    serve(parser.parse_args().parent)
