"""The whole DAG on the local engine, as a user runs it: `adrank run`, then the review commands. The run is
`three_target_run` (tests/support/fixtures.py), made once per session for every file that reads it."""

import json
import math

import pytest

from tests.support.cli import adrank, sets
from tests.support.console import NATIVE_LINE
from tests.support.tiny_config import IN_MEMORY_BEAM, SHORT_MEASUREMENTS, tiny_logs

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# the run `test_a_failed_run_names_the_step_and_the_reason` breaks
TINY = [*tiny_logs(4000, users=400, ads=80, advertisers=12), *IN_MEMORY_BEAM, "training.epochs=3",
        "training.global_batch_size=256", *SHORT_MEASUREMENTS]


def test_run_prints_the_report_path_last(three_target_run):
    runs_dir, result = three_target_run
    last = result.stdout.strip().splitlines()[-1]
    assert last == f"report: {(runs_dir / 'tiny' / 'report.html').resolve()}"
    assert "skipped target tpu-v5e (tpu): the local backend has no TPU" in result.stdout


def test_the_console_shows_no_native_start_up_lines(three_target_run):
    """TensorFlow's C++ start-up lines (every step imports it) stay in the steps' logs; the console has none."""
    _, result = three_target_run
    assert not NATIVE_LINE.search(result.stdout + result.stderr), result.stderr


def test_run_shows_each_step_and_what_it_is_doing(three_target_run):
    _, result = three_target_run
    lines = result.stdout.splitlines()
    assert "  ▶ preprocess" in lines and any(line.startswith("  ✓ preprocess: success (") for line in lines)
    for progress in ("      impressions: read 12,000 records", "      running the Beam job (DirectRunner)"):
        assert progress in lines
    assert any(line.startswith("      train split: ") and line.endswith(" examples") for line in lines)
    training = [line.strip() for line in lines if line.startswith("      epoch ")]
    # cpu (Keras fit) and cpu-ps (the parameter-server loop) train 3 epochs, cpu-ple 5, 2 runs each: a line at every
    # epoch's end
    assert sum(line.startswith("epoch 3/3 done") for line in training) == 4
    assert sum(line.startswith("epoch 5/5 done") for line in training) == 2
    assert all(" ex/s  ETA " in line for line in training)


