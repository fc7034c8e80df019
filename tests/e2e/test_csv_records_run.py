"""CSV records and record sizes through `adrank run` on files: a quoted line break is one record, a row with
too many columns and a 1 MB id are dead letters that say why, and a misspelt column fails at the start."""

import json

import pytest

from tests.support.cli import adrank, sets
from tests.support.tiny_config import IN_MEMORY_BEAM, SHORT_MEASUREMENTS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO_CONFIG = "configs/examples/click_log.yaml"
SAMPLE = "configs/examples/data/click_log_sample.csv"
FAST = [*IN_MEMORY_BEAM, "training.epochs=1", "promotion.enabled=false", "preprocess.output_shards=1",
        *SHORT_MEASUREMENTS]


def dead_letters(run_dir) -> list[dict]:
    return [json.loads(line) for path in sorted(run_dir.glob("artifacts/**/dead_letter/*.jsonl"))
            for line in path.read_text().splitlines()]


@pytest.mark.long
def test_quoted_line_breaks_bad_rows_and_huge_records_through_adrank_run(tmp_path, request):
    root = request.config.rootpath
    header, first, *rows = (root / SAMPLE).read_text().splitlines()
    ip, app, device, os_, channel, *rest = first.split(",")
    quoted = ",".join([ip, app, device, os_, f'"{channel}\n"', *rest])  # a channel value with a line break
    too_many = ",".join([*rows[1].split(","), "extra", "columns"])
    huge = ",".join(["9" * 1_000_000, *rows[2].split(",")[1:]])
    log = tmp_path / "clicks.csv"
    log.write_text("\n".join([header, quoted, too_many, huge, *rows[3:]]) + "\n")

    adrank("run", "--config", str(root / REPO_CONFIG), "--runs-dir", "runs", "--run-id", "records",
           *sets(FAST + [f"logs.impressions={log}"]), cwd=tmp_path)

    letters = dead_letters(tmp_path / "runs" / "records")
    assert sorted(d["reason"] for d in letters) == ["bad_csv_row:expected 8 columns, got 10", "record_too_large"]
    big = next(d for d in letters if d["reason"] == "record_too_large")
    assert big["raw_bytes"] == len(huge) and len(big["raw"]) == 1024
    assert next(d for d in letters if d["reason"].startswith("bad_csv_row"))["raw"] == too_many
    manifest = json.loads(next((tmp_path / "runs" / "records").glob("artifacts/**/manifest.json")).read_text())
    assert manifest["counts"]["impressions_read"] == len(rows)  # the quoted line break did not split a record
    assert manifest["splits"]["train"]["examples"] + manifest["splits"]["eval"]["examples"] == len(rows) - 2


def test_a_misspelt_csv_column_fails_at_the_start_naming_it(tmp_path, request):
    root = request.config.rootpath
    lines = (root / SAMPLE).read_text().splitlines()
    log = tmp_path / "clicks.csv"
    log.write_text("\n".join(["..ip" + lines[0][2:], *lines[1:200]]) + "\n")
    result = adrank("run", "--config", str(root / REPO_CONFIG), "--runs-dir", "runs", "--run-id", "typo",
                    *sets(FAST + [f"logs.impressions={log}"]), cwd=tmp_path, check=False)
    assert result.returncode == 2
    # checked before any step starts (preprocess checks again when it starts, for a spec run elsewhere)
    assert (f"adrank run: error: logs: impressions: {log} has no column 'ip' "
            "(configured by features.0 (ip)); its columns are: '..ip', 'app'") in result.stderr
    assert not (tmp_path / "runs" / "typo").exists()
