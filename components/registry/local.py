"""A model registry in a directory: what the local backend promotes into.

    <root>/<model>/versions/<n>/model/          copy of the model directory
    <root>/<model>/versions/<n>/evaluation.json the candidate (target, run, log-loss, source URI)
    <root>/<model>/default.json                 {"version": "<n>", "logloss": ...}
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

from components.registry.promotion import Candidate, PromotionDecision, decide


class LocalModelRegistry:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _model_dir(self, model: str) -> Path:
        return self.root / model

    def versions(self, model: str) -> list[str]:
        directory = self._model_dir(model) / "versions"
        if not directory.is_dir():
            return []
        return sorted((p.name for p in directory.iterdir() if p.name.isdigit()), key=int)

    def default(self, model: str) -> dict | None:
        path = self._model_dir(model) / "default.json"
        return json.loads(path.read_text()) if path.exists() else None

    def evaluation(self, model: str, version: str) -> dict:
        return json.loads((self._model_dir(model) / "versions" / version / "evaluation.json").read_text())

    def register(self, model: str, candidate: Candidate, tolerance: float) -> PromotionDecision:
        """Add the candidate as the next version; make it the default if the promotion rule allows."""
        existing = self.versions(model)
        version = str(int(existing[-1]) + 1 if existing else 1)
        target = self._model_dir(model) / "versions" / version
        target.mkdir(parents=True)
        source = Path(candidate.model_uri)
        if source.is_dir():
            shutil.copytree(source, target / "model")
        elif source.is_file():
            (target / "model").mkdir()
            shutil.copy2(source, target / "model" / source.name)
        (target / "evaluation.json").write_text(json.dumps(asdict(candidate), indent=2))
        current = self.default(model)
        current_logloss = current["logloss"] if current else None
        is_default, reason = decide(candidate.logloss, current_logloss, tolerance)
        if is_default:
            (self._model_dir(model) / "default.json").write_text(
                json.dumps({"version": version, "logloss": candidate.logloss}, indent=2)
            )
        return PromotionDecision(model, version, is_default, candidate.logloss, current_logloss, tolerance, reason)
