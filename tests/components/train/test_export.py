import numpy as np
import pytest
import tensorflow as tf
from config_fixture import small_config
from fixture_transform import raw_example, write_transformed_with_tft

from components.contracts.manifest import Manifest
from components.train.input import InputOptions, make_dataset
from components.train.training_run import train


@pytest.mark.slow
@pytest.mark.parametrize("force_tf_compat_v1", [True, False], ids=["tf1-graph", "tf2-graph"])
def test_serving_signature_on_raw_examples_matches_the_evaluation_path(tmp_path, force_tf_compat_v1):
    """Either transform graph tf.Transform writes (TF1, the preprocess step's default, with the raw metadata beside
    it; TF2, as the step wrote before, without it) serves what the evaluation path computes."""
    examples_dir = tmp_path / "examples"
    raw_eval_rows = write_transformed_with_tft(examples_dir, force_tf_compat_v1=force_tf_compat_v1)
    assert (examples_dir / "metadata").is_dir() == force_tf_compat_v1
    manifest = Manifest.read(examples_dir)
    config = small_config(user_id_rows=30, epochs=1, global_batch_size=128)
    train(config, "cpu", 0, str(examples_dir), str(tmp_path / "model"))

    loaded = tf.saved_model.load(str(tmp_path / "model" / "saved_model"))
    # The evaluation path: transformed shards through the trained Keras model, in file order.
    model_only = loaded.signatures["serving_transformed"]
    serve = loaded.signatures["serving_default"]
    served = serve(examples=tf.constant([raw_example(row) for row in raw_eval_rows]))["engagement"].numpy()

    evaluated = []
    data = make_dataset(examples_dir, manifest, "eval", InputOptions(256, training=False, drop_remainder=False))
    for features, _ in data:
        evaluated.append(model_only(**features)["engagement"].numpy())
    evaluated = np.concatenate(evaluated)
    assert served.shape == evaluated.shape == (len(raw_eval_rows),)
    np.testing.assert_allclose(served, evaluated, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["dcn", "ple"])
def test_a_model_rebuilt_from_its_weights_exports_and_serves_what_it_predicts(examples_dir, tmp_path, kind):
    """The export step's path (a JAX run's weights, a TPU run's copy): built by one call, never by `fit`, PLE's nested
    experts included, every weight tracked by the exported module."""
    from components.train.embedding import table_factory
    from components.train.export import example_batch, export_serving_model, rebuilt_model
    from components.train.models import build_model
    from components.train.trained_weights import dense_variables
    from configs.training import ModelConfig

    manifest = Manifest.read(examples_dir)
    trained = build_model(ModelConfig(kind=kind), manifest, 64, table_factory())
    batch = example_batch(trained, manifest)
    trained(batch)
    dense = dense_variables(trained)
    copy = rebuilt_model(type(trained).__name__, trained.get_config(), [v.path for v in dense],
                         [np.asarray(v.value) for v in dense], trained.embedding.table_values(), manifest)
    export_serving_model(copy, manifest, examples_dir, tmp_path / "saved_model")
    serve = tf.saved_model.load(str(tmp_path / "saved_model")).signatures["serving_transformed"]
    features, _ = next(iter(make_dataset(examples_dir, manifest, "eval", InputOptions(64, training=False))))
    np.testing.assert_allclose(serve(**features)["engagement"].numpy(),
                               np.asarray(trained(features)["engagement"]).reshape(-1), rtol=1e-5, atol=1e-6)
