"""Subprocess body: a real cluster on 127.0.0.1 (2 workers + 1 ps as tf.distribute.Servers) and a
chief that trains through `train()` with ParameterServerStrategy. Prints the RunSummary JSON."""

import json
import os
import socket
import sys

import tensorflow as tf


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(examples_dir: str, model_dir: str) -> None:
    cluster = {"worker": [f"127.0.0.1:{free_port()}" for _ in range(2)], "ps": [f"127.0.0.1:{free_port()}"]}
    servers_cluster = dict(cluster)
    # like the TF tutorial: the coordinator is not in the cluster spec and has no task
    spec = tf.train.ClusterSpec(cluster)  # servers know the chief too
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    servers = [tf.distribute.Server(spec, job_name=job, task_index=i, protocol="grpc", config=config, start=True)
               for job in ("worker", "ps") for i in range(len(servers_cluster[job]))]
    os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster})

    sys.path.insert(0, os.path.dirname(__file__))
    from config_fixture import small_config, with_targets

    from components.train.task import train

    config = with_targets(small_config(epochs=1), {"name": "cpu-ps", "kind": "cpu-ps"})
    summary = train(config, "cpu-ps", 0, examples_dir, model_dir)
    print("SUMMARY " + summary.model_dump_json())
    del servers


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
