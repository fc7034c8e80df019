"""Can the input-stall figure be trusted? The default model on CPU, the same examples, one process:

    second clock   wall time per step of `fit` (from the end of its first execution, which starts a new iterator, to
                   the end of its last; a plain callback, `StepClock`), one model fed from the run's batches held in
                   memory (nothing to wait for), another from the trainer's pipeline (blocks, cached: what the
                   default config does), in alternating rounds: stall = 1 − t_memory / t_pipeline (medians of the
                   rounds, and the range of the rounds' own ratios)
    meter          the run's meter (components/train/input_capacity.py, `paired_step_times`): the host clock around
                   the train function, the pipeline against its batches held in memory in alternating rounds, as
                   `fit_synchronous` takes it after training; one reading per round, and one of memory against memory
                   (true stall 0)
    sequential     the meter before the paired rounds: the pipeline's steps timed, then as many fed from memory, one
                   timing after the other (what a run read until 2026-11-26)
    in-graph meter the previous meter (kept below to show what it measured): stamps inside the step, the wait being
                   the gap between one step's end stamp and the next one's start stamp; with `tf.timestamp`
                   (op determinism off) and with the host clock through `tf.py_function` (what op determinism, the
                   default, forced). On the memory feed the true wait is about 0: what it reads there is itself.

    PYTHONPATH=. .venv/bin/python benchmarks/stall_meter.py [--examples DIR] [--steps 200] [--rounds 5]
DIR is a preprocess output (manifest.json); without it a synthetic one (45k examples, the default's size) is written
to a temp dir. The load average is printed before and after: on a shared machine only ratios taken in one run mean
much.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import keras
import tensorflow as tf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from training_setup import training_bench  # puts the repo on sys.path

from components.train.callbacks import StepClock
from components.train.input_capacity import input_stall_fraction
from components.train.loop import compiled_model
from components.train.run_clock import RunClock
from components.train.strategy import runtime_for
from components.train.tf_input_capacity import input_examples_per_second, memory_feed, paired_step_times, timed_calls


class InGraphStallMeter:
    """The meter before this benchmark: each step stamped inside the training function once its batch has arrived
    and after its updates; wait = gap between one step's end stamp and the next one's start stamp (reset before
    every execution), stall = Σ waits / (Σ waits + Σ step time)."""

    def __init__(self, host_clock: bool):
        self.host_clock = host_clock
        self.waited = tf.Variable(0.0, dtype=tf.float64, trainable=False)
        self.computed = tf.Variable(0.0, dtype=tf.float64, trainable=False)
        self.last_end = tf.Variable(0.0, dtype=tf.float64, trainable=False)

    def stamp(self):
        if self.host_clock:
            stamp = tf.py_function(time.time, [], tf.float64)
            stamp.set_shape([])
            return stamp
        return tf.timestamp()

    def wrap(self, model) -> None:
        train_step = model.train_step

        def timed_train_step(data):
            with tf.control_dependencies(tf.nest.flatten(data)):
                started = self.stamp()
            self.waited.assign_add(tf.maximum(started - self.last_end, 0.0))
            logs = train_step(data)
            with tf.control_dependencies(tf.nest.flatten(logs) + [model.optimizer.iterations.value]):
                ended = self.stamp()
            self.computed.assign_add(ended - started)
            self.last_end.assign(ended)
            return logs

        model.train_step = timed_train_step
        meter = self

        class ResetBeforeExecution(keras.callbacks.Callback):
            """The clock set to "now" before every execution; the first execution (a new iterator's start) left
            out."""

            def on_train_begin(self, logs=None):
                self.executions = 0

            def on_train_batch_begin(self, batch, logs=None):
                meter.last_end.assign(time.time())

            def on_train_batch_end(self, batch, logs=None):
                self.executions += 1
                if self.executions == 1:
                    meter.waited.assign(0.0)
                    meter.computed.assign(0.0)

        self.callback = ResetBeforeExecution()

    def reading(self, fit: Callable) -> float:
        fit([self.callback])
        waited, computed = float(self.waited.numpy()), float(self.computed.numpy())
        return waited / (waited + computed)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.1%} (range {min(values):.1%} – {max(values):.1%})"


def main() -> None:
    bench = training_bench(__doc__.splitlines()[0],
                           lambda parser: parser.add_argument("--rounds", type=int, default=5))
    steps, batch, rounds = bench.steps, bench.batch, bench.args.rounds
    print(f"load average {os.getloadavg()[0]:.1f}; {bench.manifest.splits['train'].examples:,} train examples, "
          f"batch {batch}, {steps} steps a reading, {rounds} rounds", flush=True)
    runtime = runtime_for("cpu")
    spe = bench.resolved.training.steps_per_execution

    def new_model(data):
        model = compiled_model(bench.resolved, runtime, bench.manifest, held[0][0], spe)
        model.fit(data, steps_per_epoch=2 * spe, epochs=1, verbose=0)  # trace and warm up
        return model

    def fit(model, data, callbacks=()):
        model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=list(callbacks))

    def wall_per_step(model, data) -> float:
        """Seconds per step from the end of the first execution (a new iterator's start: tracing is long done) to
        the end of the last, by the host clock in a plain callback (`StepClock`)."""
        run_clock = RunClock()
        fit(model, data, [StepClock(run_clock)])
        steps_per_second = run_clock.steady_examples_per_second(1)
        assert steps_per_second > 0
        return 1 / steps_per_second

    # the in-graph meter with tf.timestamp first: op determinism (turned on below, as a default run has it)
    # refuses tf.timestamp, and it cannot be turned off again through a public API
    held: list = []
    input_examples_per_second(bench.real_dataset(cache=True), batch, 1.0, held)
    memory, pipeline = memory_feed(held), bench.real_dataset(cache=True)
    feeds = {"memory": memory, "pipeline": pipeline}
    in_graph: dict[tuple[str, str], list[float]] = {}
    for stamp in ("tf.timestamp", "py_function"):
        if stamp == "py_function":
            tf.config.experimental.enable_op_determinism()
        meters = {}
        for feed, data in feeds.items():
            meter = InGraphStallMeter(host_clock=stamp == "py_function")
            model = compiled_model(bench.resolved, runtime, bench.manifest, held[0][0], spe)
            meter.wrap(model)
            model.fit(data, steps_per_epoch=2 * spe, epochs=1, verbose=0)
            meters[feed] = (meter, model, data)
        for _ in range(rounds):
            for feed, (meter, model, data) in meters.items():
                in_graph.setdefault((stamp, feed), []).append(
                    meter.reading(lambda callbacks, m=model, d=data: fit(m, d, callbacks)))

    walls: dict[str, list[float]] = {"memory": [], "pipeline": []}
    second_clock, meter_readings, meter_memory, sequential = [], [], [], []
    plain = {feed: new_model(data) for feed, data in feeds.items()}
    metered = new_model(pipeline)
    seconds = bench.resolved.training.input_capacity_seconds
    per_epoch = bench.manifest.splits["train"].examples // batch
    for number in range(rounds):
        for feed, data in feeds.items():
            walls[feed].append(wall_per_step(plain[feed], data))
        second_clock.append(1 - walls["memory"][-1] / walls["pipeline"][-1])
        # the meter as a run takes it: the pipeline against memory, in alternating paired rounds
        meter_readings.append(input_stall_fraction(
            paired_step_times(metered, runtime.strategy, pipeline, held, seconds, per_epoch)) or 0.0)
        # the meter on a feed with nothing to wait for: memory against memory
        meter_memory.append(input_stall_fraction(
            paired_step_times(metered, runtime.strategy, memory, held, seconds, per_epoch)) or 0.0)
        # the previous meter: `steps` from the pipeline, then as many from memory, one timing after the other
        timings = {}
        for feed, data in feeds.items():
            iterator = iter(data)
            timed_calls(metered, iterator, 1)
            timings[feed] = timed_calls(metered, iterator, max(1, steps // spe))
        sequential.append(max(0.0, 1 - timings["memory"] / timings["pipeline"]))
        print(f"round {number + 1}: ms/step memory {walls['memory'][-1] * 1e3:.2f}, pipeline "
              f"{walls['pipeline'][-1] * 1e3:.2f}; second clock {second_clock[-1]:.1%}, meter {meter_readings[-1]:.1%}"
              f", meter on memory {meter_memory[-1]:.1%}, sequential meter {sequential[-1]:.1%}", flush=True)

    t_memory, t_pipeline = statistics.median(walls["memory"]), statistics.median(walls["pipeline"])
    true_stall = 1 - t_memory / t_pipeline
    print(f"\nload average {os.getloadavg()[0]:.1f}")
    print(f"wall time per step (median of {rounds} rounds): memory {t_memory * 1e3:.2f} ms, pipeline "
          f"{t_pipeline * 1e3:.2f} ms; pipeline / memory {t_pipeline / t_memory:.2f}x")
    print(f"{'second clock':>34}: stall {true_stall:6.1%} (1 − median memory / median pipeline); per round "
          f"{spread(second_clock)}")
    print(f"{'meter (paired rounds)':>34}: pipeline {spread(meter_readings)}   memory {spread(meter_memory)}")
    print(f"{'sequential meter (before)':>34}: pipeline {spread(sequential)}")
    print(f"{'':>34}  meter − second clock: {statistics.median(meter_readings) - true_stall:+.1%} points")
    for clock_name in ("tf.timestamp", "py_function"):
        print(f"{'in-graph meter, ' + clock_name:>34}: pipeline {spread(in_graph[(clock_name, 'pipeline')])}   "
              f"memory {spread(in_graph[(clock_name, 'memory')])}")


if __name__ == "__main__":
    main()
