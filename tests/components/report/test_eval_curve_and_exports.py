"""The report shows the eval curve per epoch, the effective learning rate and dropped steps; promotion only
ever picks a run that exported a model."""

import json

import pytest

from components.contracts.run_summary import CurvePoint
from components.registry.promotion_rule import NoExportedModel, read_candidate
from components.report.aggregation import summarize
from components.report.html import render_html
from components.report.summary_markdown import render_markdown
from tests.components.report.test_report import config, manifest, run


def with_curve(summary, eval_by_epoch: list[float], steps_per_epoch: int = 10):
    summary.curve = [
        CurvePoint(step=(e + 1) * steps_per_epoch, loss=0.4, epoch=e + 1, eval_logloss=value)
        for e, value in enumerate(eval_by_epoch)
    ]
    return summary


def test_report_shows_the_eval_curve_per_epoch_and_the_effective_learning_rate():
    runs = [with_curve(run("cpu", 0, 0.34, 1000.0), [0.33, 0.32, 0.34]),
            with_curve(run("cpu", 1, 0.36, 1000.0), [0.35, 0.34, 0.361])]
    for r in runs:
        r.learning_rate, r.configured_learning_rate, r.learning_rate_scaling = 0.002, 0.001, "sqrt"
    runs += [run("cpu-big", 0, 0.35, 4000.0)]
    runs[-1].dropped_steps = 7
    summary = summarize(config(), manifest(), runs)

    cpu = summary.targets["cpu"]
    assert cpu.eval_curve == [(1, pytest.approx(0.34)), (2, pytest.approx(0.33)), (3, pytest.approx(0.3505))]
    assert cpu.learning_rate == 0.002 and cpu.learning_rate_note == "0.001 × 2 (sqrt batch scaling)"
    assert summary.targets["cpu-big"].eval_curve == [] and summary.targets["cpu-big"].dropped_steps == 7
    assert summary.runs[0].eval_curve == [(1, 0.33), (2, 0.32), (3, 0.34)]

    markdown = render_markdown(summary)
    assert "## Eval log-loss per epoch" in markdown
    assert "| cpu | 0.34000 | 0.33000 | 0.35050 | 2 |" in markdown
    assert "0.002 = 0.001 × 2 (sqrt batch scaling)" in markdown
    # both runs rose after epoch 2, by 0.020 and 0.021: significant over the 2 runs (paired, p ≈ 0.016)
    assert "cpu: eval log-loss was lowest after epoch 2 (0.33000)" in markdown
    assert "set training.epochs: 2" in markdown
    assert "cpu-big: 7 full batches per run were not trained" in markdown
    html = render_html(summary, {})
    assert "Eval log-loss per epoch" in html and "0.33000" in html


def test_promotion_picks_the_best_run_that_exported_a_model(tmp_path):
    tpu = run("tpu", 0, 0.30, 9000.0)
    tpu.model_uri = None  # a run that exported nothing
    runs = [tpu, run("cpu", 0, 0.33, 1000.0), run("cpu", 1, 0.32, 1000.0)]
    summary = summarize(config(), manifest(), runs)
    assert summary.best_run.target == "tpu" and summary.best_run.model_uri is None
    assert (summary.best_exported_run.target, summary.best_exported_run.run_index) == ("cpu", 1)
    assert "promotion uses the best exported run, cpu run 2" in render_markdown(summary)

    path = tmp_path / "summary.json"
    path.write_text(summary.model_dump_json())
    candidate = read_candidate(path)
    assert (candidate.target, candidate.run_index, candidate.model_uri) == ("cpu", 1, "/models/cpu/1")
    assert candidate.logloss == pytest.approx(0.32)


def test_promotion_fails_clearly_when_no_run_exported_a_model(tmp_path):
    unexported = run("cpu", 0, 0.30, 9000.0)
    unexported.model_uri = None
    summary = summarize(config(), manifest(), [unexported])
    assert summary.best_exported_run is None
    assert "No run exported a model" in render_markdown(summary)
    path = tmp_path / "summary.json"
    path.write_text(summary.model_dump_json())
    with pytest.raises(NoExportedModel, match="no training run exported a model"):
        read_candidate(path)
    legacy = json.loads(path.read_text())
    del legacy["best_exported_run"]
    path.write_text(json.dumps(legacy))
    with pytest.raises(NoExportedModel):
        read_candidate(path)
