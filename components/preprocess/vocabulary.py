"""Every vocabulary feature's vocabulary in one Beam pass and one lookup table.

`tft.compute_and_apply_vocabulary` per feature costs, for each feature, one analyzer (a few Beam stages and
one more walk over the training batches) and one lookup table (a tracked resource whose functions are traced
every time the transform graph is saved or loaded): 1,000 features took minutes even on 6 rows. Here all
vocabulary features share one `tft.experimental.ptransform_analyzer`:

    batches ──► (feature, token) counts per batch ──► sum per (feature, token) ──► group by feature
            ──► keep count >= frequency_threshold, order (count, token) largest first, top_k
            ──► one `vocabularies` file: per feature a header line `<feature>`, then `<feature>:<token>`
                lines; a last line `:` closes the file

and one table (line → line number) for all of them: a feature's id is the line of `<feature>:<token>` minus
its header's line minus one, its vocabulary size the distance to the next header minus one, and a token not
in the vocabulary hashes into the feature's OOV buckets after its vocabulary. Ids are those of
`compute_and_apply_vocabulary(num_oov_buckets=...)`: same order (count, then token bytes, both descending),
empty or newline tokens left out, an empty vocabulary holding tf.Transform's one dummy token, and OOV ids
`size + hash_bucket_fast(token, oov_buckets)` as `tf.lookup.StaticVocabularyTable` computes them.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
from tensorflow_transform.analyzers import get_empy_vocabulary_dummy_value
from tensorflow_transform.beam.experimental.analyzer_impls import PTransformAnalyzer

from components.preprocess.vocabulary_file import (
    KEY_SEPARATOR,
    TRAILER,
    VOCABULARIES_FILE,
    sizes_from_lines,
    tokens_from_lines,
)


@dataclass(frozen=True)
class VocabularySpec:
    """What one feature's vocabulary keeps: the `top_k` most frequent tokens seen `frequency_threshold` times."""

    feature: str
    top_k: int | None = None
    frequency_threshold: int = 0


def _countable(token: bytes) -> bool:
    return bool(token) and b"\n" not in token and b"\r" not in token


def count_batch(batch: tuple[np.ndarray, np.ndarray]):
    """(`<feature>:<token>`, count) of one batch of analyzer inputs: the batch's distinct keys and their counts
    (counted in the graph, so a batch crosses into Beam as two arrays rather than one per feature)."""
    keys, counts = batch
    for key, count in zip(keys.tolist(), counts.tolist()):
        if _countable(key.split(KEY_SEPARATOR, 1)[1]):
            yield key, count


def _by_feature(key: bytes, count: int):
    feature, token = key.split(KEY_SEPARATOR, 1)
    return feature.decode(), (token, count)


@beam.ptransform_fn
def EntriesByFeature(keyed: beam.PCollection) -> beam.PCollection:  # noqa: N802 (a PTransform)
    """(feature name, entry) pairs → one {feature name: [entry, ...]} dict: what an analyzer over several features
    at once (this module's vocabularies, `learned_hash` mappings) hands to the DoFn that writes its asset."""
    return (
        keyed
        | "GroupByFeature" >> beam.GroupByKey()
        | "Lists" >> beam.MapTuple(lambda feature, entries: (feature, list(entries)))
        | "AllFeatures" >> beam.combiners.ToDict()
    )


def ordered_vocabulary(counts, spec: VocabularySpec) -> list[bytes]:
    """Tokens most frequent first (ties: larger token bytes first, as tf.Transform), thresholded, top_k."""
    kept = sorted(((count, token) for token, count in counts if count >= spec.frequency_threshold), reverse=True)
    if spec.top_k is not None:
        kept = kept[: spec.top_k]
    return [token for _, token in kept] or [get_empy_vocabulary_dummy_value(tf.string)[1]]


