"""The `record run` step's plain function: the run's summary checked against the run the DAG collected it as,
written as the record the report reads, its headline figures as metadata."""

import json

import pytest

from components.contracts.run_summary import RunSummary
from components.report.collected_run import RunMismatch, record_training_run
from tests.components.report.test_report import run


def test_the_record_is_the_runs_summary_with_its_figures(tmp_path):
    summary = run("cpu-ps", 1, 0.331, 2500.0).write(tmp_path / "summary")
    metadata = record_training_run(summary.parent, "cpu-ps", 1, tmp_path / "record")
    assert RunSummary.read(tmp_path / "record") == RunSummary.read(summary)
    assert metadata["target"] == "cpu-ps" and metadata["run_index"] == 1
    assert metadata["engagement_logloss"] == pytest.approx(0.331)
    assert metadata["examples_per_second"] == pytest.approx(2500.0) and metadata["device_kind"] == "CPU"
    json.dumps(metadata)  # artifact metadata is JSON


def test_a_summary_of_another_run_stops_the_pipeline_naming_both(tmp_path):
    summary = run("cpu", 0, 0.33, 1000.0).write(tmp_path / "summary")
    with pytest.raises(RunMismatch, match="is of cpu run 1, but the DAG recorded it as cpu-ps run 1"):
        record_training_run(summary, "cpu-ps", 0, tmp_path / "record")
    with pytest.raises(RunMismatch, match="is of cpu run 1, but the DAG recorded it as cpu run 2"):
        record_training_run(summary, "cpu", 1, tmp_path / "record")
    assert not (tmp_path / "record").exists()


def test_a_summary_of_another_shape_fails_naming_the_field(tmp_path):
    broken = tmp_path / "summary.json"
    broken.write_text(json.dumps({**json.loads(run("cpu", 0, 0.33, 1000.0).model_dump_json()), "steps": "many"}))
    with pytest.raises(ValueError, match="steps"):
        record_training_run(broken, "cpu", 0, tmp_path / "record")
