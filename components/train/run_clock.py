"""Where a training run's wall time went: every second in one of a few phases, so the headline throughput (training
steps only) and the overhead around it are read side by side.

    start-up      imports, reading the manifest, building the model, the first execution of the train step
                  (tracing and compilation)
    input wait    time the steady training waited for input: the JAX lane's loop blocked on an empty reader queue;
                  on the TensorFlow lane, whose step takes its batches inside the step function, the paired-rounds
                  input stall's share of the steady time (`input_capacity`)
    training      the train step's steady state: executions after the first, input waits taken out
    evaluation    per-epoch evaluation, the final evaluation and the calibration step's predictions
    checkpoints   writing (and restoring) checkpoints
    input check   measuring the input alone and the paired-rounds stall (`input_capacity`)
    export        writing the serving model and its warm-start state
    other         whatever else the run did (the difference to its wall time: progress lines, summaries)

`RunClock.phase(name)` times a block into one phase; the steady training rate (the headline examples/s) is the steps
trained in steady state over the training and input-wait seconds: what the hardware and its input delivered, with
evaluation, checkpoints and start-up apart. Both lanes read the host's clock at execution boundaries only (never inside a step: a
device step is asynchronous and a per-step host sync would itself slow it).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator

from components.contracts.time_split import PHASES, TimeSplit


def examples_rate(steps: float, global_batch_size: int, seconds: float) -> float | None:
    """`steps` of `global_batch_size` examples in `seconds`: every examples/s adrank reports (steady training,
    the step fed from memory, the input alone, a progress line) is this; None when nothing was timed."""
    if steps <= 0 or not 0 < seconds < math.inf:
        return None
    return steps * global_batch_size / seconds


class RunClock:
    """Accumulates a run's phases from its start (`started`, a `time.perf_counter()` value)."""

    def __init__(self, started: float | None = None):
        self.started = time.perf_counter() if started is None else started
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.steady_steps = 0
        self._startup_closed = False

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        begun = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - begun)

    def add(self, name: str, seconds: float) -> None:
        if name not in self.seconds:
            raise ValueError(f"unknown run phase {name!r}; phases: {PHASES}")
        self.seconds[name] += max(0.0, seconds)

    def close_startup(self) -> None:
        """Everything since `started` that no phase holds yet was start-up (imports, the manifest, building the model
        and its state): called once, just before the first execution."""
        if not self._startup_closed:
            self.add("startup", time.perf_counter() - self.started - sum(self.seconds.values()))
            self._startup_closed = True

    def training_steps(self, steps: int, seconds: float, waited: float) -> None:
        """`steps` steady steps took `seconds` of which `waited` waiting for input."""
        self.steady_steps += steps
        self.add("input_wait", waited)
        self.add("training", seconds - waited)

    def input_wait_share(self, stall: float | None) -> None:
        """Move `stall` (a share of the steady time, the TensorFlow lane's paired-rounds stall) from training to input
        wait; nothing without a stall figure."""
        if stall is None:
            return
        waited = self.seconds["training"] * min(1.0, max(0.0, stall))
        self.seconds["training"] -= waited
        self.seconds["input_wait"] += waited

    def steady_examples_per_second(self, global_batch_size: int) -> float:
        """Examples/s of the steady training, input waits included (0 when no steady step was timed)."""
        seconds = self.seconds["training"] + self.seconds["input_wait"]
        return examples_rate(self.steady_steps, global_batch_size, seconds) or 0.0

    def split(self) -> TimeSplit:
        wall = time.perf_counter() - self.started
        accounted = sum(self.seconds.values())
        return TimeSplit(**self.seconds, other=max(0.0, wall - accounted), steady_steps=self.steady_steps)
