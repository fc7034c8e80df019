"""Subprocess body: a real parameter-server cluster on 127.0.0.1 and a chief that trains through `train()`.

    python ps_cluster_run.py EXAMPLES_DIR MODEL_DIR [PS_TASKS [TABLE_SHARD_BYTES]]
                                                        the chief (coordinator); prints the RunSummary JSON
    python ps_cluster_run.py --server JOB:INDEX...      worker/ps servers (TF_CONFIG names the cluster)

The chief picks free ports, starts 2 workers + PS_TASKS ps (default 1) as `tf.distribute.Server`s in one server process
(one TensorFlow import, not three, on CI's 2 cores), waits until they listen, trains with
ParameterServerStrategy as task `chief`, and kills the servers in a `finally`. Every wait is bounded so a broken cluster fails, not hangs.
"""

import faulthandler
import json
import os
import socket
import subprocess
import sys
import threading
import time
import traceback

SERVER_START_TIMEOUT_S = 60
CHIEF_TIMEOUT_S = 120  # faulthandler dumps every thread's stack and exits if training hangs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def exit_when_orphaned(parent: int, lifetime_s: float) -> None:
    """A server never outlives its chief (even one killed by the hang timeout) nor its lifetime."""
    deadline = time.monotonic() + lifetime_s
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.5)
    os._exit(3)


def serve(tasks: list[str]) -> None:
    """A `tf.distribute.Server` for each "job:index" in `tasks` (this process's TF_CONFIG has the cluster)."""
    threading.Thread(target=exit_when_orphaned, args=(os.getppid(), CHIEF_TIMEOUT_S + 30), daemon=True).start()
    import tensorflow as tf

    cluster = json.loads(os.environ["TF_CONFIG"])["cluster"]
    # Enough inter-op threads that a step waiting on a receive cannot starve the op it waits for
    # (with inter_op_parallelism_threads=1 a worker can deadlock).
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=len(cluster["worker"]) + 2)
    servers = []
    for task in tasks:
        job, index = task.split(":")
        servers.append(
            tf.distribute.Server(
                tf.train.ClusterSpec(cluster), job_name=job, task_index=int(index), protocol="grpc", config=config,
                start=True,
            )
        )
    print(f"SERVING {tasks}", flush=True)
    servers[0].join()


def wait_until_listening(addresses: list[str], processes: list[subprocess.Popen], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    pending = list(addresses)
    while pending:
        for process in processes:
            if process.poll() is not None:
                raise RuntimeError(f"a server process exited with code {process.returncode} before listening")
        if time.monotonic() > deadline:
            raise TimeoutError(f"servers not listening after {timeout_s}s: {pending}")
        host, port = pending[0].rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                pending.pop(0)
        except OSError:
            time.sleep(0.2)


STARTED = time.monotonic()


def phase(name: str) -> None:
    print(f"PHASE {time.monotonic() - STARTED:6.1f}s {name}", file=sys.stderr, flush=True)


def main(examples_dir: str, model_dir: str, ps_tasks: int = 1, table_shard_bytes: int | None = None) -> None:
    faulthandler.dump_traceback_later(CHIEF_TIMEOUT_S, exit=True)
    cluster = {
        "chief": [f"127.0.0.1:{free_port()}"],
        "worker": [f"127.0.0.1:{free_port()}" for _ in range(2)],
        "ps": [f"127.0.0.1:{free_port()}" for _ in range(ps_tasks)],
    }
    processes = []
    try:
        # One server process for all worker and ps tasks: one TensorFlow import instead of three (the test
        # runs on 2 shared cores). Its TF_CONFIG names its first task; each Server gets its own job/index.
        tasks = [f"{job}:{index}" for job in ("worker", "ps") for index in range(len(cluster[job]))]
        tf_config = {"cluster": cluster, "task": {"type": "worker", "index": 0}, "rpc_layer": "grpc"}
        env = {**os.environ, "TF_CONFIG": json.dumps(tf_config)}
        processes.append(subprocess.Popen([sys.executable, __file__, "--server", *tasks], env=env))
        phase("servers spawned")

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from config_fixture import small_config, with_targets

        from components.train.task import train

        phase("chief imports done")
        wait_until_listening(cluster["worker"] + cluster["ps"], processes, SERVER_START_TIMEOUT_S)
        phase("servers listening")
        os.environ["TF_CONFIG"] = json.dumps(
            {"cluster": cluster, "task": {"type": "chief", "index": 0}, "rpc_layer": "grpc"}
        )
        training = {} if table_shard_bytes is None else {"ps_table_shard_bytes": table_shard_bytes}
        config = with_targets(small_config(epochs=1, **training), {"name": "cpu-ps", "kind": "cpu-ps"})
        summary = train(config, "cpu-ps", 0, examples_dir, model_dir)
        phase("trained, evaluated, exported")
        print("SUMMARY " + summary.model_dump_json(), flush=True)
    except BaseException:
        traceback.print_exc()  # before the servers go: afterwards gRPC logs a screenful of refused connections
        exit_code = 1
    else:
        exit_code = 0
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait(timeout=10)
    faulthandler.cancel_dump_traceback_later()
    sys.stdout.flush()
    sys.stderr.flush()
    # The eager context still holds gRPC channels to the killed servers; skip interpreter teardown.
    os._exit(exit_code)

if __name__ == "__main__":
    if sys.argv[1] == "--server":
        serve(sys.argv[2:])
    else:
        main(sys.argv[1], sys.argv[2], *(int(arg) for arg in sys.argv[3:5]))
