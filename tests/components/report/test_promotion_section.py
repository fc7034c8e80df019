"""The promotion section and the day series show the tolerance and the difference in nats and relative to the
champion, warn about an unscorable champion, and still read decision records written before relative tolerances."""

from __future__ import annotations

from components.contracts.promotion_decision import PromotionDecision
from components.report.day_series import DaySeries, ReplayDay, render_markdown, series_figure
from components.report.promotion_section import promotion_markdown

LEGACY_RECORD = {  # a promotion.json written before relative tolerances existed
    "model": "adrank-local", "version": "2", "registered": True, "promoted": False, "reason": "upper bound > 0.001",
    "rule": "promote when … ≤ 0.001", "tolerance": 0.001, "challenger_target": "cpu", "challenger_run_index": 0,
    "challenger_model_uri": "/m", "challenger_logloss": 0.3012, "champion_version": "1", "champion_status": "scored",
    "champion_logloss": 0.3, "difference": 0.0012, "difference_ci95": [0.0008, 0.0016], "eval_examples": 1000,
    "eval_positives": 100, "primary_task": "click",
}


def _relative(day: int, champion: float | None, difference: float | None) -> PromotionDecision:
    scored = champion is not None and difference is not None
    return PromotionDecision(
        model="m", version=str(day), registered=True, promoted=not scored or difference < 0, reason="r", rule="rule",
        tolerance=0.001 * champion if scored else None, tolerance_relative=0.001, tolerance_form="relative",
        challenger_target="cpu", challenger_run_index=0, challenger_model_uri="/m",
        challenger_logloss=(champion + difference) if scored else 0.0101, champion_version="1" if scored else None,
        champion_status="scored" if scored else "none", champion_logloss=champion, difference=difference,
        difference_ci95=(difference - 0.00005, difference + 0.00005) if scored else None,
        relative_difference=difference / champion if scored else None,
        relative_difference_ci95=((difference - 0.00005) / champion, (difference + 0.00005) / champion)
        if scored else None, eval_examples=25_000, eval_positives=60, primary_task="install")


def test_a_legacy_record_reads_as_absolute_and_renders():
    decision = PromotionDecision.model_validate(LEGACY_RECORD)
    assert decision.tolerance_form == "absolute" and decision.relative_difference is None
    text = promotion_markdown(decision)
    assert "| tolerance (promote when the CI's upper end is ≤) | 0.001000 nats; stated absolute |" in text


def test_the_section_shows_both_units():
    text = promotion_markdown(_relative(2, 0.0100, 0.0001))
    assert "+0.000100 (+1.000% of the champion's)" in text
    assert "| 95% CI relative to the champion | +0.500% … +1.500% |" in text
    assert "0.000010 nats (0.100% of the champion's log-loss); stated relative" in text
    assert "Warning" not in text


def test_the_day_series_shows_each_days_tolerance():
    days = [ReplayDay(day=d, window_end=f"2026-01-0{d + 3}", window_start=None, run_id=f"r-day{d}", seconds=1.0,
                      eval_examples=25_000, eval_positive_rate=0.0024, warm_start=False, decision=decision)
            for d, decision in ((1, _relative(1, None, None)), (2, _relative(2, 0.0100, 0.0001)),
                                (3, _relative(3, 0.0120, -0.00012)))]
    series = DaySeries(replay_id="r", config_name="low-rate", config_hash="h", lookback_days=3, registry="/r",
                       days=days)
    text = render_markdown(series)
    assert "| +0.00010 (+1.00%) |" in text and "| 0.00001 (0.10%) |" in text and "| -0.00012 (-1.00%) |" in text
    assert series_figure(series).startswith(b"\x89PNG")
