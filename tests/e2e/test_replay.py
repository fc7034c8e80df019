"""`adrank retrain --days 3` as a user runs it: three tiny days, each reading its own lookback window, warm-started
from the champion, promoted into the replay's registry, and a day-series report; trained on the JAX lane."""

import datetime as dt
import json

import pytest

from tests.support.cli import adrank, sets
from tests.support.tiny_config import IN_MEMORY_BEAM, ONE_CPU_RUN, tiny_logs

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.long]  # benchmarks/daily_replay.py runs it too

# a 2-day lookback, each day warm-started from the champion and promoted; on the JAX lane: its export step writes the
# champion's serving model and warm-start state, which promotion serves and the next day's JAX run starts from
TINY_DAYS = [*tiny_logs(users=300, ads=60, advertisers=10), "logs.lookback_days=2", *IN_MEMORY_BEAM,
             "preprocess.output_shards=1", "training.epochs=1", "training.global_batch_size=256", *ONE_CPU_RUN,
             "training.warm_start=champion", "targets.0.name=cpu-jax", "targets.0.backend=jax",
             "retraining.target=cpu-jax"]


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    runs_dir = tmp_path_factory.mktemp("runs")
    result = adrank("retrain", "--days", "3", "--runs-dir", str(runs_dir), "--replay-id", "rp", *sets(TINY_DAYS),
                    cwd=runs_dir, timeout=1500)
    return runs_dir, result


def test_each_day_reads_its_own_window(replay):
    runs_dir, result = replay
    series = json.loads((runs_dir / "rp" / "replay.json").read_text())
    assert [d["day"] for d in series["days"]] == [1, 2, 3]
    start = dt.date(2026, 1, 1)  # logs.synthetic.start_date of the embedded default
    for day in series["days"]:
        end = start + dt.timedelta(days=2 + day["day"] - 1)
        assert day["window_end"] == f"{end}T00:00:00Z"
        assert day["window_start"].startswith(str(end - dt.timedelta(days=2)))
        manifest = json.loads(next((runs_dir / day["run_id"] / "artifacts").glob("*/*/preprocess-step_*/examples/manifest.json")).read_text())
        assert manifest["window"]["end"].startswith(str(end))
    assert "logs.synthetic.days 3 → 4" in result.stdout  # 2-day lookback + 3 days replayed


def test_every_decision_agrees_with_its_own_figures(replay):
    runs_dir, _ = replay
    series = json.loads((runs_dir / "rp" / "replay.json").read_text())
    first, *later = series["days"]
    assert first["decision"]["champion_status"] == "none" and first["decision"]["promoted"]
    assert not first["warm_start"]
    for day in later:
        decision = day["decision"]
        assert day["warm_start"] and day["rows_copied"] > 0
        assert decision["champion_status"] == "scored"
        low, high = decision["difference_ci95"]
        assert low <= decision["difference"] <= high
        assert decision["difference"] == pytest.approx(decision["challenger_logloss"] - decision["champion_logloss"],
                                                       abs=1e-9)
        enough = decision["eval_positives"] >= decision["min_eval_positives"]  # else the champion stays
        assert decision["promoted"] is (high <= decision["tolerance"] and enough)
        assert decision["eval_examples"] == day["eval_examples"]


def test_the_registry_history_is_the_series(replay):
    from components.registry.local import LocalModelRegistry

    runs_dir, _ = replay
    series = json.loads((runs_dir / "rp" / "replay.json").read_text())
    registry = LocalModelRegistry(runs_dir / "rp" / "registry")
    history = registry.history("adrank-local")
    assert [h["version"] for h in history] == ["1", "2", "3"]
    assert [h["promoted"] for h in history] == [d["decision"]["promoted"] for d in series["days"]]
    default = None
    for record in history:  # each day was judged against the default the days before it left
        assert record["champion_version"] == default
        default = record["version"] if record["promoted"] else default
    assert registry.default("adrank-local")["version"] == default
    assert not (runs_dir / "registry").exists()  # a replay never touches the runs' own registry


def test_the_day_series_report(replay):
    runs_dir, result = replay
    directory = runs_dir / "rp"
    assert result.stdout.strip().splitlines()[-1] == f"report: {(directory / 'replay.html').resolve()}"
    assert (directory / "replay.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (directory / "replay.md").read_text()
    assert "| day | window end |" in markdown and markdown.count("\n| ") >= 4
    html = (directory / "replay.html").read_text()
    assert "data:image/png;base64," in html and "Daily retraining replay" in html
    shown = adrank("runs", "show", "rp-day2", "--runs-dir", str(runs_dir), cwd=runs_dir).stdout
    decision = json.loads((runs_dir / "rp-day2" / "promotion.json").read_text())
    assert f"log-loss {decision['champion_logloss']:.6f}" in shown and "95% CI" in shown
    assert "Promotion" in (runs_dir / "rp-day2" / "report.md").read_text()


def test_a_replay_killed_in_a_days_preprocess_resumes_with_that_days_window(tmp_path):
    """`adrank retrain --resume` after a kill -9 in day 2's preprocess: day 1 is kept, day 2 resumes reading its own
    window (not every log), and the series ends with both days."""
    import signal
    import subprocess
    import sys
    import time

    from tests.support.step_processes import step_processes_of, wait_for_step

    runs_dir = tmp_path / "runs"
    first = subprocess.Popen([sys.executable, "-m", "ops.cli", "retrain", "--days", "2", "--runs-dir", "runs",
                              "--replay-id", "cut", *sets(TINY_DAYS)], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_step(first, runs_dir / "cut-day2", "preprocess", timeout=1200)
    first.send_signal(signal.SIGKILL)
    first.wait()
    while step_processes_of(runs_dir / "cut-day2"):
        time.sleep(0.5)
    result = adrank("retrain", "--resume", "cut", "--runs-dir", "runs", cwd=tmp_path, timeout=1500)
    assert "day 1/2: finished in an earlier attempt (run cut-day1)" in result.stdout
    series = json.loads((runs_dir / "cut" / "replay.json").read_text())
    assert [d["day"] for d in series["days"]] == [1, 2]
    day2 = json.loads((runs_dir / "cut-day2" / "run.json").read_text())
    assert day2["window_end"] == "2026-01-04T00:00:00Z" and day2["attempts"] == 2
    manifests = sorted((runs_dir / "cut-day2" / "artifacts").glob("*/*/preprocess-step_*/examples/manifest.json"))
    assert json.loads(manifests[-1].read_text())["window"]["end"].startswith("2026-01-04")
    assert series["days"][1]["window_end"] == "2026-01-04T00:00:00Z"
