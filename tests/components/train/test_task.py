import math

import numpy as np
import tensorflow as tf

from components.preprocess.manifest import Manifest
from components.train.summary import RunSummary
from components.train.task import train
from config_fixture import small_config


def test_train_writes_a_saved_model_and_a_complete_summary(single_task_examples_dir, tmp_path):
    config = small_config(epochs=3)
    manifest = Manifest.read(single_task_examples_dir)
    summary = train(config, "cpu", 1, str(single_task_examples_dir), str(tmp_path / "model"), "gs://bucket/model")

    assert summary.seed == config.seed + 1
    assert summary.hardware.device_kind == "CPU" and summary.hardware.replicas == 1
    assert summary.hardware.device_names and summary.hardware.strategy
    assert summary.steps == 3 * (4096 // 256)
    assert summary.examples_per_second > 0 and summary.wall_time_seconds > 0
    assert summary.curve[-1].step == summary.steps and summary.curve[-1].eval_logloss is not None
    metrics = summary.metrics["engagement"]
    assert metrics.examples == 1024 and math.isfinite(metrics.logloss)
    assert metrics.logloss < manifest.constant_ctr_logloss("engagement")
    assert 0.5 < metrics.auc <= 1.0 and metrics.roc
    assert summary.model_uri == "gs://bucket/model/saved_model"
    RunSummary.model_validate_json(summary.model_dump_json())

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
