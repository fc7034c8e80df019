"""How much input a run's pipeline can deliver on this host, how fast its step runs when no input is waited for,
and how much of its step time its input costs (the input stall).

    input examples/s = batches read from a fresh iterator of the run's own train dataset, alone (before training
                       starts, nothing else on the host's cores), for `training.input_capacity_seconds`, the
                       first batches (buffer fill, tracing) excluded
    step examples/s  = global batch × steps / seconds over all the memory feed's rounds together
    input stall      = 1 − median over rounds of (t_memory / t_pipeline), clipped into [0, 1]

    after training, in alternating rounds (`paired_step_times`), the same model's train function is called
    on two iterators: the run's own train pipeline and batches of that pipeline held in memory (`memory_feed`:
    nothing to wait for); a round times a run of calls on each (pipeline first in even rounds, memory first in
    odd ones), at least an epoch of the pipeline's steps where the budget allows, so per-epoch work (a new
    permutation, the next files) is inside its rounds
    t_pipeline, t_memory = host seconds per step of a round's calls on each feed (each call runs
                           steps_per_execution steps, each taking its batch from the iterator inside the call, so
                           every wait for input is inside the timed span)

So the stall is the share of step time that a feed with no wait would have saved, whatever caused it: waiting on
an empty prefetch buffer, or (CPU training) the pipeline's threads taking cores from the step. Pairing the two
feeds round by round, and taking the median of the rounds' ratios, is what makes the figure hold on a shared
machine: a period in which other jobs take a core slows both feeds of a round alike, where two timings taken a
second apart (the run's own steps, then the memory feed) saw different machines (docs/input.md, "The input stall").
The step's own rate is a throughput taken the way the headline is (`RunClock.steady_examples_per_second`: steps over
the seconds they took, whatever happened in them), so the two compare like with like: a burst of other work on the
host counts in both. The median of the rounds' times, used before, is a typical round rather than a throughput; on
this shared host it sat 4–5% above the memory rounds' throughput and made every headline look that much short of
its step (docs/backends.md, "Like with like").
A clock inside the step cannot see the core sharing, and on a CPU step of a millisecond it mostly measured
itself: benchmarks/stall_meter.py checks this figure against a second clock.

When the step's rate is above the input's, no tuning of the step helps: the run is input-bound by that ratio. When
the input's rate is above the step's and the run still stalls, the pipeline is fast enough alone but not while
the step uses the same cores (CPU training). `components.report.findings.input_bound` says which.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

WARM_UP_BATCHES = 2
HELD_BATCHES = 32  # distinct batches the memory feed cycles through
HELD_BYTES = 64 * 2**20  # ... unless fewer fit this
MAX_ROUND_CALLS = 32  # calls on each feed in one round, at most
MIN_ROUNDS = 3  # the paired timing runs at least this many rounds, whatever its time budget


@dataclass
class PairedRounds:
    """Host seconds per step of each round's calls, fed from the run's pipeline and from memory, and the steps of
    each memory round (`paired_rounds`)."""

    pipeline: list[float] = field(default_factory=list)
    memory: list[float] = field(default_factory=list)
    memory_steps: list[int] = field(default_factory=list)

    def memory_seconds_per_step(self) -> float | None:
        """The memory rounds' seconds over their steps, all rounds together (None: none timed)."""
        if not self.memory:
            return None
        if len(self.memory_steps) != len(self.memory):
            raise ValueError(f"{len(self.memory)} memory rounds but steps for {len(self.memory_steps)}")
        return sum(seconds * steps for seconds, steps in zip(self.memory, self.memory_steps)) / sum(self.memory_steps)


def paired_rounds(timed_calls: Callable[[str, int], float], seconds: float, steps_per_call: int,
                  steps_per_epoch: int) -> PairedRounds:
    """Alternating rounds of train-function calls on the feeds "pipeline" and "memory" (`timed_calls(feed, calls)`:
    host seconds per step of `calls` calls on that feed), until the memory feed has had `seconds` and at least
    `MIN_ROUNDS` rounds ran (module doc). The first round is one call on each feed; later ones an epoch of calls
    (`epoch_calls`), fewer when `MIN_ROUNDS` rounds of that many would not fit `seconds` at the rate measured so far.
    Each lane's caller leaves out the first call on each feed (tracing, the feed's start) before calling this."""
    rounds, calls, timed = PairedRounds(), 1, 0.0
    while len(rounds.memory) < MIN_ROUNDS or timed < seconds:
        order = ("pipeline", "memory") if len(rounds.memory) % 2 == 0 else ("memory", "pipeline")
        for name in order:
            getattr(rounds, name).append(timed_calls(name, calls))
        rounds.memory_steps.append(calls * steps_per_call)
        call_seconds = rounds.memory[-1] * steps_per_call
        timed += call_seconds * calls
        affordable = int(seconds / MIN_ROUNDS / call_seconds) if call_seconds > 0 else calls
        calls = max(1, min(epoch_calls(steps_per_epoch, steps_per_call), affordable))
    return rounds


def epoch_calls(steps_per_epoch: int, steps_per_call: int) -> int:
    """Calls that cover an epoch of steps (so a pipeline round holds its per-epoch work), at most
    `MAX_ROUND_CALLS`."""
    return max(1, min(MAX_ROUND_CALLS, -(-max(steps_per_epoch, 1) // steps_per_call)))


def input_stall_fraction(rounds: PairedRounds) -> float | None:
    """1 − the median over rounds of t_memory / t_pipeline, clipped into [0, 1]; None when nothing was timed."""
    ratios = [memory / pipeline for pipeline, memory in zip(rounds.pipeline, rounds.memory, strict=True)
              if pipeline > 0]
    if not ratios:
        return None
    return min(1.0, max(0.0, 1.0 - statistics.median(ratios)))
