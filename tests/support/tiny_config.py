"""The one tiny config of the tests that run adrank end to end (`adrank run`, `retrain`, `run-spec` of a compiled
spec), as `--set` overrides of the config a test starts from, and the pieces it is made of. A test that needs more
(a second task, more epochs to be killed in, deterministic training to compare runs) adds its overrides after these:
a later `--set` of a key wins, so the difference reads as what that test needs.

    TINY = tiny synthetic logs + Beam in memory + 1 short epoch (the small-split rule off) + short input measurements + one cpu run, no promotion
    THREE_TARGETS = the whole-DAG run several files read (`three_target_run`, tests/support/fixtures.py)
"""

from __future__ import annotations

# the DirectRunner in this process, one worker: a tiny preprocess in seconds, no worker processes to start
IN_MEMORY_BEAM = ["preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1"]
# input capacity and the paired-rounds input stall measured in 0.25 s rounds (3 rounds at least), not 2 s
SHORT_MEASUREMENTS = ["training.input_capacity_seconds=0.25"]
# the tests size their own steps (an epoch or a few of a tiny log): the small-split rule would raise their epochs
OWN_STEPS = ["training.min_train_steps=0"]
ONE_CPU_RUN = ["runs_per_target=1", "targets=[{name: cpu, kind: cpu, price_per_hour: 0.38}]"]


def tiny_logs(impressions_per_day: int = 2000, users: int = 200, ads: int = 40, advertisers: int = 8,
              days: int = 3) -> list[str]:
    """Synthetic logs of `days` days of `impressions_per_day` impressions."""
    return [f"logs.synthetic.days={days}", f"logs.synthetic.impressions_per_day={impressions_per_day}",
            f"logs.synthetic.users={users}", f"logs.synthetic.ads={ads}", f"logs.synthetic.advertisers={advertisers}"]


TINY = [*tiny_logs(), *IN_MEMORY_BEAM, "training.epochs=1", "training.global_batch_size=256", *SHORT_MEASUREMENTS,
        *OWN_STEPS, *ONE_CPU_RUN, "promotion.enabled=false"]


# `three_target_run` (tests/support/fixtures.py): 3 targets x 2 runs, two tasks: DCN-v2 at batch 256 synchronously and
# on its own parameter-server cluster (cpu-ps: 1 worker, 1 ps; tests/components/train covers 2 workers and 2 ps), and
# PLE at batch 512 (5 epochs; 16 steps an epoch on these logs) on the JAX lane (its export step writes the serving
# model), fanned out and in; a TPU target is skipped. Twice the
# tiny logs, 3 epochs: the log-loss floors (between the Bayes and the constant-CTR log-loss) hold for both tasks.
THREE_TARGETS = [
    *tiny_logs(4000, users=400, ads=80, advertisers=12), *IN_MEMORY_BEAM, "training.epochs=3",
    "training.global_batch_size=256", *SHORT_MEASUREMENTS, *OWN_STEPS, "runs_per_target=2",
    "targets=[{name: cpu, kind: cpu, price_per_hour: 0.38}, "
    "{name: cpu-ple, kind: cpu, backend: jax, global_batch_size: 512, price_per_hour: 0.38, model: {kind: ple}, "
    "training: {epochs: 5}}, {name: cpu-ps, kind: cpu-ps, price_per_hour: 0.38, "
    "local_cluster: {workers: 1, parameter_servers: 1}}, "
    "{name: tpu-v5e, kind: tpu, price_per_hour: 1.2}]",
    "tasks=[{name: engagement, event_type: swipe, attribution_window_seconds: 3600}, "
    "{name: conversion, event_type: install, attribution_window_seconds: 86400}]",
]
