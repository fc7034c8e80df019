"""Every vocabulary feature's vocabulary in one Beam pass and one lookup table.

`tft.compute_and_apply_vocabulary` per feature costs, for each feature, one analyzer (a few Beam stages and
one more walk over the training batches) and one lookup table (a tracked resource whose functions are traced
every time the transform graph is saved or loaded): 1,000 features took minutes even on 6 rows. Here all
vocabulary features share one `tft.experimental.ptransform_analyzer`:

    batches ──► (feature, token) counts per batch ──► sum per (feature, token) ──► group by feature
            ──► keep count >= frequency_threshold, order (count, token) largest first, top_k
            ──► one `vocabularies` file: per feature a header line `<feature>:` then `<feature>:<token>` lines;
                a last line `:` closes the file

and one `tft.apply_vocabulary` over all features' `<feature>:<token>` keys plus the headers: a feature's id
is its key's line number minus its header's line minus one, its vocabulary size the distance to the next
header minus one (empty tokens are never vocabulary entries, so a header cannot be a token's key), and a
token not in the vocabulary hashes into the feature's OOV buckets after its vocabulary. Ids are those of
`compute_and_apply_vocabulary(num_oov_buckets=...)`: same order (count, then token bytes, both descending),
empty or newline tokens left out, an empty vocabulary holding tf.Transform's one dummy token, and OOV ids
`size + hash_bucket_fast(token, oov_buckets)` as `tf.lookup.StaticVocabularyTable` computes them.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
from tensorflow_transform.analyzers import get_empy_vocabulary_dummy_value
from tensorflow_transform.beam.experimental.analyzer_impls import PTransformAnalyzer


VOCABULARIES_FILE = "vocabularies"
KEY_SEPARATOR = b":"  # feature names are [a-z][a-z0-9_]*: the first ':' ends the name


@dataclass(frozen=True)
class VocabularySpec:
    """What one feature's vocabulary keeps: the `top_k` most frequent tokens seen `frequency_threshold` times."""

    feature: str
    top_k: int | None = None
    frequency_threshold: int = 0


def _countable(token: bytes) -> bool:
    return bool(token) and b"\n" not in token and b"\r" not in token


def count_batch(batch: tuple[np.ndarray, ...]):
    """((feature index, token), count) of one batch of analyzer inputs (one flat token array per feature)."""
    for index, tokens in enumerate(batch):
        counts = Counter(tf.compat.as_bytes(token) for token in np.asarray(tokens).reshape(-1).tolist())
        for token, count in counts.items():
            if _countable(token):
                yield (index, token), count


def ordered_vocabulary(counts, spec: VocabularySpec) -> list[bytes]:
    """Tokens most frequent first (ties: larger token bytes first, as tf.Transform), thresholded, top_k."""
    kept = sorted(((count, token) for token, count in counts if count >= spec.frequency_threshold), reverse=True)
    if spec.top_k is not None:
        kept = kept[: spec.top_k]
    return [token for _, token in kept] or [get_empy_vocabulary_dummy_value(tf.string)[1]]


class _WriteVocabularies(beam.DoFn):
    """{feature index: [(token, count)]} → the `vocabularies` file; emits its path."""

    def __init__(self, directory: str, specs: tuple[VocabularySpec, ...]):
        super().__init__()
        self.directory = directory
        self.specs = specs

    def process(self, counts_by_feature: dict):
        path = os.path.join(self.directory, VOCABULARIES_FILE)
        with tf.io.gfile.GFile(path, "wb") as handle:
            for index, spec in enumerate(self.specs):
                prefix = spec.feature.encode() + KEY_SEPARATOR
                tokens = ordered_vocabulary(counts_by_feature.get(index, []), spec)
                handle.write(b"".join(prefix + token + b"\n" for token in [b""] + tokens))
            handle.write(KEY_SEPARATOR + b"\n")
        yield np.array(path.encode())


class ComputeVocabularies(PTransformAnalyzer):
    """Batches of analyzer inputs (one token array per feature) → the vocabularies file's path."""

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
            | "ByFeature" >> beam.MapTuple(lambda key, count: (key[0], (key[1], count)))
            | "GroupByFeature" >> beam.GroupByKey()
            | "Lists" >> beam.MapTuple(lambda index, counts: (index, list(counts)))
            | "AllFeatures" >> beam.combiners.ToDict()
            | "Write" >> beam.ParDo(_WriteVocabularies(directory, self.specs))
        )


