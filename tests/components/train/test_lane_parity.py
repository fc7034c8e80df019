"""The two lanes train the same model: on the same blocks, config and seeds, their eval log-loss does not differ
significantly and is within 1% relative; a JAX-trained model exported by this TensorFlow process serves what the JAX
model predicted."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from config_fixture import small_config, with_targets

from components.contracts.manifest import Manifest
from components.contracts.run_summary import RunSummary
from components.evaluate.metrics import logloss
from components.evaluate.run_statistics import welch_test
from components.train.export_trained import export_trained_run
from components.train.input import InputOptions, make_dataset
from components.train.synthetic_blocks import BlockShape, write_blocks
from components.train.trained_weights import TRAINED_WEIGHTS_DIR
from components.train.training_run import train
from configs.slices import TrainStepConfig

ROOT = Path(__file__).resolve().parents[3]
SHAPE = BlockShape(categorical={"user_id": 2000, "ad_id": 20}, numeric=["ad_bid"], lists=(("user_interests", 12, 4),),
                   positive_rate=0.2, task="engagement")
RUNS = 3
TARGETS = ({"name": "cpu", "kind": "cpu", "price_per_hour": 0.38},
           {"name": "cpu-jax", "kind": "cpu", "backend": "jax", "price_per_hour": 0.38})


def parity_config():
    return with_targets(small_config(user_id_rows=2000, epochs=2, input_capacity_seconds=0.0), *TARGETS)


def jax_runs(config: TrainStepConfig, examples: Path, models: Path) -> list[dict]:
    """The JAX lane's runs in a process of its own (Keras on JAX, no TensorFlow): each run's summary."""
    script = (
        "import json, sys\n"
        "from components.train import lanes\n"
        "from configs.slices import TrainStepConfig\n"
        f"config = TrainStepConfig.model_validate_json({config.to_json()!r})\n"
        f"runs = [lanes.train(config, 'cpu-jax', i, {str(examples)!r}, {str(models)!r} + f'/{{i}}') "
        f"for i in range({RUNS})]\n"
        "print(json.dumps([run.model_dump(mode='json') for run in runs]))\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                               env={**env, "PYTHONPATH": str(ROOT)}, timeout=900)
    assert completed.returncode == 0, completed.stderr[-4000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("parity_blocks")
    write_blocks(directory, SHAPE, 16384, 4096, seed=11, block_examples=512)
    return directory


def test_both_lanes_reach_the_same_logloss_and_a_jax_model_serves_as_trained(examples, tmp_path):
    config = parity_config()
    tensorflow_runs = [train(TrainStepConfig.of(config, "cpu"), "cpu", i, str(examples), str(tmp_path / f"tf{i}"))
                       for i in range(RUNS)]
    jax = [RunSummary.model_validate(run) for run in jax_runs(TrainStepConfig.of(config, "cpu-jax"), examples,
                                                               tmp_path / "jax")]
    tf_losses = [run.metrics["engagement"].logloss for run in tensorflow_runs]
    jax_losses = [run.metrics["engagement"].logloss for run in jax]
    print(f"log-loss tensorflow {tf_losses}, jax {jax_losses}")
    comparison = welch_test(jax_losses, tf_losses, other="tensorflow")
    assert comparison.significant is False, comparison.verdict
    assert abs(np.mean(jax_losses) - np.mean(tf_losses)) / np.mean(tf_losses) < 0.01
    assert all(run.backend == "jax" and run.model_uri is None for run in jax)

    # the export step: this TensorFlow process writes the JAX run's serving model from its weights
    exported = export_trained_run(jax[0], str(tmp_path / "jax" / "0" / TRAINED_WEIGHTS_DIR), str(examples),
                                  str(tmp_path / "export"))
    assert exported.model_uri == str(tmp_path / "export" / "saved_model")
    assert exported.time_split.export > jax[0].time_split.export
    serve = tf.saved_model.load(exported.model_uri).signatures["serving_transformed"]
    eval_split = make_dataset(examples, Manifest.read(examples), "eval",
                              InputOptions(batch_size=4096, training=False, drop_remainder=False))
    features, labels = next(iter(eval_split))  # the whole eval split: one batch
    served = serve(**features)["engagement"].numpy()
    assert len(served) == 4096
    assert logloss(labels["engagement"].numpy().reshape(-1), served) == pytest.approx(
        jax[0].metrics["engagement"].logloss, rel=1e-5)  # what the JAX model predicted, served by TensorFlow
