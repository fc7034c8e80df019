"""The one tiny config of the tests that run adrank end to end (`adrank run`, `retrain`, `run-spec` of a compiled
spec), as `--set` overrides of the config a test starts from, and the pieces it is made of. A test that needs more
(a second task, more epochs to be killed in, deterministic training to compare runs) adds its overrides after these:
a later `--set` of a key wins, so the difference reads as what that test needs.

    TINY = tiny synthetic logs + Beam in memory + 1 short epoch + short input measurements + one cpu run, no promotion
"""

from __future__ import annotations

# the DirectRunner in this process, one worker: a tiny preprocess in seconds, no worker processes to start
IN_MEMORY_BEAM = ["preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1"]
# input capacity and the paired-rounds input stall measured in 0.25 s rounds (3 rounds at least), not 2 s
SHORT_MEASUREMENTS = ["training.input_capacity_seconds=0.25"]
ONE_CPU_RUN = ["runs_per_target=1", "targets=[{name: cpu, kind: cpu, price_per_hour: 0.38}]"]


def tiny_logs(impressions_per_day: int = 2000, users: int = 200, ads: int = 40, advertisers: int = 8,
              days: int = 3) -> list[str]:
    """Synthetic logs of `days` days of `impressions_per_day` impressions."""
    return [f"logs.synthetic.days={days}", f"logs.synthetic.impressions_per_day={impressions_per_day}",
            f"logs.synthetic.users={users}", f"logs.synthetic.ads={ads}", f"logs.synthetic.advertisers={advertisers}"]


TINY = [*tiny_logs(), *IN_MEMORY_BEAM, "training.epochs=1", "training.global_batch_size=256", *SHORT_MEASUREMENTS,
        *ONE_CPU_RUN, "promotion.enabled=false"]
