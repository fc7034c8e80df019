"""The `learned_hash` encoding: a table of `hash_buckets` rows in which the most frequent ids have their own rows
and the tail shares the rest, grouped so that ids which behaved alike in the train split collide
(after Ghaemmaghami et al., 2022, "Learning to Collide": a mapping learned from access frequency plus a
low-dimensional embedding of each id beat the hashing trick at equal memory).

For each feature, from the train split (one tf.Transform analyzer for all such features):

    per id i: accesses n_i, positives k_it per task t
    dedicated:  the `dedicated_rows` ids with most accesses → rows 0 .. dedicated_rows-1 (ties: larger token first)
    profile:    e_it = logit((k_it + r_t·m_t) / (n_i + m_t))   smoothed log-odds of the id's label rate per task,
                shrunk to the train rate r_t with prior strength m_t = 1 / r_t (the examples in which one positive
                is expected) — only for ids with enough evidence, n_i·r_t >= MIN_EXPECTED_POSITIVES; every other
                id gets the prior, logit(r_t). With several tasks, reduced to one dimension by the first principal
                component of the standardized e_i· (access-weighted)
    shared:     tail ids sorted by (score, accesses, token), cut into S = hash_buckets − dedicated_rows runs of
                equal total accesses → rows dedicated_rows + 0 .. S-1

so ids of similar label rate share a row where their history says so, ids of too little history share rows with
ids of similar frequency, and every shared row gets about the same number of training accesses (the frequency
side of the paper's mapping). The evidence gate matters: grouping ids seen a few times by their labels puts the
lucky ones (a conversion in 3 impressions) in rows of their own and leaves rows of ids that never converted,
whose train rate is exactly 0 — the model then learns those rows as "never converts" and under-predicts every
rare and unseen id at eval (measured: docs/compression.md). An id never seen in training (and an empty token)
maps to the row of the ids seen once; that row is trained. The mapping is a `feature:token<TAB>row` file
written by the analyzer, looked up by the transform graph, so serving applies exactly the training mapping.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
from tensorflow_transform.beam.experimental.analyzer_impls import PTransformAnalyzer

from components.preprocess.vocabulary import KEY_SEPARATOR, EntriesByFeature

MAPPING_FILE = "learned_hash"
FIELD_SEPARATOR = b"\t"
PLACEHOLDER = b":\t-1\n"  # the asset before the analyzer has run: one well-formed line, no feature
EPSILON = 1e-6
MIN_EXPECTED_POSITIVES = 5.0  # an id's label rate shapes its group only past this many expected positives


@dataclass(frozen=True)
class LearnedHashSpec:
    feature: str
    rows: int
    dedicated_rows: int


@dataclass(frozen=True)
class LearnedMapping:
    """One feature's mapping: token → row, and the row of tokens it has never seen."""

    rows: dict[bytes, int]
    unseen_row: int


def _mappable(token: bytes) -> bool:
    return bool(token) and not any(c in token for c in (b"\n", b"\r", FIELD_SEPARATOR))


