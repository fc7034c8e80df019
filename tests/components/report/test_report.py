import json
from pathlib import Path

import pytest

from components.contracts.manifest import FeatureInfo, Manifest, SplitInfo
from components.contracts.run_summary import CurvePoint, HardwareSeen, RunSummary, TaskMetrics
from components.report.aggregation import summarize
from components.report.write_report import write_report
from configs import load_config
from configs.slices import ReportStepConfig


def manifest() -> Manifest:
    return Manifest(
        tasks=["engagement"],
        features=[FeatureInfo(name="ad_id", kind="categorical", dtype="int64", table_rows=10)],
        splits={
            "train": SplitInfo(examples=900, label_rates={"engagement": 0.1}, file_pattern="train-*"),
            "eval": SplitInfo(examples=300, label_rates={"engagement": 0.12}, file_pattern="eval-*",
                              bayes_logloss={"engagement": 0.30}),
        },
        dead_letter={"bad_json": 3},
    )


def run(target: str, index: int, logloss: float, eps: float, wall: float = 10.0, kind: str = "CPU") -> RunSummary:
    return RunSummary(
        target=target, target_kind="cpu", run_index=index, seed=7 + index,
        hardware=HardwareSeen(device_kind=kind, device_count=1, strategy="DefaultStrategy", replicas=1),
        model_kind="dcn", global_batch_size=512, learning_rate=0.003, steps=100, epochs=1, train_examples=900,
        wall_time_seconds=wall, examples_per_second=eps,
        metrics={"engagement": TaskMetrics(logloss=logloss, auc=0.7, normalized_entropy=0.9, calibration=1.0,
                                           examples=300, positive_rate=0.12)},
        curve=[CurvePoint(step=1, loss=0.5), CurvePoint(step=100, loss=0.35)],
        model_uri=f"/models/{target}/{index}",
    )


def config(skipped_targets=()):
    """The report step's slice of a config with two CPU targets (and `skipped_targets`)."""
    return ReportStepConfig.of(load_config(overrides=[
        "targets=[{name: cpu, kind: cpu, price_per_hour: 0.36}, {name: cpu-big, kind: cpu, global_batch_size: 2048, price_per_hour: 0.72}]",
        "report.baseline_target=cpu",
    ]), skipped_targets)


def test_summary_aggregates_per_target_and_compares_with_baseline():
    runs = [run("cpu", i, ll, 1000.0) for i, ll in enumerate([0.32, 0.33, 0.34])]
    runs += [run("cpu-big", i, ll, 4000.0) for i, ll in enumerate([0.35, 0.36, 0.37])]
    summary = summarize(config(), manifest(), runs)

    cpu, big = summary.targets["cpu"], summary.targets["cpu-big"]
    assert cpu.runs == 3 and cpu.logloss_mean == pytest.approx(0.33) and cpu.logloss_std == pytest.approx(0.01)
    assert big.relative_throughput == pytest.approx(4.0)
    # $0.72/h at 4000/s vs $0.36/h at 1000/s → half the cost per example
    assert big.relative_cost == pytest.approx(0.5)
    assert cpu.cost_per_million_examples_usd == pytest.approx(0.36 / 3600 / 1000 * 1e6)
    comparison = big.tasks["engagement"].vs_baseline
    assert comparison.significant and comparison.difference == pytest.approx(0.03)
    assert summary.best_run.target == "cpu" and summary.best_run.logloss == 0.32
    expected_constant = -(0.12 * __import__("math").log(0.1) + 0.88 * __import__("math").log(0.9))
    assert summary.constant_ctr_logloss == pytest.approx(expected_constant)
    assert summary.bayes_logloss == 0.30
    assert cpu.hardware_seen == ["1 × CPU"]


class FakeArtifact:
    def __init__(self, path: Path):
        self.path = str(path)
        self.metadata = {}
        self.metrics = {}

    def log_metric(self, name, value):
        self.metrics[name] = value


