"""The report's scaling table: each swept target's points against point 1, from what the runs' runtimes saw."""

import pytest

from components.report.aggregation import summarize
from components.report.summary_markdown import render_markdown
from configs import load_config
from configs.slices import ReportStepConfig
from tests.components.report.test_report import manifest, run


def point_run(target, index, logloss, eps, devices, simulated=False, batch=512):
    summary = run(target, index, logloss, eps)
    hardware = summary.hardware.model_copy(update={"device_count": devices, "replicas": devices,
                                                   "simulated": simulated})
    return summary.model_copy(update={"hardware": hardware, "global_batch_size": batch})


def swept(scale="[1, 2, 4]"):
    return ReportStepConfig.of(load_config(overrides=[
        f"targets=[{{name: cpu, kind: cpu, price_per_hour: 0.5, scale: {scale}}}, {{name: other, kind: cpu}}]"]))


def test_each_point_against_point_one_from_the_devices_the_runs_saw():
    runs = [point_run("cpu", i, ll, 1000.0, 1) for i, ll in enumerate([0.330, 0.331])]
    runs += [point_run("cpu-x2", i, ll, 1800.0, 2, batch=1024) for i, ll in enumerate([0.332, 0.333])]
    runs += [point_run("cpu-x4", i, ll, 2000.0, 2, batch=2048) for i, ll in enumerate([0.350, 0.352])]  # 2 of 4
    runs += [run("other", 0, 0.34, 900.0)]
    summary = summarize(swept(), manifest(), runs)
    (sweep,) = summary.scaling
    one, two, four = sweep.points
    assert (sweep.target, sweep.batch, [p.factor for p in sweep.points]) == ("cpu", "per_device", [1, 2, 4])
    assert one.speedup is None and one.vs_first is None and one.devices == 1
    assert two.speedup == pytest.approx(1.8) and two.efficiency == pytest.approx(0.9)
    assert four.efficiency == pytest.approx(1.0)  # over the 2 devices its runs saw, not the 4 asked
    assert two.cost_per_million_examples_usd == pytest.approx(1.0 / (1800 * 3600) * 1e6)  # twice the price
    assert two.global_batch_size == 1024 and not two.vs_first.significant
    assert four.vs_first.significant and four.vs_first.difference > 0
    markdown = render_markdown(summary)
    assert "## Scaling" in markdown and "| cpu | ×2 | cpu-x2 | 2 | 1 | 1,024 |" in markdown
    assert "2 (asked 4)" in markdown
    assert "Scaling of cpu: ×4 saw 2 device(s) of 4; its efficiency is over the devices seen." in markdown


def test_simulated_devices_are_said_so_and_a_report_without_a_sweep_has_no_table():
    runs = [point_run("cpu", i, 0.33, 1000.0, 1) for i in range(2)]
    runs += [point_run("cpu-x2", i, 0.33, 990.0, 2, simulated=True) for i in range(2)]
    summary = summarize(swept("[1, 2]"), manifest(), runs)
    markdown = render_markdown(summary)
    assert "2 (simulated)" in markdown and "the devices were simulated on one host's CPU" in markdown
    plain = summarize(swept("null"), manifest(), [run("cpu", 0, 0.33, 1000.0)])
    assert plain.scaling == [] and "## Scaling" not in render_markdown(plain)


def test_a_point_that_timed_no_steady_step_has_no_throughput_and_says_why():
    runs = [point_run("cpu", i, 0.33, 1000.0, 1) for i in range(2)]
    runs += [point_run("cpu-x2", i, 0.33, 0.0, 2, simulated=True) for i in range(2)]  # RunClock's 0: none timed
    (sweep,) = summarize(swept("[1, 2]"), manifest(), runs).scaling
    two = sweep.points[1]
    assert (two.examples_per_second_mean, two.speedup, two.efficiency, two.cost_per_million_examples_usd) == (
        None, None, None, None)
    markdown = render_markdown(summarize(swept("[1, 2]"), manifest(), runs))
    assert "| — (no steady step) | — | — | — |" in markdown and "×2 timed no steady training step" in markdown
