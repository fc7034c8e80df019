"""The train split is written in a seeded hash order, not in the label-grouped order the join emits."""

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline

from components.preprocess.shuffle import ShuffleExamples

_EMITTED: list[bytes] = []  # in-memory Beam runs in this process; pickled functions find this module global


def _record(example: bytes) -> None:
    _EMITTED.append(example)


def shuffled(examples: list[bytes], seed: int, buckets: int) -> list[bytes]:
    """The examples in the order ShuffleExamples hands them to the writer."""
    _EMITTED.clear()
    with TestPipeline(runner="DirectRunner", options=beam.options.pipeline_options.PipelineOptions(
            direct_running_mode="in_memory", direct_num_workers=1)) as pipeline:
        _ = pipeline | beam.Create(examples, reshuffle=False) | ShuffleExamples(seed, buckets) | beam.Map(_record)
    return list(_EMITTED)


def test_label_sorted_input_comes_out_mixed_and_complete():
    # what the join emits: every positive first (keys with engagements come out of the GroupByKey first)
    examples = [b"pos-%05d" % i for i in range(600)] + [b"neg-%05d" % i for i in range(2400)]
    order = shuffled(examples, seed=7, buckets=32)
    assert sorted(order) == sorted(examples)  # nothing lost or duplicated
    quarters = [order[i * 750:(i + 1) * 750] for i in range(4)]
    rates = [sum(x.startswith(b"pos") for x in q) / len(q) for q in quarters]
    assert all(0.14 < rate < 0.26 for rate in rates), rates  # 20% everywhere, not 80% then 0%


def test_order_is_deterministic_per_seed():
    examples = [b"example-%04d" % i for i in range(500)]
    assert shuffled(examples, seed=3, buckets=8) == shuffled(examples, seed=3, buckets=8)
    assert shuffled(examples, seed=3, buckets=8) != shuffled(examples, seed=4, buckets=8)
