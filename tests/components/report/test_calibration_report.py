import pytest

from components.report.calibration_finding import explained_band
from components.report.findings import findings
from components.report.summary import summarize
from components.report.write_report import build_report
from components.train.posthoc_calibration import Calibrator
from tests.components.report.test_report import config, manifest, run

RELIABILITY = [(0.05, 0.04, 100), (0.10, 0.11, 100), (0.21, 0.20, 100)]


def calibrated_run(target, index, calibration, uncalibrated=None):
    summary = run(target, index, 0.33 + 0.001 * index, 1000.0)
    updates = {"calibration": calibration, "mean_prediction": calibration * 0.12, "reliability": RELIABILITY}
    if uncalibrated is not None:
        updates |= {"uncalibrated_calibration": uncalibrated, "uncalibrated_logloss": 0.34}
        summary.calibrators = {"engagement": Calibrator(method="platt", slope=0.9, intercept=-0.2, examples=90,
                                                        positives=9)}
    summary.metrics["engagement"] = summary.metrics["engagement"].model_copy(update=updates)
    return summary


def calibration_lines(runs):
    return [line for line in findings(summarize(config(), manifest(), runs)) if "predicts" in line or "step" in line]


def test_the_band_the_base_rate_shift_explains():
    # train 10%, eval 12%: a model that learned the train rate predicts 0.83x the eval rate
    assert explained_band(0.10, 0.12) == pytest.approx((0.10 / 0.12, 1.0))
    assert explained_band(0.12, 0.10) == pytest.approx((1.0, 1.2))


def test_finding_only_when_calibration_is_off_beyond_the_base_rate_shift():
    # the manifest's train rate is 10% and eval 12%: the explained band is [0.83, 1.0]
    assert calibration_lines([calibrated_run("cpu", i, 0.80) for i in range(2)]) == []  # within 10% of the band
    assert calibration_lines([calibrated_run("cpu", i, 1.05) for i in range(2)]) == []
    (over,) = calibration_lines([calibrated_run("cpu", i, 1.48) for i in range(2)])
    assert over.startswith("cpu/engagement: over-predicts") and "1.48×" in over and "48% beyond" in over
    (under,) = calibration_lines([calibrated_run("cpu", i, 0.70) for i in range(2)])
    assert "under-predicts" in under and "16% beyond" in under  # 0.70 / 0.833 = 0.84


def test_the_report_shows_the_calibration_step_and_the_reliability_curve():
    runs = [calibrated_run("cpu", i, 1.02, uncalibrated=1.4) for i in range(2)]
    summary, html_text, markdown_text, _ = build_report(config(), manifest(), runs)
    (step,) = calibration_lines(runs)
    assert "platt calibration step moved mean prediction / eval rate 1.400 → 1.020" in step
    curve = summary.targets["cpu"].tasks["engagement"].reliability
    assert [count for _, _, count in curve] == [100, 100, 100]
    assert [p for p, _, _ in curve] == pytest.approx([0.05, 0.10, 0.21])
    assert "Calibration: reliability per bin" in markdown_text
    assert "| cpu | engagement | 3 | 100 | 0.21000 |" in markdown_text
    assert "alt='reliability'" in html_text and "Calibration: reliability per bin" in html_text


def test_summaries_written_before_the_calibration_fields_still_load(tmp_path):
    legacy = run("cpu", 0, 0.33, 1000.0).model_dump()
    for field in ("mean_prediction", "reliability", "uncalibrated_logloss", "uncalibrated_calibration"):
        del legacy["metrics"]["engagement"][field]
    del legacy["calibrators"]
    from components.train.summary import RunSummary

    loaded = RunSummary.model_validate(legacy)
    assert loaded.metrics["engagement"].reliability == [] and loaded.calibrators == {}
    summary, html_text, _, _ = build_report(config(), manifest(), [loaded])
    assert summary.targets["cpu"].tasks["engagement"].reliability == [] and "alt='reliability'" not in html_text
