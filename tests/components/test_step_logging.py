"""A record written by a step comes back whole in the process that renders it (foundation.log_lines, components.step_logging)."""

import io
import logging

from components.step_logging import configure_step_logging
from foundation.log_lines import FIELDS_KEY, fields, level_from_environment, record_fields, record_from_line


def test_a_step_record_round_trips_with_its_level_logger_and_fields(monkeypatch):
    monkeypatch.setenv("ADRANK_LOG_LEVEL", "INFO")
    stream = io.StringIO()
    configure_step_logging(stream)
    configure_step_logging(stream)  # idempotent: still one line per record
    try:
        logging.getLogger("components.train.loop").warning("epoch %d done", 3, extra=fields(progress=True, rows=7))
        logging.getLogger("components.train.loop").debug("below the level")
    finally:
        root = logging.getLogger()
        for handler in list(root.handlers):
            if getattr(handler, "_adrank_step", False):
                root.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    record = record_from_line(lines[0])
    assert record is not None
    assert (record.levelno, record.name, record.getMessage()) == (logging.WARNING, "components.train.loop", "epoch 3 done")
    assert record_fields(record) == {"progress": True, "rows": 7}
    assert getattr(record, FIELDS_KEY) == {"progress": True, "rows": 7}


def test_other_lines_are_not_records():
    for line in ("I1125 01:02:03 some TF line", "{not json}", '{"message": "no severity"}', "", "[1, 2]"):
        assert record_from_line(line) is None


def test_level_from_environment(monkeypatch):
    monkeypatch.setenv("ADRANK_LOG_LEVEL", "warning")
    assert level_from_environment() == logging.WARNING
    monkeypatch.setenv("ADRANK_LOG_LEVEL", "10")
    assert level_from_environment() == logging.DEBUG
    monkeypatch.setenv("ADRANK_LOG_LEVEL", "LOUD")
    assert level_from_environment(logging.ERROR) == logging.ERROR


def test_a_basicconfig_console_handler_is_replaced_so_each_record_is_written_once(monkeypatch, capsys):
    """kfp's executor calls `logging.basicConfig(stream=sys.stdout)` before the step function runs."""
    import sys

    monkeypatch.setenv("ADRANK_LOG_LEVEL", "INFO")
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    kfp_handler = logging.StreamHandler(sys.stdout)
    root.addHandler(kfp_handler)
    try:
        configure_step_logging()
        logging.getLogger("components.preprocess.run").info("running the Beam job")
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    captured = capsys.readouterr()
    assert captured.out == "" and kfp_handler not in root.handlers
    (record,) = [record_from_line(line) for line in captured.err.splitlines()]
    assert record is not None and record.getMessage() == "running the Beam job"


def test_a_worker_logger_writes_json_lines_to_standard_error_at_the_level(monkeypatch, capsys, caplog):
    from components.step_logging import worker_logger

    log = worker_logger("components.preprocess.step_messages.test")
    assert worker_logger("components.preprocess.step_messages.test").handlers == log.handlers  # one handler
    monkeypatch.setenv("ADRANK_LOG_LEVEL", "INFO")
    log.info("train split: 3 examples", extra=fields(progress=True, count=3))
    log.debug("below the level")
    monkeypatch.setenv("ADRANK_LOG_LEVEL", "WARNING")
    log.info("quiet: not written")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and caplog.records == []  # not through the root logger (Beam's log service in a worker)
    record = record_from_line(lines[0])
    assert record is not None and record_fields(record) == {"progress": True, "count": 3}
