"""Training prints where it is: epoch, step, examples/s and an ETA, while `fit` runs with verbose off."""

import logging

import keras
import numpy as np
import tensorflow as tf

from components.train.training_progress import TrainingProgress
from foundation.log_lines import record_fields


def _lines(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "progress"]


def test_a_progress_line_measures_the_pace_after_the_first_execution():
    progress = TrainingProgress(total_steps=300, steps_per_epoch=100, global_batch_size=100, clock=lambda: 0.0)
    progress.last_line = (0.0, 0)
    progress.steady = (10.0, 10)  # the first execution (tracing) took 10 s for 10 steps
    assert progress.line(20.0, 110) == "epoch 2/3  step 110/300  1,000 ex/s  ETA 0:19"
    # the window starts at the previous line (50 steps in 25 s); the ETA keeps the pace since step 10: 140 steps
    # left at 150 steps / 35 s
    assert progress.line(45.0, 160) == "epoch 2/3  step 160/300  200 ex/s  ETA 0:33"
    assert progress.line(45.0, 300, done=True) == "epoch 3/3 done  step 300/300  — ex/s  ETA 0:00"


def test_a_keras_fit_prints_a_start_line_interim_lines_and_each_epoch_end(caplog):
    caplog.set_level(logging.INFO, logger="progress")
    ticks = iter(range(10_000))
    x = np.random.default_rng(0).normal(size=(96, 4)).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(4).repeat()
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
    progress = TrainingProgress(total_steps=24, steps_per_epoch=12, global_batch_size=4, interval_seconds=2,
                                clock=lambda: float(next(ticks)), logger=logging.getLogger("progress"))
    # chunks of 6 steps, 2 per epoch (as StepPlan groups them): only chunks that end an epoch print "done"
    model.fit(data, steps_per_epoch=6, epochs=4, callbacks=[progress], verbose=0)
    lines = _lines(caplog)
    assert lines[0] == "training 24 steps (2 epochs of 12) of 4 examples"
    done = [line for line in lines if " done " in line]
    assert [line.split("  ")[:2] for line in done] == [["epoch 1/2 done", "step 12/24"], ["epoch 2/2 done", "step 24/24"]]
    assert all("loss " in line and "ex/s" in line for line in done) and done[-1].split("  ")[3] == "ETA 0:00"
    interim = [line for line in lines[1:] if " done " not in line]
    assert interim and all(line.startswith("epoch ") and " ex/s  ETA " in line for line in interim)
    steps = [int(line.split("step ")[1].split("/")[0]) for line in lines[1:]]
    assert steps == sorted(steps) and steps[-1] == 24


def test_a_loop_without_fit_reports_through_the_same_lines(caplog):
    caplog.set_level(logging.INFO, logger="progress")
    now = [0.0]
    progress = TrainingProgress(total_steps=40, steps_per_epoch=20, global_batch_size=10, interval_seconds=100,
                                clock=lambda: now[0], logger=logging.getLogger("progress"))
    progress.begin(10)  # resumed from a checkpoint at step 10
    for step in (15, 20, 25, 30, 35, 40):  # chunks of 5 steps, 1 s each after a 4 s first chunk
        now[0] += 4.0 if step == 15 else 1.0
        progress.steps_done(step)
        progress.chunk_done(step, loss=0.5)
    assert _lines(caplog) == [
        "training 40 steps (2 epochs of 20) of 10 examples, resuming at step 10",
        "epoch 1/2 done  step 20/40  50 ex/s  ETA 0:04  loss 0.5000",
        "epoch 2/2 done  step 40/40  50 ex/s  ETA 0:00  loss 0.5000",
    ]
    # the figures are the records' fields, not only their text
    start, first_epoch = (record_fields(record) for record in caplog.records[:2])
    assert start == {"progress": True, "step": 10, "total_steps": 40, "epochs": 2, "global_batch_size": 10}
    assert first_epoch == {"progress": True, "epoch": 1, "epochs": 2, "step": 20, "total_steps": 40,
                           "examples_per_second": 50.0, "eta_seconds": 4.0, "loss": 0.5, "eval_logloss": None}
