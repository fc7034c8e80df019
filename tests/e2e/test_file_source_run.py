"""A file-source config (the shipped CSV click-log example) through `adrank run`, started outside the repo."""

import json

import pytest
from e2e_cli import adrank, sets

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO_CONFIG = "configs/examples/click_log.yaml"
FAST = ["preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1", "training.epochs=1",
        "promotion.enabled=false"]


@pytest.fixture
def click_log_config(request):
    return str(request.config.rootpath / REPO_CONFIG)


def test_the_click_log_example_runs_from_any_directory_and_quietly(tmp_path, click_log_config):
    result = adrank("run", "--config", click_log_config, "--runs-dir", "runs", "--run-id", "clicks", *sets(FAST),
                    "--quiet", cwd=tmp_path)
    assert "failed" not in result.stdout
    # --quiet: no step or progress lines, only the run's first line and its summary
    assert not any(line.startswith(("  ▶", "  ✓", "  …", "      ")) for line in result.stdout.splitlines())
    assert "adrank progress" not in result.stdout and result.stdout.strip().splitlines()[-1].startswith("report: ")
    summary = json.loads((tmp_path / "runs" / "clicks" / "summary.json").read_text())
    assert summary["runs"][0]["target"] == "cpu" and summary["runs"][0]["steps"] > 0
    assert "download" in summary["tasks"]
    record = json.loads((tmp_path / "runs" / "clicks" / "run.json").read_text())
    assert record["status"] == "succeeded" and record["pid"] and record["host"]


def test_a_failed_step_is_named_with_its_exception(tmp_path, click_log_config):
    result = adrank("run", "--config", click_log_config, "--runs-dir", str(tmp_path), "--run-id", "missing",
                    *sets(FAST + ["logs.impressions=missing/*.csv"]), cwd=tmp_path, check=False)
    assert result.returncode == 2
    assert "failed at step 'preprocess': FileNotFoundError: no log files match" in result.stderr
    assert "Traceback" not in result.stderr
    record = json.loads((tmp_path / "missing" / "run.json").read_text())
    assert record["status"] == "failed" and record["failed_step"] == "preprocess"
