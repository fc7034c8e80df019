"""Repeated training runs never share checkpoints: each run trains every step, a restarted run resumes its own."""

import pytest

from components.train.loop import checkpoint_dir
from components.train.training_run import train
from tests.components.train.config_fixture import small_config
from tests.components.train.fixture_data import write_transformed_examples

pytestmark = pytest.mark.slow  # three short training runs


@pytest.fixture(scope="module")
def examples_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("examples")
    write_transformed_examples(directory, train=1024, eval=256, tasks=("engagement",))
    return directory


def test_runs_sharing_aip_checkpoint_dir_each_train_every_step(examples_dir, tmp_path, monkeypatch):
    """As on Vertex when every run of a target (or every daily run) got the same AIP_CHECKPOINT_DIR."""
    monkeypatch.setenv("AIP_CHECKPOINT_DIR", str(tmp_path / "shared-checkpoints"))
    config = small_config(epochs=1)
    first = train(config, "cpu", 0, str(examples_dir), str(tmp_path / "run-1" / "model"))
    second = train(config, "cpu", 1, str(examples_dir), str(tmp_path / "run-2" / "model"))
    assert first.steps == second.steps == 4
    assert [p.step for p in first.curve] == [p.step for p in second.curve] != []  # run 2 did not resume run 1
    assert checkpoint_dir(str(tmp_path / "run-1" / "model")) != checkpoint_dir(str(tmp_path / "run-2" / "model"))

    restarted = train(config, "cpu", 0, str(examples_dir), str(tmp_path / "run-1" / "model"))
    assert restarted.curve == []  # the same task restarted (same output) resumes its finished checkpoint


def test_the_checkpoint_dir_stays_under_aip_checkpoint_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("AIP_CHECKPOINT_DIR", "gs://bucket/job/checkpoints/")
    nested = checkpoint_dir("/gcs/bucket/root/123/train-step/model")
    assert nested.startswith("gs://bucket/job/checkpoints/run-")
    assert nested == checkpoint_dir("/gcs/bucket/root/123/train-step/model/")
    monkeypatch.delenv("AIP_CHECKPOINT_DIR")
    assert checkpoint_dir(str(tmp_path)) == str(tmp_path / "checkpoints")
