"""Determinism, checkpoint resume after an interruption, and the non-finite-loss stop."""

import pytest
import tensorflow as tf
from config_fixture import small_config
from fixture_data import write_transformed_examples

from components.train import callbacks
from components.train.failures import NonFiniteLossError
from components.train.loop import checkpoint_dir
from components.train.training_run import train


def test_two_runs_with_one_seed_give_identical_logloss_by_default(examples_dir, tmp_path):
    config = small_config(epochs=1)  # training.deterministic left at its default
    assert config.training.deterministic
    first = train(config, "cpu", 0, str(examples_dir), str(tmp_path / "a"))
    second = train(config, "cpu", 0, str(examples_dir), str(tmp_path / "b"))
    other_seed = train(config, "cpu", 1, str(examples_dir), str(tmp_path / "c"))
    for task in ("engagement", "conversion"):
        assert first.metrics[task].logloss == second.metrics[task].logloss
        assert first.metrics[task].auc == second.metrics[task].auc
    assert [p.loss for p in first.curve] == [p.loss for p in second.curve]
    assert first.metrics["engagement"].logloss != other_seed.metrics["engagement"].logloss
    # measured under op determinism too: the stall meter's clock is the host's, around the train function
    assert first.input_stall_fraction is not None and 0.0 <= first.input_stall_fraction <= 1.0


def test_an_interrupted_run_resumes_from_its_checkpoint_and_ends_at_the_same_step(
    examples_dir, tmp_path, monkeypatch
):
    config = small_config(epochs=2, checkpoints_per_epoch=2)  # 8 steps per epoch → chunks of 4 steps
    model_dir = str(tmp_path / "model")
    original_save = callbacks.SaveCheckpoint.on_epoch_end

    def save_then_die(self, epoch, logs=None):
        original_save(self, epoch, logs)
        if epoch == 1:
            raise KeyboardInterrupt("killed after the second checkpoint")

    monkeypatch.setattr(callbacks.SaveCheckpoint, "on_epoch_end", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        train(config, "cpu", 0, str(examples_dir), model_dir)
    assert tf.train.latest_checkpoint(checkpoint_dir(model_dir)).endswith("-8")
    monkeypatch.setattr(callbacks.SaveCheckpoint, "on_epoch_end", original_save)

    resumed = train(config, "cpu", 0, str(examples_dir), model_dir)
    uninterrupted = train(config, "cpu", 0, str(examples_dir), str(tmp_path / "straight"))
    assert resumed.steps == uninterrupted.steps == 16
    assert [p.step for p in resumed.curve] == [12, 16]  # only the chunks after the checkpoint ran
    assert tf.train.latest_checkpoint(checkpoint_dir(model_dir)).endswith("-16")


def test_a_nan_loss_stops_the_run_with_a_clear_error(tmp_path):
    write_transformed_examples(tmp_path / "examples", train=512, eval=128, corrupt_numeric=True)
    with pytest.raises(NonFiniteLossError, match="(loss|gradient norm) is nan by step"):  # checked at chunk ends
        train(small_config(epochs=1), "cpu", 0, str(tmp_path / "examples"), str(tmp_path / "model"))
