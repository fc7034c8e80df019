"""Vertex's execution cache in `run-spec`: a succeeded execution with the same component and inputs is reused
by later runs under the same root (different job ids, same scheduled time), a changed input runs again, a
failed execution is never reused, `--cache off` runs everything, and a change to the code the tasks run (the
checkout's packages, the installed distributions) runs them again."""

import json
import re
from pathlib import Path

from ops.cli import main
from ops.spec_executor.execution_cache import CACHE_DIR
from ops.spec_executor.runner import run_spec
from ops.spec_executor.task_code import package_files, task_code_digest

PIPELINE_ROOT = "gs://engine-tests/root"


def _quiet(line: str) -> None:
    pass


def test_a_second_run_reuses_the_first_runs_step_and_says_which_job_it_reused(compiled, options, tmp_path, capsys):
    spec = compiled("cached-window")
    first = run_spec(spec, options(tmp_path, hour=4), report=_quiet)
    assert [t.state for t in first.tasks] == ["succeeded", "succeeded"]

    args = ["run-spec", str(spec), "--root", str(tmp_path), "--project", "engine-tests", "--pipeline-root",
            PIPELINE_ROOT, "--create-time", "2026-03-04T05:00:00Z", "--schedule-time", "2026-03-04T03:00:00Z"]
    assert main(args) == 0
    out = capsys.readouterr().out
    # (the lookup's own seconds show when it took 0.1 s or more: a loaded machine)
    assert re.search(rf"cached    make-rows \(make-rows\)( \d+\.\d s)?: reused make-rows of {first.job_name}", out)
    second = json.loads((tmp_path / "spec-runs" / "cached-window-20260304050000" / "spec_run.json").read_text())
    assert second["job_name"] != first.job_name and second["status"] == "succeeded"
    made, counted = second["tasks"]
    assert made["state"] == "cached" and made["cached_from"] == {"job": first.job_name, "task": "make-rows"}
    assert made["attempts"] == 0  # nothing was started
    first_outputs = first.task("make-rows").outputs
    assert made["outputs"] == first_outputs  # the first run's artifact URI, metadata and output parameter
    assert made["outputs"]["parameters"]["Output"] == "2026-03-04T03:00:00Z"  # the scheduled time, not create
    # the consumer ran (its caching is off) and read the first run's rows
    assert counted["state"] == "succeeded" and counted["outputs"]["parameters"]["Output"] == 3

    # --cache off: the same run again starts every task
    assert main([*args[:-4], "--create-time", "2026-03-04T06:00:00Z", "--schedule-time", "2026-03-04T03:00:00Z",
                 "--cache", "off"]) == 0
    assert "succeeded make-rows (make-rows)" in capsys.readouterr().out


def test_a_changed_input_or_window_runs_the_step_again(compiled, options, tmp_path):
    spec = compiled("cached-window")
    first = run_spec(spec, options(tmp_path, hour=4), report=_quiet)
    more_rows = run_spec(spec, options(tmp_path, hour=5, parameters={"rows": 5}), report=_quiet)
    assert more_rows.task("make-rows").state == "succeeded"
    assert more_rows.task("count-rows").outputs["parameters"]["Output"] == 5
    next_day = run_spec(spec, options(tmp_path, hour=6, schedule_time=options(tmp_path).schedule_time.replace(day=5)),
                        report=_quiet)
    assert next_day.task("make-rows").state == "succeeded"
    assert next_day.task("make-rows").outputs["rows_out"][0]["uri"] != first.task("make-rows").outputs["rows_out"][0]["uri"]
    # and the original inputs still hit the first run's execution
    again = run_spec(spec, options(tmp_path, hour=7), report=_quiet)
    assert again.task("make-rows").cached_from["job"] == first.job_name


