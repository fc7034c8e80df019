"""The export step of a run trained in another process (the JAX lane): a TensorFlow process rebuilds the model from
the trained weights (`components.train.trained_weights`), writes the same serving SavedModel and warm-start state as a
TensorFlow run does (`export.export_serving_model`, `warm_start.write_state`), and completes the run's summary with
the model's URI and the export's seconds. Serving, promotion, warm start and the report then treat the run like any
other."""

from __future__ import annotations

import logging
import time

from components.contracts.manifest import Manifest
from components.contracts.run_summary import RunSummary
from components.train.export import rebuilt_model, write_serving_model
from components.train.trained_weights import TrainedWeights

log = logging.getLogger(__name__)

def export_trained_run(summary: RunSummary, trained_dir: str, examples_dir: str, model_dir: str,
                       model_uri: str | None = None) -> RunSummary:
    """Write `<model_dir>/saved_model` (and its warm-start state) from the weights in `trained_dir`; the summary with
    `model_uri` set (`model_uri`/saved_model when given, else the local path) and the export's seconds added."""
    started = time.perf_counter()
    weights = TrainedWeights.read(trained_dir)
    manifest = Manifest.read(examples_dir)
    model = rebuilt_model(weights.model_class, weights.config, weights.dense_paths, weights.dense, weights.tables,
                          manifest)
    uri = write_serving_model(model, manifest, examples_dir, model_dir, model_uri, summary.calibrators)
    seconds = time.perf_counter() - started
    log.info("exported the %s-trained %s model of %s run %d in %.1f s", summary.backend, summary.model_kind,
             summary.target, summary.run_index + 1, seconds)
    return summary.model_copy(update={
        "model_uri": uri,
        "wall_time_seconds": summary.wall_time_seconds + seconds,
        "time_split": summary.time_split.with_export(seconds) if summary.time_split is not None else None,
    })
