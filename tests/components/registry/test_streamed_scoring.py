"""Promotion scores the eval split in bounded memory: batches of `promotion.scoring_batch_size`, at most
`promotion.max_eval_examples`, paired statistics accumulated batch by batch, equal to the in-memory figures (the
means and t-interval to rounding, the bootstrap's interval exactly: it does not depend on the batches)."""

from __future__ import annotations

import numpy as np
import pytest
from fixture_models import TASK, day_of_examples, save_model, summary_naming, write_eval_examples

from components.evaluate.run_statistics import paired_difference
from components.registry import scoring
from components.registry.paired_bootstrap import PairedBootstrap
from components.registry.promote_challenger import promote_best_run
from components.registry.scoring import EvalSplit, PairedAccumulator, ServingModel, paired_logloss, per_example_logloss
from configs import load_config
from configs.slices import PromoteStepConfig

GOOD, BAD = (2.0, -2.0), (0.5, -1.0)


@pytest.mark.parametrize("sizes", [[1000], [1, 999], [7, 300, 2, 691], [500, 0, 500]])
def test_accumulated_batches_equal_the_whole_array(sizes):
    rng = np.random.default_rng(4)
    challenger, champion = rng.gamma(2.0, 0.2, 1000), rng.gamma(2.0, 0.21, 1000)
    accumulator = PairedAccumulator()
    start = 0
    for size in sizes:
        accumulator.add(challenger[start:start + size], champion[start:start + size])
        start += size
    streamed, whole = accumulator.comparison(), paired_difference(challenger, champion)
    assert streamed.examples == whole.examples == 1000
    assert streamed.difference == pytest.approx(whole.difference, rel=1e-12, abs=1e-15)
    assert streamed.difference_ci95 == pytest.approx(whole.difference_ci95, rel=1e-10)
    assert (streamed.challenger_logloss, streamed.champion_logloss) == pytest.approx(
        (whole.challenger_logloss, whole.champion_logloss), rel=1e-12)


def test_a_split_larger_than_the_batch_is_streamed_and_equals_the_in_memory_result(tmp_path, monkeypatch):
    x, y = day_of_examples(seed=9, n=1000)
    examples = write_eval_examples(tmp_path / "examples", x, y)
    challenger = ServingModel(str(save_model(tmp_path / "good", *GOOD)))
    champion = ServingModel(str(save_model(tmp_path / "bad", *BAD)))
    seen: list[int] = []
    probabilities = ServingModel.probabilities

    def recording(self, serialized, task):
        seen.append(int(serialized.shape[0]))
        return probabilities(self, serialized, task)

    monkeypatch.setattr(ServingModel, "probabilities", recording)
    streamed = paired_logloss(EvalSplit.locate(examples, TASK, batch_size=64), challenger, champion)
    assert max(seen) == 64 and sum(seen) == 2 * 1000  # never more than one batch per model at a time

    whole = EvalSplit.locate(examples, TASK, batch_size=10_000)
    (serialized, labels), = list(whole.batches())  # the whole split in memory, one batch
    in_memory = paired_difference(per_example_logloss(labels, probabilities(challenger, serialized, TASK)),
                                  per_example_logloss(labels, probabilities(champion, serialized, TASK)))
    assert streamed.examples == in_memory.examples == 1000
    assert streamed.difference == pytest.approx(in_memory.difference, rel=1e-9)
    assert streamed.champion_logloss == pytest.approx(in_memory.champion_logloss, rel=1e-9)
    whole_split = PairedBootstrap()
    whole_split.add(per_example_logloss(labels, probabilities(challenger, serialized, TASK))
                    - per_example_logloss(labels, probabilities(champion, serialized, TASK)), labels)
    assert streamed.difference_ci95 == pytest.approx(whole_split.interval(2000), rel=1e-9)
    assert streamed.positives == int(labels.sum()) and streamed.interval_method.startswith("paired bootstrap-t")


def test_the_promotion_step_scores_at_most_the_configured_cap_in_configured_batches(tmp_path, monkeypatch):
    x, y = day_of_examples(seed=2, n=1200)
    examples = write_eval_examples(tmp_path / "examples", x, y)
    config = PromoteStepConfig.of(load_config(None, [
        f"promotion.local_registry={tmp_path / 'registry'}", "promotion.scoring_batch_size=100",
        "promotion.max_eval_examples=700"]))
    read: list[int] = []
    batches = EvalSplit.batches

    def recording(self):
        for serialized, labels in batches(self):
            read.append(int(labels.size))
            yield serialized, labels

    monkeypatch.setattr(EvalSplit, "batches", recording)
    promote_best_run(config, "local", str(summary_naming(tmp_path / "a.json", save_model(tmp_path / "a", *BAD))),
                     str(examples))
    read.clear()
    decision = promote_best_run(config, "local", str(summary_naming(tmp_path / "b.json",
                                                                    save_model(tmp_path / "b", *GOOD))), str(examples))
    assert max(read) == 100 and sum(read) == 2 * 700  # label counts, then one paired pass: 700 of 1,200 each
    assert decision.eval_examples == 700 and decision.eval_examples_cap == 700
    assert decision.eval_positives == int(y[:700].sum())
    labels = y[:700].astype(np.float64)
    differences = (per_example_logloss(labels, 1 / (1 + np.exp(-(2 * x[:700] - 2))))
                   - per_example_logloss(labels, 1 / (1 + np.exp(-(0.5 * x[:700] - 1)))))
    assert decision.difference == pytest.approx(differences.mean(), rel=1e-4)
    first_700 = PairedBootstrap()
    first_700.add(differences, labels)
    assert decision.difference_ci95 == pytest.approx(first_700.interval(2000), rel=1e-3)


def test_a_model_answering_no_probability_is_unscorable(tmp_path):
    x, y = day_of_examples(seed=1, n=50)
    examples = write_eval_examples(tmp_path / "examples", x, y)
    broken = ServingModel(str(save_model(tmp_path / "nan", float("nan"), 0.0)))  # weights damaged into NaN
    with pytest.raises(scoring.ModelUnscorable, match="not probabilities"):
        scoring.mean_logloss(EvalSplit.locate(examples, TASK), broken)
