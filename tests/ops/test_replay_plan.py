"""`adrank retrain`'s plan: each day's window end, the synthetic days it needs, and its config errors."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import pytest

from configs import load_config
from ops.cli import main
from ops.commands.options import config_for_local_run
from ops.local_run.replay import ReplayError, plan_replay

REPO = Path(__file__).parents[2]


def test_window_ends_step_one_day_after_the_lookback(tmp_path):
    plan = plan_replay(load_config(None, ["logs.lookback_days=3"]), 4, None, tmp_path / "registry")
    assert [f"{end:%Y-%m-%dT%H:%M:%S%z}" for end in plan.window_ends] == [
        "2026-01-04T00:00:00+0000", "2026-01-05T00:00:00+0000", "2026-01-06T00:00:00+0000", "2026-01-07T00:00:00+0000"]
    assert plan.config.logs.synthetic.days == 6  # 3 lookback days + 4 days - 1
    assert "logs.synthetic.days 4 → 6" in plan.note
    assert plan.config.promotion.local_registry == str((tmp_path / "registry").resolve())


def test_a_config_with_its_own_registry_keeps_it(tmp_path):
    config = load_config(None, ["logs.lookback_days=2", "promotion.local_registry=/srv/models"])
    plan = plan_replay(config, 2, dt.date(2026, 1, 3), tmp_path / "registry")
    assert plan.config.promotion.local_registry == "/srv/models" and plan.note is None


@pytest.mark.parametrize(("overrides", "days", "first", "message"), [
    ([], 2, None, "logs.lookback_days: must be set"),
    (["logs.lookback_days=1"], 2, None, "logs.lookback_days: 1 leaves no training day"),
    (["logs.lookback_days=3"], 0, None, "--days 0"),
])
def test_config_errors_name_the_field(tmp_path, overrides, days, first, message):
    with pytest.raises(ReplayError, match=message):
        plan_replay(load_config(None, overrides), days, first, tmp_path / "registry")


def test_own_logs_need_the_first_day(tmp_path, capsys):
    config = REPO / "configs" / "examples" / "click_log.yaml"
    with pytest.raises(ReplayError, match="--first-day: required"):
        plan_replay(load_config(config, ["logs.lookback_days=2"]), 2, None, tmp_path / "registry")
    assert main(["retrain", "--config", str(config), "--set", "logs.lookback_days=2", "--days", "2",
                 "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "--first-day: required" in capsys.readouterr().err
    assert list((tmp_path / "runs").iterdir()) == []  # a refused replay leaves no directory


def test_adrank_run_moves_a_default_registry_beside_a_runs_dir_other_than_the_default(tmp_path):
    """The same rule as the replay's (`PromotionConfig.registry_overrides`), for `adrank run --runs-dir`."""
    def args(runs_dir, *overrides):
        return argparse.Namespace(config=None, overrides=list(overrides), runs_dir=str(runs_dir))

    moved = config_for_local_run(args(tmp_path / "elsewhere"))
    assert moved.promotion.local_registry == str((tmp_path / "elsewhere" / "registry").resolve())
    assert config_for_local_run(args("runs")).promotion.local_registry == "runs/registry"
    own = config_for_local_run(args(tmp_path / "elsewhere", "promotion.local_registry=/srv/models"))
    assert own.promotion.local_registry == "/srv/models"
