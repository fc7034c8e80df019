"""The same config and seed give the same model: two `adrank run`s of the shipped click-log example (a CSV log, with a
history feature over its ip column) in two processes, two working directories and two runs directories write the
same block files and report the same eval log-loss, to the last digit."""

import json
from pathlib import Path

import pytest
import yaml
from e2e_cli import adrank

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).parents[2]
CLICK_LOG = REPO / "configs" / "examples" / "click_log.yaml"
HISTORY = {"name": "ip_history", "kind": "history", "ids": ["ip"], "windows_hours": [24]}


def click_log_with_history(path: Path) -> Path:
    """configs/examples/click_log.yaml as shipped, with a history feature over the ip column of its CSV log."""
    config = yaml.safe_load(CLICK_LOG.read_text())
    config["logs"]["impressions"] = str(CLICK_LOG.parent / config["logs"]["impressions"])
    config["features"].append(HISTORY)
    path.write_text(yaml.safe_dump(config))
    return path


def run_in(directory: Path, config: Path, run_id: str) -> Path:
    directory.mkdir()
    adrank("run", "--config", str(config), "--runs-dir", "runs", "--run-id", run_id, "--quiet", cwd=directory)
    return directory / "runs" / run_id


def blocks(run_dir: Path) -> dict[str, bytes]:
    (manifest,) = run_dir.glob("artifacts/**/manifest.json")
    return {str(path.relative_to(manifest.parent)): path.read_bytes()
            for path in sorted(manifest.parent.glob("*/blocks-*.blocks"))}


@pytest.mark.long  # two whole-DAG runs
def test_two_runs_of_the_click_log_example_with_a_history_feature_give_the_same_eval_logloss(tmp_path):
    config = click_log_with_history(tmp_path / "click_log_history.yaml")
    first, second = run_in(tmp_path / "a", config, "first"), run_in(tmp_path / "b", config, "second")

    manifest = json.loads(next(first.glob("artifacts/**/manifest.json")).read_text())
    inputs = {feature["name"] for feature in manifest["features"]}
    assert {"ip_history_impressions_24h", "ip_history_clicks_24h", "ip_history_rate_24h",
            "ip_history_seconds_since_previous"} <= inputs  # history features run on a CSV log
    assert blocks(first) and blocks(first) == blocks(second)  # the same examples, files, order and holdout
    runs = [json.loads((run / "summary.json").read_text())["runs"][0] for run in (first, second)]
    assert isinstance(runs[0]["logloss"], float) and runs[0]["logloss"] == runs[1]["logloss"]  # to the last digit
    assert runs[0]["seed"] == runs[1]["seed"]
