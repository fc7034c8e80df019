"""Progress lines of a training run, in either lane (a Keras callback under `fit`; the parameter-server loop and the
JAX lane call its methods themselves)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import keras

from components.progress import format_duration, progress
from components.train.run_clock import examples_rate
from components.train.step_plan import StepPlan

log = logging.getLogger(__name__)


class TrainingProgress(keras.callbacks.Callback):
    """Progress lines (`components.progress`) while `fit` runs silently: one when training starts, one every
    `interval_seconds`, and one at the end of each training epoch, with its loss and eval log-loss when known:

        epoch 2/3  step 140/300  9,800 ex/s  ETA 0:41
        epoch 2/3 done  step 200/300  9,750 ex/s  ETA 0:10  loss 0.4412  eval log-loss 0.4470

    Steps are the optimizer's (a resumed run counts on from its checkpoint). examples/s is measured over the steps
    since the previous line; the ETA divides the remaining steps by the pace since the first execution ended
    (tracing and warm-up excluded), so it is shown from the second execution on. Put it after `EpochEvaluation`
    in the callbacks list to see the eval log-loss. A loop without Keras `fit` (the parameter-server loop) calls
    `begin`, `steps_done` and `chunk_done` itself.

    Each line is a progress record on `logger` (this module's) whose fields carry the figures: `epoch`, `epochs`,
    `step`, `total_steps`, `examples_per_second`, `eta_seconds` (None until known), `loss`, `eval_logloss`."""

    def __init__(self, total_steps: int, steps_per_epoch: int, global_batch_size: int, interval_seconds: float = 30.0,
                 clock: Callable[[], float] = time.monotonic, logger: logging.Logger = log):
        super().__init__()
        self.total_steps, self.steps_per_epoch = total_steps, steps_per_epoch
        self.epochs = max(1, -(-total_steps // steps_per_epoch))
        self.global_batch_size, self.interval_seconds = global_batch_size, interval_seconds
        self.clock, self.logger = clock, logger
        self.steady: tuple[float, int] | None = None  # (time, step) when the first execution ended
        self.last_line: tuple[float, int] = (clock(), 0)
        self.figures: dict[str, float | int | None] = {}  # those of the last `line`
        self.chunk_step = 0  # the step the current chunk ('epoch' of fit) started at

    @classmethod
    def of_plan(cls, plan: StepPlan, global_batch_size: int) -> TrainingProgress:
        """The progress of a run of `plan` (every loop's: fit, the parameter-server loop, the JAX lane)."""
        return cls(plan.total_steps, plan.chunks_per_epoch * plan.chunk_steps, global_batch_size)

    def say(self, text: str, **values: float | int | None) -> None:
        self.logger.info(text, extra=progress(**values))

    def begin(self, step: int) -> None:
        """Training starts (or resumes) at `step`."""
        self.steady, self.last_line = None, (self.clock(), step)
        resumed = f", resuming at step {step:,}" if step else ""
        self.say(f"training {self.total_steps:,} steps ({self.epochs} epoch{'s' if self.epochs > 1 else ''} of "
                 f"{self.steps_per_epoch:,}) of {self.global_batch_size:,} examples{resumed}",
                 step=step, total_steps=self.total_steps, epochs=self.epochs, global_batch_size=self.global_batch_size)

    def steps_done(self, step: int) -> None:
        """An execution ended at `step`: a line when `interval_seconds` have passed since the last one."""
        now = self.clock()
        if self.steady is None:
            self.steady = (now, step)
        if now - self.last_line[0] >= self.interval_seconds:
            self.say(self.line(now, step), **self.figures)

    def chunk_done(self, step: int, loss: float | None = None, eval_logloss: float | None = None) -> None:
        """A checkpoint chunk ended at `step`: a line with its figures when it ends a training epoch."""
        if step % self.steps_per_epoch and step != self.total_steps:
            return  # a chunk inside an epoch
        figures = "".join(f"  {name} {value:.4f}" for name, value in (("loss", loss), ("eval log-loss", eval_logloss))
                          if value is not None)
        self.say(self.line(self.clock(), step, done=True) + figures, **self.figures, loss=loss,
                 eval_logloss=eval_logloss)

    def on_train_begin(self, logs=None):
        self.begin(self._step())

    def on_epoch_begin(self, epoch, logs=None):
        self.chunk_step = self._step()

    def on_train_batch_begin(self, batch, logs=None):
        """An execution starts at step `chunk_step + batch`: the previous one's steps are done (told without reading
        the device's step counter, so no execution waits for the host)."""
        step = self.chunk_step + int(batch)
        if step > self.chunk_step and (self.steady is None or self.clock() - self.last_line[0] >= self.interval_seconds):
            self.steps_done(step)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        loss, eval_logloss = (None if logs.get(key) is None else float(logs[key]) for key in ("loss", "eval_logloss"))
        self.chunk_done(self._step(), loss, eval_logloss)

    def line(self, now: float, step: int, done: bool = False) -> str:
        """`epoch e/E[ done]  step s/S  r ex/s  ETA m:ss` at `step`, and the start of the next line's window; its
        figures in `self.figures`."""
        epoch = min(self.epochs, max(1, -(-step // self.steps_per_epoch)))
        since, since_step = self.last_line
        if self.steady is not None and since_step < self.steady[1] <= step:
            since, since_step = self.steady  # the first execution (tracing) is not a pace
        rate = examples_rate(step - since_step, self.global_batch_size, now - since)
        self.last_line = (now, step)
        eta, eta_seconds = "—", None
        if self.steady is not None and step > self.steady[1] and now > self.steady[0]:
            steps_per_second = (step - self.steady[1]) / (now - self.steady[0])
            eta_seconds = (self.total_steps - step) / steps_per_second
            eta = format_duration(eta_seconds)
        self.figures = {"epoch": epoch, "epochs": self.epochs, "step": step, "total_steps": self.total_steps,
                        "examples_per_second": rate, "eta_seconds": eta_seconds}
        return (f"epoch {epoch}/{self.epochs}{' done' if done else ''}  step {step:,}/{self.total_steps:,}  "
                f"{f'{rate:,.0f}' if rate is not None else '—'} ex/s  ETA {eta}")

    def _step(self) -> int:
        return int(self.model.optimizer.iterations.numpy())
