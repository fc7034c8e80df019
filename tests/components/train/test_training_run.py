import math

import numpy as np
import tensorflow as tf
from config_fixture import small_config

from components.contracts.manifest import Manifest
from components.contracts.run_summary import RunSummary
from components.train.training_run import train


def tensorboard_scalars(log_dir) -> dict[str, list[int]]:
    """{tag: steps} of the scalars in every event file under `log_dir`."""
    scalars: dict[str, list[int]] = {}
    for path in sorted(tf.io.gfile.glob(str(log_dir / "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append(event.step)
    return scalars


def test_train_writes_a_saved_model_and_a_complete_summary(single_task_examples_dir, tmp_path, monkeypatch):
    config = small_config(epochs=3)
    manifest = Manifest.read(single_task_examples_dir)
    monkeypatch.setenv("AIP_TENSORBOARD_LOG_DIR", str(tmp_path / "tensorboard"))
    summary = train(config, "cpu", 1, str(single_task_examples_dir), str(tmp_path / "model"), "gs://bucket/model")

    assert summary.seed == config.seed + 1
    assert summary.hardware.device_kind == "CPU" and summary.hardware.replicas == 1
    assert summary.hardware.device_names and summary.hardware.strategy
    assert summary.steps == 3 * (4096 // 256)
    assert summary.examples_per_second > 0 and summary.wall_time_seconds > 0
    assert 0.0 <= summary.input_stall_fraction <= 1.0  # measured on every step after the first execution
    assert summary.input_format == "blocks" and summary.input_cache_bytes > 0  # the split fits the default budget
    assert summary.input_examples_per_second > 0 and summary.step_examples_per_second > 0  # input vs step
    assert summary.curve[-1].step == summary.steps and summary.curve[-1].eval_logloss is not None
    assert summary.steps_per_epoch == 16 and summary.dropped_steps == 0
    evaluated = [(p.epoch, p.step) for p in summary.curve if p.eval_logloss is not None]
    assert evaluated == [(1, 16), (2, 32), (3, 48)]  # eval log-loss after every epoch, not only the last
    assert summary.curve[-1].eval_logloss == summary.metrics["engagement"].logloss
    training = config.training
    scale = {"none": 1.0, "sqrt": (256 / training.reference_batch_size) ** 0.5,
             "linear": 256 / training.reference_batch_size}[training.learning_rate_scaling]
    assert summary.configured_learning_rate == training.learning_rate
    assert math.isclose(summary.learning_rate, training.learning_rate * scale)  # the effective rate
    metrics = summary.metrics["engagement"]
    assert metrics.examples == 1024 and math.isfinite(metrics.logloss)
    assert metrics.logloss < manifest.constant_ctr_logloss("engagement")
    assert 0.5 < metrics.auc <= 1.0 and metrics.roc
    assert summary.model_uri == "gs://bucket/model/saved_model"
    RunSummary.model_validate_json(summary.model_dump_json())
    assert tensorboard_scalars(tmp_path / "tensorboard") == {
        "train/loss": [16, 32, 48], "eval/logloss": [16, 32, 48],
    }

    loaded = tf.saved_model.load(str(tmp_path / "model" / "saved_model"))
    serve = loaded.signatures["serving_transformed"]
    batch = {
        "user_id": tf.constant([1, 2], tf.int64),
        "ad_id": tf.constant([3, 4], tf.int64),
        "user_interests": tf.constant([[1, 2, 0, 0], [0, 0, 0, 0]], tf.int64),
        "ad_bid": tf.constant([0.5, -1.0], tf.float32),
    }
    probabilities = serve(**batch)["engagement"].numpy()
    assert probabilities.shape == (2,) and np.all((probabilities > 0) & (probabilities < 1))