def test_summary_has_every_run_between_the_floors(three_target_run):
    runs_dir, _ = three_target_run
    summary = json.loads((runs_dir / "tiny" / "summary.json").read_text())
    assert set(summary["targets"]) == {"cpu", "cpu-ple", "cpu-ps"}
    assert [(s["name"], s["kind"]) for s in summary["skipped_targets"]] == [("tpu-v5e", "tpu")]
    for target in summary["targets"].values():
        assert target["runs"] == 2
        assert math.isfinite(target["logloss_mean"]) and target["logloss_std"] is not None
        assert summary["bayes_logloss"] < target["logloss_mean"] < summary["constant_ctr_logloss"]
        assert target["examples_per_second_mean"] > 0
        assert target["hardware_seen"] and all("CPU" in h for h in target["hardware_seen"])
    assert summary["targets"]["cpu-ple"]["global_batch_size"] == 512
    assert {name: t["backend"] for name, t in summary["targets"].items()} == {
        "cpu": "tensorflow", "cpu-ple": "jax", "cpu-ps": "tensorflow"}
    for run in summary["runs"]:  # every run's time accounted for, and a served model from either lane
        split = run["time_split"]
        phases = sum(value for name, value in split.items() if name != "steady_steps")
        assert phases == pytest.approx(run["wall_time_seconds"], rel=1e-6) and split["training"] > 0, run
        assert run["model_uri"] and run["table_placement"], run
    assert {r["strategy"] for r in summary["runs"] if r["target"] == "cpu-ple"} == {"jax.jit on one device"}
    assert len(summary["runs"]) == 6
    assert {r["strategy"] for r in summary["runs"] if r["target"] == "cpu-ps"} == {"ParameterServerStrategy"}
    for run in summary["runs"]:  # every run measured its input stall: a share of step time
        assert 0.0 <= run["input_stall_fraction"] <= 1.0, run
        # and what its input pipeline delivers alone next to what its step consumes
        assert run["input_examples_per_second"] > 0 and run["step_examples_per_second"] > 0, run
        if run["target"] == "cpu-ps":  # the step's own rate is the workers' together, as the headline counts them:
            # the headline over it is the share of the steady window the workers computed, at most 1
            # (the definition itself: test_server_role.py)
            assert run["examples_per_second"] <= 1.05 * run["step_examples_per_second"], run
    for target in summary["targets"].values():  # read from the training-ready blocks preprocess wrote
        assert target["input_format"] == "blocks" and target["input_examples_per_second_mean"] > 0
    for target in summary["targets"].values():
        assert 0.0 <= target["input_stall_mean"] <= 1.0
    assert {(r["target"], r["run_index"]) for r in summary["runs"]} == {
        ("cpu", 0), ("cpu", 1), ("cpu-ple", 0), ("cpu-ple", 1), ("cpu-ps", 0), ("cpu-ps", 1)}
    for name, target in summary["targets"].items():  # both models report both tasks, with statistics
        conversion = target["tasks"]["conversion"]
        assert conversion["logloss"]["n"] == 2 and math.isfinite(conversion["logloss"]["mean"])
        assert (conversion["vs_baseline"] is None) == (name == summary["baseline_target"])
    assert summary["tasks"]["conversion"]["eval_positive_rate"] < summary["tasks"]["engagement"]["eval_positive_rate"]
    html = (runs_dir / "tiny" / "report.html").read_text()
    assert "cpu-ple" in html and "data:image/png;base64," in html and "conversion" in html
    markdown = (runs_dir / "tiny" / "report.md").read_text()
    assert "cpu-ple" in markdown and "Skipped tpu-v5e (tpu)" in markdown
    assert "## Where the time went" in markdown and "stacked arrays on the CPU, sparse row updates" in markdown
    assert "Synchronous cpu vs asynchronous cpu-ps (parameter servers)" in markdown
    for figure in ("logloss_per_run.png", "throughput.png", "cost.png", "training_curves.png"):  # beside report.md
        assert f"]({figure})" in markdown and (runs_dir / "tiny" / figure).read_bytes().startswith(b"\x89PNG")


def test_review_commands_read_the_run(three_target_run):
    runs_dir, _ = three_target_run
    listing = adrank("runs", "list", "--runs-dir", str(runs_dir), cwd=runs_dir).stdout
    assert "tiny" in listing and "succeeded" in listing
    shown = adrank("runs", "show", "tiny", "--runs-dir", str(runs_dir), cwd=runs_dir).stdout
    assert "cpu-ple" in shown and "report:" in shown
    compared = adrank("runs", "compare", "tiny", "tiny", "--runs-dir", str(runs_dir), cwd=runs_dir).stdout
    assert "+0.00000" in compared and "1.00×" in compared
    assert adrank("report", "tiny", "--runs-dir", str(runs_dir), cwd=runs_dir).stdout.strip().endswith("report.html")


@pytest.mark.long
def test_a_failed_run_names_the_step_and_the_reason(tmp_path):
    overrides = TINY + ["logs.synthetic.malformed_fraction=0.3", "preprocess.max_invalid_fraction=0.01"]
    result = adrank("run", "--runs-dir", str(tmp_path), "--run-id", "broken", *sets(overrides), cwd=tmp_path,
                    check=False)
    assert result.returncode == 2
    assert "failed at step 'preprocess'" in result.stderr
    assert "max_invalid_fraction" in result.stderr
    record = json.loads((tmp_path / "broken" / "run.json").read_text())
    assert record["status"] == "failed" and record["failed_step"] == "preprocess"