def test_write_report_writes_every_output(tmp_path):
    examples = tmp_path / "examples"
    examples.mkdir()
    manifest().write(examples)
    paths = []
    for target, eps in (("cpu", 1000.0), ("cpu-big", 3000.0)):
        for i in range(2):
            paths.append(str(run(target, i, 0.33 + i * 0.01, eps).write(tmp_path / f"{target}-{i}")))
    outputs = {name: FakeArtifact(tmp_path / name) for name in ("html", "md", "json", "metrics", "m1", "m2")}
    write_report(config(), str(examples), paths, outputs["html"], outputs["md"], outputs["json"],
                 outputs["metrics"], {"cpu": outputs["m1"], "cpu-big": outputs["m2"]})

    summary = json.loads((tmp_path / "json").read_text())
    assert set(summary["targets"]) == {"cpu", "cpu-big"}
    assert summary["targets"]["cpu"]["runs"] == 2
    html = (tmp_path / "html").read_text()
    assert "cpu-big" in html and "data:image/png;base64," in html and "1 × CPU" in html
    markdown = (tmp_path / "md").read_text()
    assert "| cpu (baseline) |" in markdown and "bad_json: 3" in markdown
    # keys unique per target and task: a Vertex Experiment row merges every Metrics artifact of the run
    assert outputs["m2"].metrics["cpu-big/examples_per_second_mean"] == pytest.approx(3000.0)
    assert outputs["m1"].metrics["cpu/engagement/logloss_mean"] == pytest.approx(0.335)
    assert not set(outputs["m1"].metrics) & set(outputs["m2"].metrics)
    assert outputs["metrics"].metrics["best_logloss"] == pytest.approx(0.33)


def test_skipped_targets_are_listed_with_their_reason(tmp_path):
    from components.report.write_report import build_report
    from configs.report import SkippedTarget

    runs = [run("cpu", i, 0.33 + i * 0.01, 1000.0) for i in range(2)]
    skipped = [SkippedTarget(name="tpu-v5e", kind="tpu", reason="the local backend has no TPU")]
    summary, html, markdown, _ = build_report(config(skipped), manifest(), runs)
    assert summary.skipped_targets == skipped
    assert "Skipped tpu-v5e (tpu): the local backend has no TPU." in markdown
    assert "## Skipped targets" in markdown and "| tpu-v5e | tpu | the local backend has no TPU |" in markdown
    assert "Skipped targets" in html and "the local backend has no TPU" in html
    _, _, nothing_skipped, _ = build_report(config(), manifest(), runs)
    assert "Skipped" not in nothing_skipped


def test_input_stall_is_shown_per_target_with_a_sentence_when_input_bound():
    from components.report.findings import findings
    from components.report.summary_markdown import render_markdown

    runs = [run("cpu", i, 0.33, 1000.0).model_copy(update={"input_stall_fraction": stall})
            for i, stall in enumerate([0.20, 0.30])]
    runs += [run("cpu-big", i, 0.34, 3000.0).model_copy(update={"input_stall_fraction": 0.04}) for i in range(2)]
    summary = summarize(config(), manifest(), runs)
    assert summary.targets["cpu"].input_stall_mean == pytest.approx(0.25)
    lines = findings(summary)
    assert any(line.startswith("cpu is input-bound: 25.0% of its step time") for line in lines)
    assert not any(line.startswith("cpu-big is input-bound") for line in lines)
    markdown = render_markdown(summary)
    assert markdown.count("| input stall |") == 2  # the per-target and the per-run table
    assert "25.0%" in markdown and "4.0%" in markdown and "30.0%" in markdown  # per target and per run


def test_synchronous_and_asynchronous_targets_are_compared_in_words():
    from components.report.findings import findings

    ps_config = ReportStepConfig.of(load_config(overrides=[
        "targets=[{name: cpu, kind: cpu, price_per_hour: 0.38}, {name: cpu-ps, kind: cpu-ps, price_per_hour: 0.38}]",
    ]))
    runs = [run("cpu", i, ll, 2000.0, wall=60.0) for i, ll in enumerate([0.320, 0.321, 0.322])]
    runs += [run("cpu-ps", i, ll, 1000.0, wall=90.0) for i, ll in enumerate([0.320, 0.322, 0.321])]
    line = next(found for found in findings(summarize(ps_config, manifest(), runs)) if found.startswith("Synchronous"))
    assert line.startswith("Synchronous cpu vs asynchronous cpu-ps (parameter servers): log-loss 0.32100 vs 0.32100")
    assert "does not differ significantly" in line
    assert "cpu is faster, 2.00× the examples/s of cpu-ps (2,000 vs 1,000)" in line
    per_run, per_million = 0.38 * 60 / 3600, 0.38 / (2000 * 3600) * 1e6
    assert f"cost per run ${per_run:.4f} vs ${0.38 * 90 / 3600:.4f}" in line
    assert f"per million examples ${per_million:.4f} vs ${2 * per_million:.4f}" in line

    worse = runs[:3] + [run("cpu-ps", i, ll, 3000.0) for i, ll in enumerate([0.35, 0.351, 0.352])]
    line = next(found for found in findings(summarize(ps_config, manifest(), worse)) if found.startswith("Synchronous"))
    assert "their log-loss differs significantly" in line and "cpu-ps is faster, 1.50×" in line


