"""The JAX lane's tests run in a process of their own: Keras on the JAX backend, TensorFlow made unimportable
(`sys.modules["tensorflow"] = None`, as the lane itself does), so a test fails if anything here loads TensorFlow.

`make test` does not collect this directory in its TensorFlow processes (tests/conftest.py); the test
tests/components/train/test_jax_lane_suite.py runs it with `python -m pytest tests/jax_lane`."""

import os
import sys
from pathlib import Path

os.environ["KERAS_BACKEND"] = "jax"
sys.modules["tensorflow"] = None  # type: ignore[assignment]

import pytest  # noqa: E402

from components.train.synthetic_blocks import BlockShape, write_blocks  # noqa: E402

# the trainer tests' fixture shape (tests/components/train/fixture_data.py), in blocks written without TensorFlow
FIXTURE_SHAPE = BlockShape(categorical={"user_id": 50, "ad_id": 20}, numeric=["ad_bid"],
                           lists=(("user_interests", 12, 4),), positive_rate=0.3, task="engagement")
TRAIN_DIR = Path(__file__).resolve().parents[1] / "components" / "train"
sys.path.insert(0, str(TRAIN_DIR))  # config_fixture: the trainer tests' small config


@pytest.fixture(scope="session")
def blocks_dir(tmp_path_factory) -> Path:
    """4,096 train and 1,024 eval examples in blocks of 128 (shared, read-only)."""
    directory = tmp_path_factory.mktemp("jax_blocks")
    write_blocks(directory, FIXTURE_SHAPE, 4096, 1024, seed=3, block_examples=128)
    return directory
