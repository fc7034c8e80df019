"""Which training lane trains a target (`targets[].backend`): the one place that decides, in the training step's
own process, before Keras loads (Keras picks its backend once per process).

    tensorflow  components.train.training_run (tf.distribute, tf.data, the TPU embedding API, parameter servers)
    jax         components.train.jax_lane.training_run (a jitted step, sparse row updates or SparseCore, numpy
                input); TensorFlow is blocked in that process, so neither adrank nor a library loads it
                (docs/backends.md)
"""

from __future__ import annotations

import time

from components.contracts.run_summary import RunSummary
from components.train.backend_choice import select_backend
from configs.slices import TrainStepConfig


def train(config: TrainStepConfig, target_name: str, run_index: int, examples_dir: str, model_dir: str,
          model_uri: str | None = None, warm_start_from: str | None = None) -> RunSummary | None:
    """Train `target_name` once on its lane (the plain function behind the KFP `train_step`). A JAX run's summary has
    no model yet: its export step writes the serving model (`components.train.export_trained`).

    None in a replica that is not the run's chief (several processes train one run: a multi-host TPU slice, several
    GPU or CPU machines, docs/scaling.md): the chief alone evaluates and writes the run's outputs."""
    started = time.perf_counter()  # the lane's imports (TensorFlow or JAX and Keras) count as the run's start-up
    backend = config.target(target_name).backend
    select_backend(backend)
    if backend == "jax":
        from components.train.jax_lane.training_run import train as train_on_jax

        return train_on_jax(config, target_name, run_index, examples_dir, model_dir, warm_start_from, started)
    from components.train.training_run import train as train_on_tensorflow

    return train_on_tensorflow(config, target_name, run_index, examples_dir, model_dir, model_uri, warm_start_from,
                               started=started)
