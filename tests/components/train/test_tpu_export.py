"""A model trained through the TPU embedding path (keras-rs `DistributedEmbedding`, which on a CPU keeps its
tables on the default device) exports the same CPU-servable SavedModel, with the same raw serving signature,
as a CPU-trained model; the export predicts what the trained model predicts.

What a CPU cannot exercise: the SparseCore branch of `get_embedding_tables()` (gathering the table shards from
the TPU's embedding memory, which needs a TPUStrategy over a real TPU) and reading the dense weights from
TPU-replicated variables; `servable_copy` reaches both through the same public calls as here."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from fixture_transform import raw_example, write_transformed_with_tft

from components.contracts.manifest import Manifest
from components.train.embedding import table_factory
from components.train.export import export_serving_model, servable_copy
from components.train.input import InputOptions, make_dataset
from components.train.models import build_model
from components.train.optimization import table_config_optimizer
from configs.training import ModelConfig, TrainingConfig

BATCH = 64  # TPU lookups have static shapes: the per-replica batch is fixed in the embedding configs


def trained_through_the_tpu_path(examples_dir, manifest):
    model = build_model(ModelConfig(), manifest, per_replica_batch=BATCH, make_tables=table_factory(tpu_embedding=True),
                        table_optimizer=table_config_optimizer(TrainingConfig()))
    assert type(model.embedding).__name__ == "TPUFeatureEmbedding"
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss={t: keras.losses.BinaryCrossentropy() for t in manifest.tasks})
    data = make_dataset(examples_dir, manifest, "train",
                        InputOptions(BATCH, training=True, drop_remainder=True, repeat=True, seed=1))
    model(next(iter(data))[0])
    initial = {name: np.array(t) for name, t in model.embedding.distributed.get_embedding_tables().items()}
    model.fit(data, steps_per_epoch=12, epochs=1, verbose=0)
    trained = model.embedding.distributed.get_embedding_tables()
    assert all(not np.allclose(initial[name], table) for name, table in trained.items())  # the tables trained
    return model


@pytest.mark.slow
def test_a_tpu_path_model_exports_a_cpu_servable_model_that_predicts_the_same(tmp_path):
    examples_dir = tmp_path / "examples"
    raw_eval_rows = write_transformed_with_tft(examples_dir)
    manifest = Manifest.read(examples_dir)
    model = trained_through_the_tpu_path(examples_dir, manifest)

    servable = servable_copy(model, tf.distribute.get_strategy(), manifest)
    export_serving_model(servable, manifest, examples_dir, tmp_path / "tpu_export")
    loaded = tf.saved_model.load(str(tmp_path / "tpu_export"))

    eval_data = make_dataset(examples_dir, manifest, "eval", InputOptions(BATCH, training=False, drop_remainder=True))
    trained, exported = [], []
    for features, _ in eval_data:
        trained.append(model(features, training=False)["engagement"].numpy().reshape(-1))
        exported.append(loaded.signatures["serving_transformed"](**features)["engagement"].numpy())
    trained, exported = np.concatenate(trained), np.concatenate(exported)
    assert trained.std() > 1e-4  # a trained model, not a constant
    np.testing.assert_allclose(exported, trained, atol=1e-5)

    # the raw signature: logged tf.Examples → tf.Transform → the copied model, same predictions
    rows = raw_eval_rows[: len(trained)]
    served = loaded.signatures["serving_default"](examples=tf.constant([raw_example(r) for r in rows]))
    np.testing.assert_allclose(served["engagement"].numpy(), trained, atol=1e-5)
    # and a batch size the TPU never saw
    odd = loaded.signatures["serving_default"](examples=tf.constant([raw_example(r) for r in rows[:7]]))
    np.testing.assert_allclose(odd["engagement"].numpy(), trained[:7], atol=1e-5)

    # the same serving contract as a CPU-trained model's export
    cpu_model = build_model(ModelConfig(), manifest, per_replica_batch=BATCH, make_tables=table_factory())
    cpu_model(next(iter(eval_data))[0])
    export_serving_model(cpu_model, manifest, examples_dir, tmp_path / "cpu_export")
    cpu_loaded = tf.saved_model.load(str(tmp_path / "cpu_export"))
    for name in ("serving_default", "serving_transformed"):
        assert (loaded.signatures[name].structured_input_signature
                == cpu_loaded.signatures[name].structured_input_signature)
        assert loaded.signatures[name].structured_outputs.keys() == cpu_loaded.signatures[name].structured_outputs.keys()
