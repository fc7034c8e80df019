"""Where a DirectRunner job's time went: the SDK harness's sampled execution time of every transform
(`beam:metric:ptransform_execution_time:total_msecs:v1`, summed over workers), grouped into preprocess stages.

`StageTimingDirectRunner` is the DirectRunner's batch runner (FnApiRunner, what preprocess runs locally) that keeps
each job's result, so a benchmark that only calls `preprocess()` can read the job's monitoring infos afterwards:
pass `--runner=benchmarks.stage_timing.StageTimingDirectRunner` in the Beam argv (Beam creates a runner from its
fully qualified class name). On a tree whose preprocess ran on `DirectRunner` (which tries its Prism runner first
and falls back to FnApiRunner where it cannot fetch it), the job runs as that tree ran it on this machine.
"""

from __future__ import annotations

import time
from collections import defaultdict

from apache_beam.metrics import monitoring_infos
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

STAGE_TIMING_RUNNER = "benchmarks.stage_timing.StageTimingDirectRunner"


class StageTimingDirectRunner(FnApiRunner):
    """FnApiRunner that remembers the result of every job it ran in this process (`results`) and its wall time
    (`job_seconds`; the DirectRunner's `run_pipeline` returns when the job is done)."""

    results: list = []
    job_seconds: list[float] = []

    def run_pipeline(self, pipeline, options):
        started = time.perf_counter()
        result = super().run_pipeline(pipeline, options)
        result.wait_until_finish()
        StageTimingDirectRunner.job_seconds.append(time.perf_counter() - started)
        StageTimingDirectRunner.results.append(result)
        return result


def transform_msecs(result) -> dict[str, int]:
    """Sampled milliseconds per transform name of a finished job (all workers, start + process + finish)."""
    msecs: dict[str, int] = defaultdict(int)
    for info in result.monitoring_infos():
        if info.urn == monitoring_infos.TOTAL_MSECS_URN:
            msecs[info.labels[monitoring_infos.PTRANSFORM_LABEL]] += int(monitoring_infos.extract_counter_value(info))
    return dict(msecs)