def test_findings_name_the_target_to_retrain_on_and_the_config_line():
    from components.report.findings import findings

    three = ReportStepConfig.of(load_config(overrides=[
        "targets=[{name: cpu, kind: cpu, price_per_hour: 0.36}, {name: cpu-big, kind: cpu, price_per_hour: 0.72}, "
        "{name: cpu-cheap, kind: cpu, price_per_hour: 0.10}]", "retraining.target=cpu",
    ]))
    runs = [run("cpu", i, ll, 1000.0) for i, ll in enumerate([0.320, 0.322, 0.321])]
    # as good as cpu and 4× as fast at 2× the price per hour: half the cost per million examples
    runs += [run("cpu-big", i, ll, 4000.0) for i, ll in enumerate([0.321, 0.320, 0.322])]
    # the cheapest per example, but significantly worse: never the pick
    runs += [run("cpu-cheap", i, ll, 4000.0) for i, ll in enumerate([0.350, 0.352, 0.351])]
    lines = findings(summarize(three, manifest(), runs))
    (line,) = [line for line in lines if line.startswith("Retrain on")]
    assert line.startswith("Retrain on cpu-big: the cheapest ($0.0500 per million examples) of the targets whose "
                           "log-loss is not significantly worse than the best (cpu, 0.32100): cpu, cpu-big.")
    assert "`retraining: {target: cpu-big}`" in line and "--set retraining.target=cpu-big" in line

    # one run per target: nothing can be tested, so only the best qualifies
    single = [run("cpu", 0, 0.321, 1000.0), run("cpu-big", 0, 0.322, 4000.0), run("cpu-cheap", 0, 0.35, 4000.0)]
    (line,) = [line for line in findings(summarize(three, manifest(), single)) if line.startswith("Retrain on")]
    assert line.startswith("Retrain on cpu: with fewer than two runs per target")
    # a report on the one target the retraining pipeline trains names none
    one = ReportStepConfig.of(load_config(overrides=["targets=[{name: cpu, kind: cpu}]", "retraining.target=cpu"]))
    assert not [line for line in findings(summarize(one, manifest(), runs[:3])) if line.startswith("Retrain on")]


def test_the_input_bound_finding_says_by_how_much_and_only_the_fixes_the_figures_support():
    from components.report.findings import findings
    from components.report.summary_markdown import render_markdown

    def with_input(target, stall, supply, demand, fmt="blocks", cache=0):
        return [run(target, i, 0.33, 1000.0).model_copy(update={
            "input_stall_fraction": stall, "input_examples_per_second": supply, "step_examples_per_second": demand,
            "input_format": fmt, "input_cache_bytes": cache}) for i in range(2)]

    # the pipeline alone is slower than the step: per-example records, nothing cached
    summary = summarize(config(), manifest(), with_input("cpu", 0.5, 4_000.0, 10_000.0, fmt="tf.Example")
                        + with_input("cpu-big", 0.05, 50_000.0, 10_000.0))
    [line] = [line for line in findings(summary) if "input-bound" in line]
    assert line.startswith("cpu is input-bound: 50.0% of its step time")
    assert "delivers 4,000 examples/s alone" in line and "consumes 10,000" in line and "2.5x faster" in line
    assert "training-ready blocks" in line and "training.cache: memory" in line
    assert "| 4,000 | 10,000 |" in render_markdown(summary)  # input alone and step, per target
    # the pipeline alone is faster than the step and the split is cached: only more cores can help
    summary = summarize(config(), manifest(), with_input("cpu", 0.3, 30_000.0, 10_000.0, cache=2**20)
                        + with_input("cpu-big", 0.05, 50_000.0, 10_000.0))
    [line] = [line for line in findings(summary) if "input-bound" in line]
    assert "3.0x what its step consumes" in line and "sharing this host's cores" in line
    assert "training.cache" not in line and "blocks" not in line and line.endswith("more host cores than the step uses.")
    # not measured: no advice
    summary = summarize(config(), manifest(), with_input("cpu", 0.3, None, None)
                        + with_input("cpu-big", 0.05, None, None))
    [line] = [line for line in findings(summary) if "input-bound" in line]
    assert "not measured" in line and "would fix" not in line
