"""`adrank -v` / `--quiet` set the console's level; the console renders records by level and fields, a step's
JSON-line records included (foundation.log_lines → ops.console_log)."""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import subprocess
import sys
import types

import pytest
import yaml

from components.progress import QUIET_ENV, progress
from foundation.log_lines import LEVEL_ENV, JsonLineFormatter, fields
from ops import cli
from ops.console_log import console_level, console_logging
from ops.local_run.console import RunConsole
from ops.spec_executor.task_events import read_task_line
from tests.support.console import NATIVE_LINE

SEEN: dict[str, object] = {}


def _step_line(level: int, message: str, logger: str = "components.preprocess.run", **values) -> str:
    """A line as a step process writes it (configure_step_logging's formatter)."""
    record = logging.LogRecord(logger, level, "", 0, message, None, None)
    record.adrank = values  # type: ignore[attr-defined]
    return JsonLineFormatter().format(record)


def _say(args: argparse.Namespace) -> int:
    """A command that logs one record of each kind and hands three step lines to the engine's reader, rendered by
    `adrank run`'s console as during a run."""
    SEEN.update(level_env=os.environ.get(LEVEL_ENV), quiet=getattr(args, "quiet", None))
    log = logging.getLogger("ops.commands.say")
    log.debug("checked 3 files")
    log.info("resumed from checkpoint step 40")
    log.warning("shuffle buffer holds 3% of the train split")
    logging.getLogger("tensorflow").info("a library's chatter")
    console = RunConsole(sys.stderr, io.StringIO(), quiet=logging.getLogger().getEffectiveLevel() > logging.INFO)
    with console.running():
        for line in (_step_line(logging.INFO, "impressions: read 12,000 records", **progress(records=12_000)),
                     _step_line(logging.INFO, "epoch 1/2  step 40/80", step=40),  # `step` here: a figure
                     _step_line(logging.WARNING, "feature 'ip' is absent from 100.0% of examples"),
                     _step_line(logging.WARNING, "You are passing instance dicts to TFT", logger="absl")):
            read_task_line(console, "root/preprocess", "preprocess", line)
    return 0


def _register(subparsers) -> None:
    parser = subparsers.add_parser("say")
    parser.add_argument("--quiet", action="store_true")
    parser.set_defaults(handler=_say)


@pytest.fixture()
def adrank(monkeypatch, capsys):
    """`adrank(*argv)`: run the command line with the `say` command; (exit status, stdout, stderr lines)."""
    monkeypatch.setattr(cli, "COMMANDS", (types.SimpleNamespace(register=_register),))
    monkeypatch.delenv(LEVEL_ENV, raising=False)
    monkeypatch.delenv(QUIET_ENV, raising=False)
    SEEN.clear()

    def run(*argv: str):
        code = cli.main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err.splitlines()

    return run


def test_the_default_level_shows_info_and_progress_under_the_running_step(adrank):
    code, out, err = adrank("say")
    assert code == 0 and out == ""
    assert err == [
        "adrank: resumed from checkpoint step 40",
        "adrank warning: shuffle buffer holds 3% of the train split",
        "      impressions: read 12,000 records",
        "      epoch 1/2  step 40/80",
        "  ! feature 'ip' is absent from 100.0% of examples",
    ]
    assert SEEN["level_env"] == "INFO"  # the steps this command starts log at the same level


def test_verbose_shows_debug_records_and_other_libraries_info(adrank):
    _, _, err = adrank("-v", "say")
    assert err[:3] == ["adrank debug: ops.commands.say: checked 3 files", "adrank: resumed from checkpoint step 40",
                       "adrank warning: shuffle buffer holds 3% of the train split"]
    assert "adrank: a library's chatter" in err and SEEN["level_env"] == "DEBUG"
    assert err[-1] == "  ! You are passing instance dicts to TFT"  # a library's warning within a step: only with -v


@pytest.mark.parametrize("argv", [("--quiet", "say"), ("say", "--quiet")])
def test_quiet_hides_progress_and_info_but_not_warnings(adrank, argv):
    _, _, err = adrank(*argv)
    assert err == ["adrank warning: shuffle buffer holds 3% of the train split",
                   "  ! feature 'ip' is absent from 100.0% of examples"]
    assert SEEN == {"level_env": "WARNING", "quiet": True}  # `adrank --quiet run` is `adrank run --quiet`


def test_adrank_quiet_in_the_environment_is_the_level_warning(adrank, monkeypatch):
    monkeypatch.setenv(QUIET_ENV, "1")
    _, _, err = adrank("say")
    assert err[0] == "adrank warning: shuffle buffer holds 3% of the train split" and len(err) == 2


def test_verbose_and_quiet_together_are_refused(adrank, capsys):
    with pytest.raises(SystemExit):
        cli.main(["-v", "--quiet", "say"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_console_is_undone_after_the_command(adrank):
    handlers = list(logging.getLogger().handlers)
    adrank("-v", "say")
    assert logging.getLogger().handlers == handlers and LEVEL_ENV not in os.environ


def test_an_error_names_the_command():
    stream = io.StringIO()
    with console_logging(logging.INFO, stream):
        logging.getLogger("ops.cli").error("config.yaml: no such file", extra=fields(command="run"))
    assert stream.getvalue() == "adrank run: error: config.yaml: no such file\n"


def test_console_level_from_flags_and_environment(monkeypatch):
    monkeypatch.delenv(QUIET_ENV, raising=False)
    monkeypatch.setenv(LEVEL_ENV, "ERROR")
    assert [console_level(verbose=True), console_level(quiet=True), console_level()] == \
        [logging.DEBUG, logging.WARNING, logging.ERROR]



@pytest.mark.parametrize("argv", [
    ["run", "--help"],
    # a GPU target on this machine: its presence is probed (nvidia-smi), not by importing TensorFlow here
    ["compile", "--backend", "local", "--set", "targets=[{name: cpu, kind: cpu}, {name: gpu, kind: gpu}]"],
])
def test_a_command_prints_no_native_start_up_lines_and_imports_no_tensorflow(argv, tmp_path):
    """What the command's own process prints; a step's lines stay in its task log (tests/e2e/test_local_dag.py
    checks a whole `adrank run`)."""
    if argv[0] == "compile":
        argv = [*argv, "--output", str(tmp_path / "pipeline.yaml")]
    probe = ("import sys\nfrom ops.cli import main\ntry:\n    code = main(sys.argv[1:])\nexcept SystemExit as end:\n"
             "    code = end.code\nprint('tensorflow imported' if 'tensorflow' in sys.modules else 'no tensorflow')\n"
             "sys.exit(code)")
    result = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"})  # what a user's shell has
    assert result.returncode == 0, result.stderr
    assert not NATIVE_LINE.search(result.stdout + result.stderr), result.stdout + result.stderr
    assert result.stdout.strip().endswith("no tensorflow")
    if argv[0] == "compile":
        spec = (tmp_path / "pipeline.yaml").read_text()
        assert "gpu" not in json.dumps(yaml.safe_load(spec)["root"]["inputDefinitions"]["parameters"]["training_runs"])
