"""One worker or parameter server of a parameter-server cluster: a `tf.distribute.Server` for the task TF_CONFIG
names, serving until the job ends (the chief coordinates and trains).

Imports TensorFlow only (not Keras, keras-rs or the trainer), so a server of a local cluster starts in the
time of one TensorFlow import.
"""

from __future__ import annotations

import logging

import tensorflow as tf

log = logging.getLogger(__name__)


def serve_from_tf_config() -> None:
    """Start this process's server from TF_CONFIG's cluster and task, then block until the process is ended."""
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    cluster = resolver.cluster_spec()
    workers = cluster.num_tasks("worker") if "worker" in cluster.jobs else 0
    server = tf.distribute.Server(
        cluster, job_name=resolver.task_type, task_index=resolver.task_id or 0,
        protocol=resolver.rpc_layer or "grpc",
        # enough inter-op threads that a step waiting on a receive cannot starve the op it waits for
        config=tf.compat.v1.ConfigProto(inter_op_parallelism_threads=workers + 2), start=True,
    )
    log.info("serving as %s %s of a parameter-server cluster", resolver.task_type, resolver.task_id or 0)
    server.join()