def learn_mapping(history: list[tuple[bytes, int, tuple[int, ...]]], spec: LearnedHashSpec) -> LearnedMapping:
    """`history`: (token, accesses, positives per task) of every id of one feature in the train split."""
    shared_rows = spec.rows - spec.dedicated_rows
    history = [(token, count, positives) for token, count, positives in history if _mappable(token) and count > 0]
    if not history:
        return LearnedMapping({}, spec.dedicated_rows)
    history.sort(key=lambda item: (item[1], item[0]), reverse=True)
    dedicated, tail = history[: spec.dedicated_rows], history[spec.dedicated_rows:]
    rows = {token: row for row, (token, _, _) in enumerate(dedicated)}

    counts = np.array([count for _, count, _ in history], dtype=np.float64)
    positives = np.array([positives for _, _, positives in history], dtype=np.float64).reshape(len(history), -1)
    rates = np.clip(positives.sum(axis=0) / counts.sum(), EPSILON, 1 - EPSILON)
    project = _profile_projection(counts, positives, rates)
    unseen_score = float(project(np.array([1.0]), np.zeros((1, rates.size)))[0])
    if not tail:
        return LearnedMapping(rows, spec.dedicated_rows)

    tail_counts = np.array([count for _, count, _ in tail], dtype=np.float64)
    tail_positives = np.array([positives for _, _, positives in tail], dtype=np.float64).reshape(len(tail), -1)
    scores = project(tail_counts, tail_positives)
    tokens = [token for token, _, _ in tail]
    order = sorted(range(len(tail)), key=lambda i: (scores[i], tail_counts[i], tokens[i]))
    accesses_before = np.concatenate([[0.0], np.cumsum(tail_counts[order])[:-1]])
    shared = np.minimum((accesses_before / tail_counts.sum() * shared_rows).astype(np.int64), shared_rows - 1)
    for position, index in enumerate(order):
        rows[tokens[index]] = spec.dedicated_rows + int(shared[position])
    # The unseen row: where an id seen once sorts among the tail (the first id with the prior's score).
    sorted_scores = scores[order]
    position = min(int(np.searchsorted(sorted_scores, unseen_score - 1e-9, side="left")), len(order) - 1)
    return LearnedMapping(rows, spec.dedicated_rows + int(shared[position]))


def _profile_projection(counts: np.ndarray, positives: np.ndarray, rates: np.ndarray):
    """A function (accesses, positives) → one score per id: the smoothed log-odds per task, standardized and
    projected on the first principal component of the whole feature (the identity for one task)."""
    strength = 1.0 / rates

    def log_odds(n, k):
        smoothed = (k + rates * strength) / (n[:, None] + strength)
        smoothed = np.where(n[:, None] * rates >= MIN_EXPECTED_POSITIVES, smoothed, rates)  # too little evidence
        return np.log(smoothed) - np.log1p(-smoothed)

    profile = log_odds(counts, positives)
    weights = counts / counts.sum()
    mean = weights @ profile
    std = np.sqrt(weights @ (profile - mean) ** 2) + EPSILON
    if profile.shape[1] == 1:
        direction = np.ones(1)
    else:
        standardized = (profile - mean) / std * np.sqrt(weights)[:, None]
        direction = np.linalg.svd(standardized, full_matrices=False)[2][0]
        direction = direction if direction.sum() >= 0 else -direction  # higher score = higher rates
    return lambda n, k: ((log_odds(n, k) - mean) / std) @ direction


def count_batch(batch: tuple[np.ndarray, np.ndarray, np.ndarray]):
    """(`<feature>:<token>`, (accesses, positives per task)) for one batch's distinct keys."""
    keys, counts, positives = batch
    for key, count, row in zip(keys.tolist(), counts.tolist(), positives.tolist()):
        yield key, (int(count), tuple(int(round(value)) for value in row))


def _sum_history(values) -> tuple[int, tuple[int, ...]]:
    count, positives = 0, None
    for value_count, value_positives in values:
        count += value_count
        positives = value_positives if positives is None else tuple(a + b for a, b in zip(positives, value_positives))
    return count, positives or ()


def _by_feature(key: bytes, history: tuple[int, tuple[int, ...]]):
    feature, token = key.split(KEY_SEPARATOR, 1)
    return feature.decode(), (token, history[0], history[1])


class _WriteMappings(beam.DoFn):
    """{feature: [(token, accesses, positives)]} → the mapping file: per feature a line `<feature>\\t<unseen row>`,
    then `<feature>:<token>\\t<row>` lines; emits its path."""

    def __init__(self, directory: str, specs: tuple[LearnedHashSpec, ...]):
        super().__init__()
        self.directory = directory
        self.specs = specs

    def process(self, history_by_feature: dict):
        path = os.path.join(self.directory, MAPPING_FILE)
        with tf.io.gfile.GFile(path, "wb") as handle:
            for spec in self.specs:
                mapping = learn_mapping(list(history_by_feature.get(spec.feature, [])), spec)
                prefix = spec.feature.encode() + KEY_SEPARATOR
                handle.write(spec.feature.encode() + FIELD_SEPARATOR + str(mapping.unseen_row).encode() + b"\n")
                handle.write(b"".join(
                    prefix + token + FIELD_SEPARATOR + str(row).encode() + b"\n" for token, row in mapping.rows.items()
                ))
        yield np.array(path.encode())


