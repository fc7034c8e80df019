"""Bad input on the command line: exit status 2 and one line on stderr, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ops.cli import main


def _one_line_error(capsys, argv: list[str]) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1, captured.err
    return captured.err


@pytest.mark.parametrize("override, field", [
    ("model.deep_layers=[0,-3]", "model.deep_layers.0"),
    ("training.learning_rate=.inf", "training.learning_rate"),
    ("model.embedding_dim=100000000", "model.embedding_dim"),
    ("model.embedding_dim=1e8", "model.embedding_dim"),  # YAML 1.1 reads 1e8 as a string: not an integer
    ("features.0.hash_buckets=1e9", "features.0.categorical.hash_buckets"),
    ("features.0.hash_buckets=1000000000", "features.0.hash_buckets"),
    ("tasks.0.event_type=click", "tasks.0.event_type"),
    ("name=" + "x" * 64, "name"),
])
def test_invalid_values_are_one_line_errors_naming_the_field(capsys, tmp_path, override, field):
    err = _one_line_error(capsys, ["logs", "generate", "--output", str(tmp_path / "logs"), "--set", override])
    assert err.startswith("adrank logs: error: ") and field in err
    assert not (tmp_path / "logs").exists()


def test_unreadable_config_files_are_one_line_errors(capsys, tmp_path):
    assert "is a directory" in _one_line_error(capsys, ["logs", "generate", "--config", str(tmp_path), "--output", "x"])
    binary = tmp_path / "config.yaml"
    binary.write_bytes(b"\xff\xfe name: x\n")
    assert "not UTF-8 text" in _one_line_error(capsys, ["logs", "generate", "--config", str(binary), "--output", "x"])


@pytest.mark.parametrize("run", ["/etc", "../x", "..", "a/../../b", "run*"])
@pytest.mark.parametrize("verb", [["runs", "show"], ["report"]])
def test_run_ids_cannot_leave_the_runs_directory(capsys, tmp_path, run, verb):
    runs = tmp_path / "runs"
    runs.mkdir()
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "run.json").write_text("{}")  # a run-looking directory outside runs/
    err = _one_line_error(capsys, [*verb, run, "--runs-dir", str(runs)])
    assert "a run id is a directory name under the runs directory" in err


def test_run_ids_in_compare_are_checked(capsys, tmp_path):
    assert "run id '/etc'" in _one_line_error(capsys, ["runs", "compare", "/etc", "x", "--runs-dir", str(tmp_path)])


def test_a_directory_as_config_prints_no_traceback_from_the_console_script(tmp_path):
    adrank = Path(sys.executable).with_name("adrank")
    completed = subprocess.run([str(adrank), "logs", "generate", "--config", str(tmp_path), "--output", "x"],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr
    assert completed.stderr.strip() == f"adrank logs: error: {tmp_path}: is a directory, not a YAML config file"


def test_an_unwritable_output_path_is_a_one_line_error(capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    err = _one_line_error(capsys, ["logs", "generate", "--output", str(blocker / "logs")])
    assert err.startswith("adrank logs: error: ") and str(blocker) in err


def test_listing_a_missing_runs_directory_is_an_error(capsys, tmp_path):
    err = _one_line_error(capsys, ["runs", "list", "--runs-dir", str(tmp_path / "typo")])
    assert f"runs directory {tmp_path / 'typo'} does not exist" in err
    (tmp_path / "file").write_text("")
    assert "is not a directory" in _one_line_error(capsys, ["runs", "list", "--runs-dir", str(tmp_path / "file")])
    assert main(["runs", "list", "--runs-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == f"no runs under {tmp_path}"


def test_resume_errors_are_one_line(capsys, tmp_path):
    assert "no run 'nope' with a config.yaml" in _one_line_error(
        capsys, ["run", "--resume", "nope", "--runs-dir", str(tmp_path)])
    assert "drop --config, --set and --run-id" in _one_line_error(
        capsys, ["run", "--resume", "x", "--set", "training.epochs=1", "--runs-dir", str(tmp_path)])


def test_a_finished_or_running_run_is_not_resumed(tmp_path):
    import datetime as dt
    import os

    import yaml

    from configs import config_hash, load_config
    from ops.local_run.directories import RunIdError
    from ops.local_run.record import RunRecord
    from ops.local_run.resume import resumable_run

    config = load_config()
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json")))
    record = RunRecord(id="r1", config_name=config.name, config_source="x", config_hash=config_hash(config),
                       started=dt.datetime.now(dt.timezone.utc), status="succeeded")
    record.write(run_dir)
    with pytest.raises(RunIdError, match="already succeeded"):
        resumable_run(tmp_path, "r1", config)
    record.status = "running"
    record.claim_process()  # this test's own process: alive
    record.write(run_dir)
    with pytest.raises(RunIdError, match=f"still running \\(pid {os.getpid()}"):
        resumable_run(tmp_path, "r1", config)
    record.status = "failed"
    record.write(run_dir)
    assert resumable_run(tmp_path, "r1", config) == run_dir
    with pytest.raises(RunIdError, match="a resumed run keeps its config"):
        resumable_run(tmp_path, "r1", load_config(overrides=["training.epochs=1"]))


def test_adrank_run_on_a_csv_whose_header_is_short_fails_before_any_step_naming_the_fix(capsys, tmp_path):
    """The first hour with one's own log: the header lacks a column the rows hold; `adrank run` says so, with the
    file, the counts and the setting, before the run directory or any step exists."""
    example = Path(__file__).parents[2] / "configs" / "examples" / "click_log.yaml"
    sample = (example.parent / "data" / "click_log_sample.csv").read_text().splitlines()
    header, *rows = sample
    short = tmp_path / "clicks.csv"
    short.write_text("\n".join([header.split(",", 1)[1], *rows[:100]]) + "\n")
    runs = tmp_path / "runs"
    err = _one_line_error(capsys, ["run", "--config", str(example), "--runs-dir", str(runs),
                                   "--set", f"logs.impressions={short}"])
    cells = len(header.split(","))
    assert err.startswith(f"adrank run: error: logs: impressions: {short}: the header has {cells - 1} cells")
    assert f"50 of the first 50 rows have {cells} (line 2 the first)" in err
    assert f"set logs.csv_header: none and list all {cells} column names in file order in logs.csv_columns" in err
    assert not runs.exists()