class _WriteVocabularies(beam.DoFn):
    """{feature: [(token, count)]} → the `vocabularies` file; emits its path."""

    def __init__(self, directory: str, specs: tuple[VocabularySpec, ...]):
        super().__init__()
        self.directory = directory
        self.specs = specs

    def process(self, counts_by_feature: dict):
        path = os.path.join(self.directory, VOCABULARIES_FILE)
        with tf.io.gfile.GFile(path, "wb") as handle:
            for spec in self.specs:
                prefix = spec.feature.encode() + KEY_SEPARATOR
                tokens = ordered_vocabulary(counts_by_feature.get(spec.feature, []), spec)
                handle.write(spec.feature.encode() + b"\n" + b"".join(prefix + token + b"\n" for token in tokens))
            handle.write(TRAILER + b"\n")
        yield np.array(path.encode())


class ComputeVocabularies(PTransformAnalyzer):
    """Batches of analyzer inputs (distinct `<feature>:<token>` keys, their counts) → the vocabularies file's path."""

    def __init__(self, specs: tuple[VocabularySpec, ...]):
        super().__init__()
        self.specs = specs

    def expand(self, batches):
        directory = os.path.join(self.base_temp_dir, f"vocabularies-{uuid.uuid4().hex}")
        tf.io.gfile.makedirs(directory)
        return (
            batches
            | "CountPerBatch" >> beam.FlatMap(count_batch)
            | "SumPerToken" >> beam.CombinePerKey(sum)
            | "ByFeature" >> beam.MapTuple(_by_feature)
            | "PerFeature" >> EntriesByFeature()
            | "Write" >> beam.ParDo(_WriteVocabularies(directory, self.specs))
        )


def apply_vocabularies(tokens: dict[str, tf.Tensor], features) -> dict[str, tf.Tensor]:
    """1-D token tensors of the vocabulary features → int64 ids, with one analyzer and one table for all.

    `features`: feature configs (`name`, `top_k`, `frequency_threshold`, `oov_buckets`). Each feature keeps
    its own few lookup ops: tf.Transform walks every output's ancestry when it loads the graph, so outputs
    computed from one shared tensor would cost (features x graph size).
    """
    features = tuple(features)
    if not features:
        return {}
    specs = tuple(
        VocabularySpec(f.name, f.top_k, f.frequency_threshold if f.frequency_threshold > 1 else 0) for f in features
    )
    keys = tf.concat([f"{f.name}:" + tf.reshape(tokens[f.name], [-1]) for f in features], axis=0)
    distinct, _, counts = tf.unique_with_counts(keys, out_idx=tf.int64)
    (path,) = tft.experimental.ptransform_analyzer(
        inputs=[distinct, counts],
        ptransform=ComputeVocabularies(specs),
        output_dtypes=[tf.string],
        output_shapes=[[]],
        output_asset_default_values=[TRAILER + b"\n"],
        name="vocabularies",
    )
    tables = []

    def lookup_headers(headers, filename):
        initializer = tf.lookup.TextFileInitializer(
            filename, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER
        )
        tables.append(tf.lookup.StaticHashTable(initializer, default_value=-1))
        return tables[0].lookup(headers), tables[0].size()

    headers = tf.constant([f.name for f in features] + [TRAILER.decode()])
    header_lines = tf.unstack(
        tft.apply_vocabulary(headers, path, lookup_fn=lookup_headers), num=len(features) + 1
    )
    ids = {}
    for index, feature in enumerate(features):
        token = tokens[feature.name]
        line = tables[0].lookup(f"{feature.name}:" + token)  # an empty token's key is in no line: OOV
        first, end = header_lines[index] + 1, header_lines[index + 1]
        oov = end - first + tf.strings.to_hash_bucket_fast(token, feature.oov_buckets)
        ids[feature.name] = tf.where(line >= 0, line - first, oov)
    return ids


def vocabulary_sizes(tft_output: tft.TFTransformOutput) -> dict[str, int]:
    """Vocabulary entries per feature (without OOV buckets), read from the transform output."""
    try:
        lines = tft_output.vocabulary_by_name(VOCABULARIES_FILE)
    except ValueError:
        return {}
    return sizes_from_lines(lines)


def feature_vocabulary(tft_output: tft.TFTransformOutput, feature_name: str) -> list[bytes]:
    """One feature's vocabulary, id order."""
    return tokens_from_lines(tft_output.vocabulary_by_name(VOCABULARIES_FILE), feature_name)
