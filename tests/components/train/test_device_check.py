"""The device check (benchmarks/device_check.py) runs end to end on this CPU in its CI-sized form: the JAX lane's real
trainer on each point, the figures printed and written."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_device_check_trains_every_quick_point_and_reports_its_figures(tmp_path):
    figures = tmp_path / "device_check.json"
    env = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    completed = subprocess.run(
        [sys.executable, "benchmarks/device_check.py", "run", "--quick", "--json", str(figures),
         "--cpu-figures", str(ROOT / "docs" / "figures" / "device_check_cpu_quick.json")],
        cwd=ROOT, capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=900)
    assert completed.returncode == 0, completed.stderr[-4000:]
    written = json.loads(figures.read_text())
    assert written["device"]["devices"] == ["cpu:cpu"] and written["device"]["jax"]
    assert [p["point"] for p in written["points"]] == ["default-dcn", "criteo-dcn-b1024-bf16"]
    for point in written["points"]:
        assert point["examples_per_second"] > 0 and point["step_ms"] > 0 and point["steady_steps"] > 0
        assert point["time_split"]["training"] > 0 and point["eval_logloss"] < 0.7
        assert point["vs_cpu"] > 0  # against the figures this script wrote here before (docs/figures)
        assert point["device"] == ["cpu"]  # read from where the state was, not from the target's label
    # the straightforward baseline beside the default point: the plain Keras DCN-v2 on the same examples and batch
    assert written["points"][0]["plain_examples_per_second"] > 0
    assert "plain_examples_per_second" not in written["points"][1]
    assert "examples/s" in completed.stdout and "criteo-dcn-b1024-bf16" in completed.stdout
