import keras
import numpy as np
import pytest
import tensorflow as tf
from config_fixture import small_config, with_targets

from components.contracts.manifest import Manifest
from components.train.embedding import TPUFeatureEmbedding, table_factory
from components.train.embedding_tables import check_static_shapes, feature_configs
from components.train.models import build_model
from components.train.optimization import batch_scale
from components.train.strategy import HardwareUnavailableError, runtime_for
from components.train.training_run import train
from configs.training import ModelConfig, TrainingConfig


@pytest.mark.parametrize(
    "model",
    [
        ModelConfig(kind="dcn", cross_structure="parallel", cross_projection_dim=4, cross_experts=2),
        ModelConfig(kind="ple", ple_levels=2),
        ModelConfig(kind="linear"),
    ],
)
def test_models_round_trip_their_config_and_predict_per_task(examples_dir, model):
    manifest = Manifest.read(examples_dir)
    built = build_model(model, manifest, per_replica_batch=8, make_tables=table_factory())
    features = {
        "user_id": tf.constant([1, 2], tf.int64), "ad_id": tf.constant([3, 4], tf.int64),
        "user_interests": tf.constant([[1, 0, 0, 0], [2, 3, 0, 0]], tf.int64), "ad_bid": tf.constant([0.1, 0.2]),
    }
    outputs = built(features)
    assert set(outputs) == {"engagement", "conversion"} and outputs["engagement"].shape == (2, 1)
    clone = type(built).from_config(built.get_config())
    clone(features)
    clone.set_weights(built.get_weights())
    np.testing.assert_allclose(clone(features)["conversion"], outputs["conversion"], rtol=1e-6)


def test_ple_target_override_trains_both_tasks(examples_dir, tmp_path):
    config = with_targets(small_config(epochs=1), {"name": "cpu-ple", "kind": "cpu", "model": {"kind": "ple"},
                                                   "training": {"embedding_learning_rate": 0.01}})
    summary = train(config, "cpu-ple", 0, str(examples_dir), str(tmp_path / "model"))
    assert summary.model_kind == "ple" and set(summary.metrics) == {"engagement", "conversion"}


def test_learning_rate_scaling_rules():
    assert batch_scale(TrainingConfig(global_batch_size=2048, learning_rate_scaling="linear")) == 4.0
    assert batch_scale(TrainingConfig(global_batch_size=2048, learning_rate_scaling="sqrt")) == 2.0
    assert batch_scale(TrainingConfig(global_batch_size=2048, learning_rate_scaling="none")) == 1.0


def test_tpu_embedding_configs_are_static_and_build_the_distributed_layer(examples_dir):
    configs = feature_configs(Manifest.read(examples_dir), embedding_dim=4, batch_size=16)
    assert configs["user_interests"].input_shape == (16, 4) and configs["user_id"].output_shape == (16, 4)
    assert configs["user_id"].table.vocabulary_size == 50
    check_static_shapes(configs)
    layer = TPUFeatureEmbedding(configs)  # keras-rs DistributedEmbedding; on CPU it uses default placement
    assert layer.distributed is not None
    dynamic = dict(configs)
    dynamic["user_id"] = type(configs["user_id"])(
        name="user_id", table=configs["user_id"].table, input_shape=(None,), output_shape=(None, 4)
    )
    with pytest.raises(ValueError, match="static shapes"):
        check_static_shapes(dynamic)


def test_absent_hardware_fails_clearly_unless_cpu_fallback_is_allowed():
    with pytest.raises(HardwareUnavailableError, match="no TPU was found"):
        runtime_for("tpu")
    with pytest.raises(HardwareUnavailableError, match="sees no GPU"):
        runtime_for("gpu")
    with pytest.raises(HardwareUnavailableError, match="'ps'"):
        runtime_for("cpu-ps")
    fallback = runtime_for("tpu", allow_cpu_fallback=True)
    assert fallback.device_kind == "CPU" and "TPU" in fallback.fallback_reason
    assert fallback.hardware_seen().device_kind == "CPU"  # never claims a TPU ran


def test_training_loss_is_computed_from_logits_not_clipped_probabilities(examples_dir):
    """A confident wrong prediction (logit −30, label 1) costs 30 nats; from clipped probabilities it would
    cost −log(1e-7) ≈ 16.1 with a zero gradient, which stalls learning on rare positives."""
    manifest = Manifest.read(examples_dir)
    model = build_model(ModelConfig(kind="dcn", output_bias="zero"), manifest, per_replica_batch=2,
                        make_tables=table_factory())
    model.compile(optimizer=keras.optimizers.Adam(0.0), loss={t: keras.losses.BinaryCrossentropy() for t in manifest.tasks})
    features = {
        "user_id": tf.constant([1, 2], tf.int64), "ad_id": tf.constant([3, 4], tf.int64),
        "user_interests": tf.constant([[1, 0, 0, 0], [2, 3, 0, 0]], tf.int64), "ad_bid": tf.constant([0.1, 0.2]),
    }
    model(features)
    for head in model.heads.values():
        head.kernel.assign(tf.zeros_like(head.kernel))
        head.bias.assign([-30.0])
    labels = {task: tf.ones([2, 1]) for task in manifest.tasks}
    history = model.fit(tf.data.Dataset.from_tensors((features, labels)), epochs=1, verbose=0)
    assert history.history["loss"][-1] == pytest.approx(30.0 * len(manifest.tasks), rel=1e-3)


@pytest.mark.parametrize("kind", ["dcn", "ple", "linear"])
def test_an_untrained_model_predicts_each_tasks_train_positive_rate(examples_dir, kind):
    """With the label-rate prior every task starts at its base rate (not 0.5); the prior survives a config round trip."""
    manifest = Manifest.read(examples_dir)
    rates = manifest.splits["train"].label_rates
    features = {
        "user_id": tf.constant([1, 2, 5, 7], tf.int64), "ad_id": tf.constant([3, 4, 1, 2], tf.int64),
        "user_interests": tf.constant([[1, 0, 0, 0], [2, 3, 0, 0], [0, 0, 0, 0], [4, 0, 0, 0]], tf.int64),
        "ad_bid": tf.constant([0.1, 0.2, -0.3, 0.0]),
    }
    model = build_model(ModelConfig(kind=kind), manifest, per_replica_batch=4, make_tables=table_factory())
    outputs = model(features)
    for task in manifest.tasks:
        assert model.prior_logits[task] == pytest.approx(np.log(rates[task] / (1 - rates[task])), rel=1e-6)
    rare = min(manifest.tasks, key=rates.get)
    assert rates[rare] < 0.3
    # the body's random initial logits are small: the prediction sits near the rate, far from 0.5
    assert float(np.mean(outputs[rare])) == pytest.approx(rates[rare], rel=0.5)
    clone = type(model).from_config(model.get_config())
    assert clone.prior_logits == pytest.approx(model.prior_logits)
    zero = build_model(ModelConfig(kind=kind, output_bias="zero"), manifest, per_replica_batch=4,
                       make_tables=table_factory())
    assert float(np.mean(zero(features)[manifest.tasks[0]])) == pytest.approx(0.5, abs=0.15)
