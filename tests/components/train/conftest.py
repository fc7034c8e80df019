import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fixture_data import write_transformed_examples


@pytest.fixture(autouse=True)
def process_wide_op_determinism_reset():
    """`train()` turns op determinism on for the whole process (training.deterministic, the default) and
    TensorFlow has no public switch back; reset it after each test so the next one starts as a fresh process
    would (e.g. `tf.timestamp`, which op determinism refuses)."""
    yield
    from tensorflow.python.framework import config as tf_config

    tf_config.disable_op_determinism()


@pytest.fixture(scope="session")
def examples_dir(tmp_path_factory) -> Path:
    """Two tasks' worth of tiny transformed examples (shared, read-only), in blocks as preprocess writes them and
    as per-example records."""
    directory = tmp_path_factory.mktemp("examples")
    write_transformed_examples(directory, train=2048, eval=512, tasks=("engagement", "conversion"), block_examples=128)
    return directory


@pytest.fixture(scope="session")
def single_task_examples_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("examples_single")
    write_transformed_examples(directory, train=4096, eval=1024, tasks=("engagement",), block_examples=128)
    return directory
