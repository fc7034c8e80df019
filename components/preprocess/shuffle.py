"""`ShuffleExamples`: write the train split in an order unrelated to labels, time or join keys.

Beam keeps no promise about element order, and in practice the join's GroupByKey emits impressions that had
engagements first (their keys appear first), so a shard's head is mostly positives and its tail all negatives. A
trainer that shuffles with a buffer smaller than a shard then sees label-sorted batches and ends each epoch tuned to
the tail. Here every example gets a seeded 64-bit hash of its bytes; examples are grouped into `buckets` by that hash
(each bucket a uniform sample of the split) and each bucket is emitted sorted by hash:

    key(x) = blake2b_64(seed ‖ x),   bucket(x) = key(x) mod buckets

Buckets stay small (the split size over `buckets`), so the step scales with the data like any GroupByKey.
"""

from __future__ import annotations

import hashlib

import apache_beam as beam


def example_key(seed: int, example: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(example, digest_size=8, key=str(seed).encode()).digest(), "little")


class ShuffleExamples(beam.PTransform):
    """Serialized examples in → the same examples, reordered by a seeded hash (deterministic for a seed)."""

    def __init__(self, seed: int, buckets: int, label: str | None = None):
        super().__init__(label)
        if buckets < 1:
            raise ValueError(f"buckets must be >= 1, got {buckets}")
        self.seed = seed
        self.buckets = buckets

    def expand(self, examples):
        seed, buckets = self.seed, self.buckets
        return (
            examples
            | "KeyByHash" >> beam.Map(lambda x: (lambda k: (k % buckets, (k, x)))(example_key(seed, x)))
            | "GroupIntoBuckets" >> beam.GroupByKey()
            | "EmitSortedByHash" >> beam.FlatMap(lambda bucket: [x for _, x in sorted(bucket[1], key=lambda kx: kx[0])])
        )
