"""The promotion step's plain function: score the challenger and the champion on today's eval examples, register
the challenger, and apply the promotion rule (`components.registry.promotion`)."""

from __future__ import annotations

from components.registry import gcs_mount
from components.registry.local import LocalModelRegistry
from components.registry.promotion import Candidate, PromotionDecision, Verdict, judge, read_candidate, rule_in_words
from components.evaluate.stats import paired_difference
from components.registry.scoring import (
    ChampionUnscorable, EvalExamples, per_example_logloss, predicted_probabilities,
)
from configs.promotion import PromotionConfig
from configs.slices import PromoteStepConfig


class SameDayJudge:
    """Judges a champion model directory against the challenger, both scored on the same raw eval examples."""

    def __init__(self, examples: EvalExamples, challenger_model_dir: str, promotion: PromotionConfig):
        self.examples = examples
        self.promotion = promotion
        try:
            probabilities = predicted_probabilities(challenger_model_dir, examples)
        except ChampionUnscorable as error:  # the model this run exported: a failure of the run, not of the champion
            raise RuntimeError(f"the challenger cannot be scored: {error}") from error
        self.challenger_losses = per_example_logloss(examples.labels, probabilities)

    @property
    def challenger_logloss(self) -> float:
        return float(self.challenger_losses.mean())

    def __call__(self, champion_model_dir: str | None) -> Verdict:
        if champion_model_dir is None:
            return judge(None, None, self.promotion)
        try:
            champion = per_example_logloss(self.examples.labels,
                                           predicted_probabilities(champion_model_dir, self.examples))
        except ChampionUnscorable as error:
            return judge(None, str(error), self.promotion)
        return judge(paired_difference(self.challenger_losses, champion), None, self.promotion)


def decision_record(model: str, version: str | None, verdict: Verdict, candidate: Candidate, examples: EvalExamples,
                    champion_version: str | None, promotion: PromotionConfig,
                    challenger_logloss: float | None) -> PromotionDecision:
    comparison = verdict.comparison
    return PromotionDecision(
        model=model, version=version, registered=version is not None, promoted=verdict.promoted,
        reason=verdict.reason, rule=rule_in_words(promotion.logloss_tolerance), tolerance=promotion.logloss_tolerance,
        challenger_target=candidate.target, challenger_run_index=candidate.run_index,
        challenger_model_uri=candidate.model_uri, challenger_logloss=challenger_logloss,
        champion_version=champion_version, champion_status=verdict.champion_status,
        champion_logloss=comparison.champion_logloss if comparison else None,
        difference=comparison.difference if comparison else None,
        difference_ci95=comparison.difference_ci95 if comparison else None,
        eval_examples=examples.size, eval_positives=examples.positives, primary_task=examples.task,
    )


def one_class_reason(examples: EvalExamples) -> str | None:
    if examples.size and 0 < examples.positives < examples.size:
        return None
    kind = "no positives" if examples.positives == 0 else "no negatives"
    return (f"the eval split has {kind} for task '{examples.task}' ({examples.size:,} examples): its log-loss says "
            "nothing about ranking, so the model is not registered")


def promote_best_run(config: PromoteStepConfig, backend: str, summary_json: str,
                     examples_dir: str) -> PromotionDecision:
    """`config`: the promotion step's slice of the config (name, the whole config's hash, promotion, vertex).
    `examples_dir`: the preprocess output whose raw eval examples both models are scored on."""
    candidate = read_candidate(summary_json)
    examples = EvalExamples.read(examples_dir, candidate.primary_task)
    promotion = config.promotion
    model = config.name
    if backend == "vertex":
        from components.registry.vertex import model_display_name

        model = model_display_name(config)
    refused = one_class_reason(examples)
    if refused is not None:
        verdict = Verdict(False, refused, "none")
        return decision_record(model, None, verdict, candidate, examples, None, promotion, None)
    same_day = SameDayJudge(examples, gcs_mount.container_path(candidate.model_uri), promotion)
    if backend == "vertex":
        from components.registry.vertex import register_version

        labels = {"adrank-pipeline": config.name, "adrank-config": config.config_hash,
                  "adrank-target": candidate.target}
        version, verdict, champion_version = register_version(config, candidate, labels, same_day)
        return decision_record(model, version, verdict, candidate, examples, champion_version, promotion,
                               same_day.challenger_logloss)
    registry = LocalModelRegistry(promotion.local_registry)

    def record(version: str, verdict: Verdict, champion_version: str | None) -> dict:
        return decision_record(model, version, verdict, candidate, examples, champion_version, promotion,
                               same_day.challenger_logloss).model_dump(mode="json")

    version, verdict, champion_version = registry.register(model, candidate, same_day, record)
    return decision_record(model, version, verdict, candidate, examples, champion_version, promotion,
                           same_day.challenger_logloss)
