"""The TalkingData-shaped click-log generator: its shape, rare positives, heavy tails, determinism, and that
configs/examples/click_log.yaml preprocesses it without a dead letter."""

import csv
from collections import Counter
from pathlib import Path

import pytest

from components.logs.click_log import COLUMNS, ClickLogSpec, main, write_click_log
from components.preprocess.run import preprocess
from configs import load_config
from configs.slices import PreprocessStepConfig

REPO = Path(__file__).resolve().parents[3]


def rows(path: Path) -> list[dict]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_click_log_has_talkingdata_columns_rare_positives_and_heavy_tails(tmp_path):
    log = write_click_log(tmp_path / "clicks.csv", ClickLogSpec(seed=3, days=3, clicks_per_day=20_000))
    table = rows(log.path)
    assert tuple(table[0]) == COLUMNS and len(table) == log.clicks == 60_000
    assert 0.0013 < log.positive_rate < 0.0027  # ~0.2%, as in TalkingData
    assert all((r["attributed_time"] != "") == (r["is_attributed"] == "1") for r in table)
    assert all(r["attributed_time"] >= r["click_time"] for r in table if r["attributed_time"])
    assert [r["click_time"] for r in table] == sorted(r["click_time"] for r in table)
    assert len({r["click_time"][:10] for r in table}) == 3
    for column, top_share in (("app", 0.15), ("ip", 0.05), ("channel", 0.05)):
        counts = Counter(r[column] for r in table).most_common()
        assert counts[0][1] / len(table) > top_share  # a few ids take much of the traffic …
        assert len(counts) > 100 and counts[len(counts) // 2][1] < counts[0][1] / 50  # … the median id little
    constant = -(log.positive_rate * __import__("math").log(log.positive_rate)
                 + (1 - log.positive_rate) * __import__("math").log(1 - log.positive_rate))
    assert log.bayes_logloss < 0.9 * constant  # the hidden signal is learnable


def test_same_spec_same_bytes_and_bad_specs_fail_clearly(tmp_path, capsys):
    spec = ClickLogSpec(seed=5, days=2, clicks_per_day=500)
    first = write_click_log(tmp_path / "a.csv", spec).path.read_bytes()
    assert write_click_log(tmp_path / "b.csv", spec).path.read_bytes() == first
    assert write_click_log(tmp_path / "c.csv", ClickLogSpec(seed=6, days=2, clicks_per_day=500)).path.read_bytes() != first
    with pytest.raises(SystemExit) as exit_info:
        main(["--output", str(tmp_path / "d.csv"), "--positive-rate", "1.5"])
    assert exit_info.value.code == 2 and "positive_rate must be in (0, 1)" in capsys.readouterr().err


def test_click_log_preprocesses_with_the_example_config(tmp_path):
    log = write_click_log(tmp_path / "clicks.csv", ClickLogSpec(days=2, clicks_per_day=1500, positive_rate=0.02))
    config = load_config(REPO / "configs/examples/click_log.yaml", overrides=[
        f"logs.impressions={log.path}", "preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1",
    ])
    manifest = preprocess(PreprocessStepConfig.of(config), None, str(tmp_path / "examples"))
    assert manifest.dead_letter == {}
    assert manifest.splits["train"].examples + manifest.splits["eval"].examples == log.clicks
    positives = manifest.splits["train"].positives["download"] + manifest.splits["eval"].positives["download"]
    assert positives == log.positives
