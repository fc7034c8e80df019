"""One worker or parameter server of a parameter-server cluster: a `tf.distribute.Server` for the task TF_CONFIG
names, serving until the job ends (the chief coordinates and trains).

Imports TensorFlow only (not Keras, keras-rs or the trainer), so a server of a local cluster starts in the
time of one TensorFlow import.
"""

from __future__ import annotations

import json
import logging
import os

log = logging.getLogger(__name__)


def serve_from_tf_config() -> None:
    """Start this process's server from TF_CONFIG's cluster and task, then block until the process is ended."""
    import tensorflow as tf

    config = json.loads(os.environ["TF_CONFIG"])
    task = config["task"]
    workers = len(config["cluster"].get("worker", []))
    server = tf.distribute.Server(
        tf.train.ClusterSpec(config["cluster"]), job_name=task["type"], task_index=int(task.get("index", 0)),
        protocol=config.get("rpc_layer", "grpc"),
        # enough inter-op threads that a step waiting on a receive cannot starve the op it waits for
        config=tf.compat.v1.ConfigProto(inter_op_parallelism_threads=workers + 2), start=True,
    )
    log.info("serving as %s %s of a parameter-server cluster", task["type"], task.get("index", 0))
    server.join()
