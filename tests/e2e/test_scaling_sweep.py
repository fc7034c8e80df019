"""A target swept over 1, 2 and 4 simulated devices on each lane through `adrank run` (`targets[].scale`,
docs/scaling.md): every point trains in its own train step on the devices its process simulates, and the report's
scaling table shows the points against point 1, saying the devices were simulated."""

import json

import pytest

from tests.support.cli import adrank, sets
from tests.support.tiny_config import TINY

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SWEEPS = ("targets=[{name: cpu, kind: cpu, price_per_hour: 0.38, scale: [1, 2, 4]}, "
          "{name: cpu-jax, kind: cpu, backend: jax, price_per_hour: 0.38, scale: [1, 2, 4]}]")


@pytest.mark.long  # one whole-DAG run of 6 training steps (2 min on the shared host)
def test_a_local_run_sweeps_each_lane_over_simulated_devices_and_reports_the_scaling_table(tmp_path):
    adrank("run", "--runs-dir", "runs", "--run-id", "sweep", "--quiet",
           *sets([*TINY, "training.global_batch_size=128", "training.steps_per_execution=2", SWEEPS]), cwd=tmp_path)
    run_dir = tmp_path / "runs" / "sweep"
    summary = json.loads((run_dir / "summary.json").read_text())
    seen = {run["target"]: run for run in summary["runs"]}
    assert sorted(seen) == sorted(["cpu", "cpu-x2", "cpu-x4", "cpu-jax", "cpu-jax-x2", "cpu-jax-x4"])
    for lane in ("cpu", "cpu-jax"):
        sweep = next(sweep for sweep in summary["scaling"] if sweep["target"] == lane)
        assert [(p["factor"], p["devices"], p["simulated"], p["global_batch_size"]) for p in sweep["points"]] == [
            (1, 1, False, 128), (2, 2, True, 256), (4, 4, True, 512)]  # per device: the batch grows with N
        # every point timed steady steps (×4: 7 steps, 3 executions of 2, the first start-up)
        assert all(p["examples_per_second_mean"] > 0 and p["efficiency"] > 0 for p in sweep["points"][1:])
    markdown = (run_dir / "report.md").read_text()
    assert "## Scaling" in markdown and "| cpu-jax | ×4 | cpu-jax-x4 | 4 (simulated) |" in markdown
    assert "| cpu | ×2 | cpu-x2 | 2 (simulated) |" in markdown
    assert "the devices were simulated on one host's CPU" in markdown