def test_a_failed_execution_is_never_reused(compiled, options, tmp_path):
    spec = compiled("cached-window")
    marker = tmp_path / "fail-now"
    marker.touch()
    failed = run_spec(spec, options(tmp_path / "root", hour=4, parameters={"fail_marker": str(marker)}),
                      report=_quiet)
    assert failed.task("make-rows").state == "failed" and failed.status == "failed"
    assert not list((tmp_path / "root" / CACHE_DIR).rglob("*.json"))
    marker.unlink()
    rerun = run_spec(spec, options(tmp_path / "root", hour=5, parameters={"fail_marker": str(marker)}),
                     report=_quiet)
    assert rerun.task("make-rows").state == "succeeded" and rerun.task("make-rows").attempts == 1
    assert len(list((tmp_path / "root" / CACHE_DIR / "cached-window").glob("*.json"))) == 1


def test_check_mode_neither_reads_nor_writes_the_cache(compiled, options, tmp_path):
    spec = compiled("cached-window")
    run_spec(spec, options(tmp_path, hour=4), report=_quiet)
    checked = run_spec(spec, options(tmp_path, hour=5, check_only=True), report=_quiet)
    assert {t.state for t in checked.tasks} == {"checked"}
    assert len(list(Path(tmp_path, CACHE_DIR).rglob("*.json"))) == 1


def test_the_task_code_digest_follows_every_file_of_the_packages_and_nothing_else(tmp_path):
    """Source and package data of each top-level package count, by path and content; byte-code, dot-files and
    directories that are not packages do not; a moved checkout keeps its digest."""
    checkout = tmp_path / "a"
    for path, text in {"pkg/__init__.py": "", "pkg/sub/module.py": "x = 1\n", "pkg/data.yaml": "a: 1\n",
                       "notes/readme.py": "", "pkg2/__init__.py": ""}.items():
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_text(text)
    first = task_code_digest(checkout)
    assert [path for path, _ in package_files(checkout)] == [
        "pkg/__init__.py", "pkg/data.yaml", "pkg/sub/module.py", "pkg2/__init__.py"]

    (checkout / "pkg/__pycache__").mkdir()
    (checkout / "pkg/__pycache__/module.cpython-311.pyc").write_bytes(b"\0")
    (checkout / "pkg/sub/.module.py.swp").write_bytes(b"\0")
    (checkout / "notes/readme.py").write_text("changed = True\n")
    assert task_code_digest(checkout) == first
    checkout.rename(tmp_path / "moved")
    assert task_code_digest(tmp_path / "moved") == first

    for path, text in {"pkg/sub/module.py": "x = 2\n", "pkg/data.yaml": "a: 2\n", "pkg2/new.py": ""}.items():
        original = (tmp_path / "moved" / path).read_text() if (tmp_path / "moved" / path).exists() else None
        (tmp_path / "moved" / path).write_text(text)
        assert task_code_digest(tmp_path / "moved") != first, path
        if original is None:
            (tmp_path / "moved" / path).unlink()
        else:
            (tmp_path / "moved" / path).write_text(original)
        assert task_code_digest(tmp_path / "moved") == first


def test_a_code_change_runs_a_cached_step_again(compiled, options, tmp_path, monkeypatch):
    """The engine's tasks run the checkout's code (it is on their PYTHONPATH): with the checkout being a copy, a
    second run reuses the first's step while the code is unchanged and runs it again once a module of the copy was
    edited (a comment is enough); restored, the first execution matches again."""
    from ops.spec_executor import runner
    from tests.support.checkout import copy_checkout

    checkout = copy_checkout(tmp_path / "checkout")
    monkeypatch.setattr(runner, "REPO_ROOT", checkout)
    spec, root = compiled("cached-window"), tmp_path / "root"
    first = run_spec(spec, options(root, hour=4), report=_quiet)
    assert run_spec(spec, options(root, hour=5), report=_quiet).task("make-rows").state == "cached"

    edited = checkout / "components" / "preprocess" / "blocks.py"
    original = edited.read_text()
    edited.write_text(original + "# an edit\n")
    rerun = run_spec(spec, options(root, hour=6), report=_quiet)
    assert rerun.task("make-rows").state == "succeeded" and rerun.task("make-rows").attempts == 1

    edited.write_text(original)
    again = run_spec(spec, options(root, hour=7), report=_quiet)
    assert again.task("make-rows").state == "cached"
    assert again.task("make-rows").cached_from["job"] in (first.job_name, rerun.job_name)