def apply_vocabularies(tokens: dict[str, tf.Tensor], features) -> dict[str, tf.Tensor]:
    """Token tensors of the vocabulary features → int64 ids, with one analyzer, one table and a handful of
    ops for all of them (per-feature ops would make the transform graph grow with the feature count).

    `features`: feature configs (`name`, `kind`, `top_k`, `frequency_threshold`, `oov_buckets`); `tokens`:
    [batch] strings for `categorical` features, the 1-D flat values of a list for the others.
    """
    columns = [f for f in features if f.kind == "categorical"]
    flat = [f for f in features if f.kind != "categorical"]
    order = columns + flat
    if not order:
        return {}
    specs = tuple(
        VocabularySpec(f.name, f.top_k, f.frequency_threshold if f.frequency_threshold > 1 else 0) for f in order
    )
    (path,) = tft.experimental.ptransform_analyzer(
        inputs=[tokens[f.name] for f in order],
        ptransform=ComputeVocabularies(specs),
        output_dtypes=[tf.string],
        output_shapes=[[]],
        output_asset_default_values=[KEY_SEPARATOR + b"\n"],
        name="vocabularies",
    )
    parts, feature_of = [], []
    if columns:
        matrix = tf.stack([tokens[f.name] for f in columns], axis=1)  # [batch, columns]
        parts.append(tf.reshape(matrix, [-1]))
        feature_of.append(tf.tile(tf.range(len(columns), dtype=tf.int64), tf.shape(matrix, out_type=tf.int64)[:1]))
    for index, feature in enumerate(flat, start=len(columns)):
        parts.append(tokens[feature.name])
        feature_of.append(tf.fill(tf.shape(tokens[feature.name], out_type=tf.int64), tf.constant(index, tf.int64)))
    all_tokens, feature_of = tf.concat(parts, axis=0), tf.concat(feature_of, axis=0)

    headers = tf.constant([f"{f.name}:" for f in order] + [KEY_SEPARATOR.decode()])
    keys = tf.gather(headers, feature_of) + all_tokens
    lines = tft.apply_vocabulary(tf.concat([headers, keys], axis=0), path, default_value=-1)
    header_lines, lines = lines[: len(order) + 1], lines[len(order) + 1:]
    first = tf.gather(header_lines[:-1] + 1, feature_of)
    size = tf.gather(header_lines[1:] - header_lines[:-1] - 1, feature_of)
    oov_buckets = tf.gather(tf.constant([f.oov_buckets for f in order], tf.int64), feature_of)
    hashed = tf.zeros_like(lines)
    for buckets in sorted({f.oov_buckets for f in order}):
        hashed = tf.where(oov_buckets == buckets, tf.strings.to_hash_bucket_fast(all_tokens, buckets), hashed)
    known = (lines >= 0) & (tf.strings.length(all_tokens) > 0)  # an empty token would hit its feature's header
    ids = tf.where(known, lines - first, size + hashed)

    out = {}
    column_count = tf.size(parts[0]) if columns else 0
    if columns:
        by_column = tf.unstack(tf.reshape(ids[:column_count], [-1, len(columns)]), num=len(columns), axis=1)
        out.update({f.name: column for f, column in zip(columns, by_column)})
    if flat:
        pieces = tf.split(ids[column_count:], [tf.size(tokens[f.name]) for f in flat])
        out.update({f.name: piece for f, piece in zip(flat, pieces)})
    return out


def vocabulary_sizes(tft_output: tft.TFTransformOutput) -> dict[str, int]:
    """Vocabulary entries per feature (without OOV buckets), read from the transform output."""
    try:
        lines = tft_output.vocabulary_by_name(VOCABULARIES_FILE)
    except ValueError:
        return {}
    split = (line.split(KEY_SEPARATOR, 1) for line in lines)
    sizes = Counter(name.decode() for name, token in split if token)  # headers have no token
    return dict(sizes)


def feature_vocabulary(tft_output: tft.TFTransformOutput, feature_name: str) -> list[bytes]:
    """One feature's vocabulary, id order."""
    prefix = feature_name.encode() + KEY_SEPARATOR
    lines = tft_output.vocabulary_by_name(VOCABULARIES_FILE)
    return [line[len(prefix):] for line in lines if line.startswith(prefix) and line != prefix]
