"""The JAX lane trains through `components.train.lanes.train` with no TensorFlow in the process."""

import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from config_fixture import small_config, with_targets

from components.contracts.manifest import Manifest
from components.train import lanes
from components.train.jax_lane import checkpoints as jax_checkpoints
from components.train.jax_lane.runtime import JaxRuntime, jax_runtime
from components.train.trained_weights import TRAINED_WEIGHTS_DIR, TrainedWeights
from configs.slices import TrainStepConfig

ROOT = Path(__file__).resolve().parents[2]
JAX_TARGET = {"name": "cpu-jax", "kind": "cpu", "backend": "jax", "price_per_hour": 0.38}


def jax_config(**training) -> TrainStepConfig:
    return TrainStepConfig.of(with_targets(small_config(**training), JAX_TARGET), "cpu-jax")


def test_a_jax_run_trains_evaluates_and_accounts_for_its_time(blocks_dir, tmp_path):
    summary = lanes.train(jax_config(epochs=3), "cpu-jax", 1, str(blocks_dir), str(tmp_path / "model"))
    manifest = Manifest.read(blocks_dir)
    assert summary.backend == "jax" and summary.seed == small_config().seed + 1
    assert summary.hardware.device_kind == "CPU" and summary.hardware.replicas == len(jax_runtime("cpu").devices)
    assert summary.hardware.strategy.startswith("jax.jit")
    assert summary.steps == 3 * (4096 // 256) and summary.steps_per_epoch == 16
    evaluated = [(p.epoch, p.step) for p in summary.curve if p.eval_logloss is not None]
    assert evaluated == [(1, 16), (2, 32), (3, 48)]
    metrics = summary.metrics["engagement"]
    assert metrics.examples == 1024 and metrics.logloss < manifest.constant_ctr_logloss("engagement")
    assert summary.curve[-1].eval_logloss == metrics.logloss and 0.5 < metrics.auc <= 1
    split = summary.time_split
    assert split is not None and split.steady_steps == summary.steps - 4  # the first execution is start-up
    assert math.isclose(split.wall, summary.wall_time_seconds) and split.training > 0 and split.startup > 0
    assert summary.examples_per_second > 0 and summary.step_examples_per_second > 0
    assert 0.0 <= summary.input_stall_fraction <= 1.0 and summary.input_examples_per_second > 0
    assert summary.table_placement.embedding_hardware is False
    assert summary.table_placement.implementation.startswith("stacked arrays on the CPU")
    assert summary.embedding_tables[0].optimizer_slot_bytes == 2 * summary.embedding_tables[0].parameter_bytes
    assert summary.model_uri is None  # the export step writes the serving model
    weights = TrainedWeights.read(tmp_path / "model" / TRAINED_WEIGHTS_DIR)
    assert weights.model_class == "DCN" and set(weights.tables) == {"user_id_table", "ad_id_table",
                                                                    "user_interests_table"}
    assert len(weights.dense) == len(weights.dense_paths) and weights.config["embedding"]["kind"] == "sparse_rows"
    assert sys.modules["tensorflow"] is None  # nothing loaded TensorFlow behind the lane's back


def test_the_same_seed_gives_the_same_logloss_and_another_seed_another(blocks_dir, tmp_path):
    config = jax_config(epochs=1)
    first = lanes.train(config, "cpu-jax", 0, str(blocks_dir), str(tmp_path / "a"))
    again = lanes.train(config, "cpu-jax", 0, str(blocks_dir), str(tmp_path / "b"))
    other = lanes.train(config, "cpu-jax", 1, str(blocks_dir), str(tmp_path / "c"))
    assert first.metrics["engagement"].logloss == again.metrics["engagement"].logloss
    assert other.metrics["engagement"].logloss != first.metrics["engagement"].logloss


def test_a_killed_run_continues_from_its_last_checkpoint_to_the_same_model(blocks_dir, tmp_path, monkeypatch):
    config = jax_config(epochs=2, checkpoints_per_epoch=2)
    whole = lanes.train(config, "cpu-jax", 0, str(blocks_dir), str(tmp_path / "whole"))
    saved = jax_checkpoints.StateCheckpoints.save

    def save_then_die(self, state, step):
        path = saved(self, state, step)
        if step == 16:  # two of the four chunks done
            raise KeyboardInterrupt("killed")
        return path

    monkeypatch.setattr(jax_checkpoints.StateCheckpoints, "save", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        lanes.train(config, "cpu-jax", 0, str(blocks_dir), str(tmp_path / "killed"))
    monkeypatch.setattr(jax_checkpoints.StateCheckpoints, "save", saved)
    resumed = lanes.train(config, "cpu-jax", 0, str(blocks_dir), str(tmp_path / "killed"))
    assert [p.step for p in resumed.curve] == [24, 32]  # it trained only the chunks left
    assert resumed.time_split.checkpoints > 0
    assert resumed.metrics["engagement"].logloss == pytest.approx(whole.metrics["engagement"].logloss, rel=1e-6)


def test_evaluation_and_checkpoint_cadences_follow_the_config(blocks_dir, tmp_path):
    summary = lanes.train(jax_config(epochs=3, eval_every_epochs=2, eval_sample_examples=300,
                                     checkpoint_every_minutes=60.0), "cpu-jax", 0, str(blocks_dir),
                          str(tmp_path / "model"))
    assert [(p.epoch, p.eval_logloss is not None) for p in summary.curve] == [(1, False), (2, True), (3, True)]
    written = sorted(os.listdir(tmp_path / "model" / "checkpoints"))
    assert written == ["state-000000000048.npz"]  # within the hour: only the run's last chunk


def test_a_target_asking_for_a_gpu_fails_or_falls_back_naming_what_jax_saw(blocks_dir, tmp_path):
    gpu = {**JAX_TARGET, "name": "gpu-jax", "kind": "gpu"}
    config = TrainStepConfig.of(with_targets(small_config(epochs=1), gpu), "gpu-jax")
    with pytest.raises(Exception, match="JAX sees no GPU.*allow_cpu_fallback"):
        lanes.train(config, "gpu-jax", 0, str(blocks_dir), str(tmp_path / "model"))
    fallback = TrainStepConfig.of(with_targets(small_config(epochs=1), {**gpu, "allow_cpu_fallback": True}),
                                  "gpu-jax")
    summary = lanes.train(fallback, "gpu-jax", 0, str(blocks_dir), str(tmp_path / "fallback"))
    assert summary.hardware.device_kind == "CPU" and np.isfinite(summary.metrics["engagement"].logloss)


def test_a_run_writes_its_curves_for_tensorboard_where_vertex_asks(blocks_dir, tmp_path, monkeypatch):
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    monkeypatch.setenv("AIP_TENSORBOARD_LOG_DIR", str(tmp_path / "logs"))
    lanes.train(jax_config(epochs=2), "cpu-jax", 0, str(blocks_dir), str(tmp_path / "model"))
    scalars: dict[str, list[int]] = {}
    for path in sorted((tmp_path / "logs").glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append(event.step)
    assert scalars == {"train/loss": [16, 32], "eval/logloss": [16, 32]}  # the TensorFlow lane's tags


def test_a_state_on_other_devices_than_the_targets_is_refused_not_reported_as_the_target():
    """A `cpu` target on a machine with a GPU once trained on JAX's default device (the GPU) while its summary said
    cpu: the run now checks that the state is on the target's devices."""
    import jax

    runtime = jax_runtime("cpu")
    state = jax.device_put(np.zeros(3), runtime.devices[0])
    JaxRuntime(runtime.devices[:1], "CPU").check_placement(state)
    with pytest.raises(RuntimeError, match="not on the target's devices"):
        JaxRuntime(["elsewhere"], "GPU").check_placement(state)
