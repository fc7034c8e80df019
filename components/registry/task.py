"""The promotion step's plain function: read the best run, register it, apply the promotion rule."""

from __future__ import annotations

from components.registry.local import LocalModelRegistry
from components.registry.promotion import PromotionDecision, read_candidate
from configs import AdrankConfig, config_hash


def promote_best_run(config: AdrankConfig, backend: str, summary_json: str) -> PromotionDecision:
    """`config`: the whole config, or the promotion step's slice of it (name, config_hash, promotion, vertex)."""
    candidate = read_candidate(summary_json)
    if backend == "vertex":
        from components.registry.vertex import register_version

        whole_config_hash = getattr(config, "config_hash", None) or config_hash(config)  # a slice carries it
        labels = {"adrank-pipeline": config.name, "adrank-config": whole_config_hash,
                  "adrank-target": candidate.target}
        return register_version(config, candidate, labels)
    registry = LocalModelRegistry(config.promotion.local_registry)
    return registry.register(config.name, candidate, config.promotion.logloss_tolerance)
