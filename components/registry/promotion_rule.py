"""The promotion rule, shared by the local registry and the Vertex Model Registry; its decision record is
`components.contracts.promotion_decision.PromotionDecision`.

Every daily run registers its best exported model (the challenger) as a new version. Whether it becomes the
default is decided on figures measured on the same examples in the same run: the current default (the
champion) and the challenger are both scored, through their raw serving signatures, on today's eval examples
(`components.registry.scoring`), and the rule reads the paired difference:

    promote  ⇔  upper end of the 95% interval of mean(ℓ_challenger − ℓ_champion)  ≤  tolerance
                and the primary task has at least promotion.min_eval_positives eval positives
    tolerance = promotion.logloss_tolerance_relative × mean(ℓ_champion)     (default: relative)
              | promotion.logloss_tolerance                                 (absolute nats, when set instead)
    interval  = paired bootstrap over the eval examples (components.registry.paired_bootstrap)

A relative tolerance means the same at every click rate: 0.001 nats is 0.3% of a 10%-click-rate log-loss but 13%
of a 0.2%-install-rate one, so an absolute threshold waves through clearly worse models on low-rate tasks.
The decision record carries the difference, its interval (and how it was made) and the tolerance in both units,
and the eval positives of every task: a day whose primary task has fewer than `promotion.min_eval_positives`
positives keeps the champion (the decision says so) unless `promotion.on_few_positives: promote`, since a few
examples then carry the whole difference and no interval of it is to be trusted.

With no champion the challenger is promoted. A champion that cannot be loaded or cannot read today's raw
features follows `promotion.on_unscorable_champion` (default `keep`). A model evaluated on a split with only one class is not
registered at all: its log-loss says nothing about ranking.

(The rule this replaced compared today's log-loss with the number stored when the champion was promoted, on
another day's examples; the day-to-day change in click rate is larger than the gap between two models, so it
promoted and rejected on noise. An absolute threshold is right only on a frozen benchmark set.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from components.contracts.benchmark_summary import BenchmarkSummary
from components.contracts.promotion_decision import ChampionStatus
from components.evaluate.run_statistics import PairedComparison
from configs.promotion import PromotionConfig


@dataclass(frozen=True)
class Candidate:
    """The best run of one pipeline run, read from the report's `summary_json` (a `BenchmarkSummary`)."""

    pipeline: str
    config_hash: str
    primary_task: str
    target: str
    run_index: int
    logloss: float
    model_uri: str
    auc: float | None = None


@dataclass(frozen=True)
class Verdict:
    """What the rule concluded about one challenger against one champion."""

    promoted: bool
    reason: str
    champion_status: ChampionStatus
    comparison: PairedComparison | None = None
    tolerance: float | None = None  # nats, as applied (relative × champion log-loss, or the absolute setting)



def rule_in_words(promotion: PromotionConfig) -> str:
    return (f"promote when the upper 95% bound of mean(challenger − champion) log-loss on the same eval examples "
            f"is ≤ {promotion.stated_tolerance()}")


def relative(value: float, champion_logloss: float) -> float | None:
    """`value` as a fraction of the champion's log-loss (None for a champion with zero log-loss)."""
    return value / champion_logloss if champion_logloss > 0 else None


def judge(comparison: PairedComparison | None, champion_error: str | None, promotion: PromotionConfig,
          positives: int | None = None, task: str = "") -> Verdict:
    """The rule. `comparison` None and no error: there is no champion yet. `positives`: the eval positives of the
    primary task `task` (None: the comparison's own count, else not checked)."""
    if champion_error is not None:
        promoted = promotion.on_unscorable_champion == "promote"
        action = ("challenger promoted without a comparison" if promoted
                  else "default kept, registry unchanged apart from the new version")
        return Verdict(promoted, f"champion could not be scored ({champion_error}); {action} "
                                 f"(promotion.on_unscorable_champion: {promotion.on_unscorable_champion})", "unscorable",
                       tolerance=promotion.logloss_tolerance)
    if comparison is None:
        return Verdict(True, "no default version yet", "none",
                       tolerance=promotion.logloss_tolerance)
    low, high = comparison.difference_ci95
    tolerance = promotion.tolerance_nats(comparison.champion_logloss)
    if positives is None:
        positives = getattr(comparison, "positives", None)
    counted = f", {positives:,} positive" if positives is not None else ""
    figures = (f"challenger − champion = {comparison.difference:+.6f} (95% CI {low:+.6f} … {high:+.6f}) on "
               f"{comparison.examples:,} eval examples{counted}")
    share = relative(high, comparison.champion_logloss)
    if share is not None:
        figures += f"; upper bound {share:+.3%} of the champion's {comparison.champion_logloss:.6f}"
    if promotion.tolerance_form == "relative":
        limit = f"tolerance {tolerance:.6g} nats ({promotion.logloss_tolerance_relative:g} × champion log-loss)"
    else:
        limit = f"tolerance {tolerance:g} nats"
    promoted = high <= tolerance
    reason = f"{figures}: upper bound {'≤' if promoted else '>'} {limit}"
    few = positives is not None and positives < promotion.min_eval_positives
    if few and promoted:
        of_task = f" of task '{task}'" if task else ""
        if promotion.on_few_positives == "keep":
            return Verdict(False, f"only {positives:,} eval positives{of_task}, fewer than promotion."
                           f"min_eval_positives {promotion.min_eval_positives:,}: a few examples carry the whole "
                           f"difference, so the champion stays (promotion.on_few_positives: keep); {reason}",
                           "scored", comparison, tolerance)
        reason += (f"; promoted on only {positives:,} eval positives{of_task}, fewer than promotion."
                   f"min_eval_positives {promotion.min_eval_positives:,} (promotion.on_few_positives: promote)")
    return Verdict(promoted, reason, "scored", comparison, tolerance)


class NoExportedModel(ValueError):
    """No run of the pipeline exported a model, so there is nothing to register."""


def read_candidate(summary_json: str | Path) -> Candidate:
    """The best run that exported a model, from the report's `BenchmarkSummary` (`best_exported_run`; in a
    summary written before that field existed, `best_run` when it has a `model_uri`). A run without a model
    is never promoted, even when its log-loss is the best."""
    summary = BenchmarkSummary.read(summary_json)
    best = summary.best_exported_run
    if "best_exported_run" not in summary.model_fields_set and summary.best_run.model_uri:
        best = summary.best_run
    if best is None or not best.model_uri:
        raise NoExportedModel(f"{summary_json}: no training run exported a model; nothing to promote")
    row = summary.run(best.target, best.run_index)
    return Candidate(
        pipeline=summary.pipeline,
        config_hash=summary.config_hash,
        primary_task=summary.primary_task,
        target=best.target,
        run_index=best.run_index,
        logloss=best.logloss,
        model_uri=best.model_uri,
        auc=row.auc.get(summary.primary_task) if row is not None else None,
    )