class LearnHashMappings(PTransformAnalyzer):
    """Batches of (distinct `<feature>:<token>` keys, accesses, positives per task) → the mapping file's path."""

    def __init__(self, specs: tuple[LearnedHashSpec, ...]):
        super().__init__()
        self.specs = specs

    def expand(self, batches):
        directory = os.path.join(self.base_temp_dir, f"learned-hash-{uuid.uuid4().hex}")
        tf.io.gfile.makedirs(directory)
        return (
            batches
            | "HistoryPerBatch" >> beam.FlatMap(count_batch)
            | "SumPerToken" >> beam.CombinePerKey(_sum_history)
            | "ByFeature" >> beam.MapTuple(_by_feature)
            | "PerFeature" >> EntriesByFeature()
            | "Write" >> beam.ParDo(_WriteMappings(directory, self.specs))
        )


def apply_learned_hashing(tokens: dict[str, tf.Tensor], labels: tf.Tensor, features) -> dict[str, tf.Tensor]:
    """1-D token tensors of the `learned_hash` features (one token per example) → int64 rows, learned by one
    analyzer for all of them. `labels`: float [batch, tasks], the train labels the profiles are learned from."""
    features = tuple(features)
    if not features:
        return {}
    specs = tuple(LearnedHashSpec(f.name, f.hash_buckets, dedicated_rows(f)) for f in features)
    keys = tf.concat([f"{f.name}:" + tf.reshape(tokens[f.name], [-1]) for f in features], axis=0)
    distinct, index, counts = tf.unique_with_counts(keys, out_idx=tf.int64)
    positives = tf.math.unsorted_segment_sum(
        tf.tile(tf.cast(labels, tf.float32), [len(features), 1]), index, tf.size(distinct, out_type=tf.int64)
    )
    (path,) = tft.experimental.ptransform_analyzer(
        inputs=[distinct, counts, positives],
        ptransform=LearnHashMappings(specs),
        output_dtypes=[tf.string],
        output_shapes=[[]],
        output_asset_default_values=[PLACEHOLDER],
        name="learned_hash",
    )
    tables = []

    def lookup_unseen_rows(headers, filename):
        initializer = tf.lookup.TextFileInitializer(
            filename, tf.string, 0, tf.int64, 1, delimiter=FIELD_SEPARATOR.decode()
        )
        tables.append(tf.lookup.StaticHashTable(initializer, default_value=-1))
        return tables[0].lookup(headers), tables[0].size()

    headers = tf.constant([f.name for f in features])
    unseen_rows = tf.unstack(tft.apply_vocabulary(headers, path, lookup_fn=lookup_unseen_rows), num=len(features))
    rows = {}
    for feature, spec, unseen in zip(features, specs, unseen_rows):
        row = tables[0].lookup(f"{feature.name}:" + tokens[feature.name])
        # Before the analyzer has run (a placeholder file), fall back to the first shared row.
        unseen = tf.where(unseen >= 0, unseen, tf.constant(spec.dedicated_rows, tf.int64))
        rows[feature.name] = tf.where(row >= 0, row, unseen)
    return rows


def dedicated_rows(feature) -> int:
    """Rows given to the most frequent ids: `dedicated_rows`, by default half the table."""
    return feature.dedicated_rows if feature.dedicated_rows is not None else feature.hash_buckets // 2


def feature_mapping(tft_output: tft.TFTransformOutput, feature_name: str) -> LearnedMapping:
    """One feature's learned mapping, read back from the transform output."""
    rows, unseen = {}, None
    for line in tft_output.vocabulary_by_name(MAPPING_FILE):
        key, row = line.rsplit(FIELD_SEPARATOR, 1)
        if key == feature_name.encode():
            unseen = int(row)
        elif key.startswith(feature_name.encode() + KEY_SEPARATOR):
            rows[key.split(KEY_SEPARATOR, 1)[1]] = int(row)
    if unseen is None:
        raise KeyError(f"no learned_hash mapping for feature {feature_name!r}")
    return LearnedMapping(rows, unseen)
