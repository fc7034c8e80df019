"""preprocess() end to end on a hand-written two-stream log: join, labels, split and transformed values."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import tensorflow_transform as tft
from block_rows import read_blocks
from tensorflow.core.protobuf import saved_model_pb2

from components.contracts.manifest import DayCount, Manifest, TransformedFeatureSpec
from components.preprocess.run import TooManyInvalidRecords, preprocess

DAY1, DAY2 = "2026-01-01", "2026-01-02"


def impression(i, ts, ad, age, interests, user="u1"):
    return {"impression_id": f"imp-{i}", "timestamp": ts, "user_id": user, "ad_id": ad, "user_age": age,
            "user_interests": interests}


def event(i, imp, kind, ts):
    return {"event_id": f"ev-{i}", "impression_id": imp, "event_type": kind, "timestamp": ts}


IMPRESSIONS = [
    impression(1, f"{DAY1}T10:00:00.000Z", "a1", 20, ["x", "y", "z"]),
    impression(2, f"{DAY1}T11:00:00.000Z", "a1", 30, ["y"]),
    impression(3, f"{DAY1}T12:00:00.000Z", "a2", 40, []),
    impression(3, f"{DAY1}T12:30:00.000Z", "a9", 99, ["w"]),  # duplicate id: the earliest record is kept
    impression(4, f"{DAY2}T09:00:00.000Z", "a3", 50, ["y", "q"]),
    '{"impression_id": "imp-5", "timestamp": ',  # truncated line
]
EVENTS = [
    event(1, "imp-1", "swipe", f"{DAY1}T11:00:00.000Z"),  # exactly the window: positive
    event(2, "imp-2", "swipe", f"{DAY1}T12:00:00.001Z"),  # 1 ms late: negative, counted late
    event(3, "imp-3", "swipe", f"{DAY1}T12:00:00.000Z"),  # zero delay: positive
    event(4, "imp-4", "swipe", f"{DAY2}T08:59:59.999Z"),  # before the impression: counted early
    event(5, "imp-4", "install", f"{DAY2}T10:59:00.000Z"),  # within the 2 h install window
    event(6, "imp-999", "swipe", f"{DAY1}T10:00:00.000Z"),  # orphan
    event(7, "imp-1", "teleport", f"{DAY1}T10:00:00.000Z"),  # unknown event type
]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, config_for, log_writer):
    root = tmp_path_factory.mktemp("tiny")
    imps = log_writer(root / "logs" / "impressions.jsonl", IMPRESSIONS)
    evs = log_writer(root / "logs" / "engagements.jsonl", EVENTS)
    config = config_for(
        logs={"source": "files", "impressions": imps, "engagements": evs},
        tasks=[{"name": "engagement", "event_type": "swipe", "attribution_window_seconds": 3600},
               {"name": "conversion", "event_type": "install", "attribution_window_seconds": 7200}],
        features=[
            {"name": "user_id", "kind": "categorical", "encoding": "hash", "hash_buckets": 10},
            {"name": "ad_id", "kind": "categorical", "encoding": "vocabulary", "oov_buckets": 1},
            {"name": "user_interests", "kind": "categorical_list", "max_length": 2},
            {"name": "user_age", "kind": "numeric", "normalization": "zscore"},
            {"name": "hour", "kind": "time", "part": "hour_of_day"},
            {"name": "weekday", "kind": "time", "part": "day_of_week"},
        ],
    )
    out = root / "out"
    manifest = preprocess(config, None, str(out))
    return manifest, out


def read_split(out, manifest: Manifest, split: str) -> list[dict]:
    return sorted(read_blocks(out, manifest, split), key=lambda r: int(r["hour"]))


def test_labels_follow_the_attribution_window(tiny_run):
    manifest, out = tiny_run
    train, evaluation = read_split(out, manifest, "train"), read_split(out, manifest, "eval")
    assert [int(r["hour"]) for r in train] == [10, 11, 12]
    assert [float(r["label_engagement"]) for r in train] == [1.0, 0.0, 1.0]
    assert [float(r["label_conversion"]) for r in train] == [0.0, 0.0, 0.0]
    assert [(int(r["hour"]), float(r["label_engagement"]), float(r["label_conversion"])) for r in evaluation] == [
        (9, 0.0, 1.0)
    ]
    assert manifest.splits["train"].label_rates == pytest.approx({"engagement": 2 / 3, "conversion": 0.0})
    assert manifest.splits["eval"].label_rates == {"engagement": 0.0, "conversion": 1.0}


def test_counts_and_dead_letters(tiny_run):
    manifest, out = tiny_run
    counts = manifest.counts
    assert counts["impressions_read"] == 6 and counts["engagements_read"] == 7
    assert counts["duplicate_impressions"] == 1
    assert counts["orphan_engagements"] == 1
    assert counts["late_events:label_engagement"] == 1
    assert counts["early_events:label_engagement"] == 1
    assert counts["examples"] == 4
    assert manifest.dead_letter == {"impressions:bad_json": 1, "engagements:unknown_event_type": 1}
    assert manifest.invalid_fraction == pytest.approx(2 / 13)
    assert manifest.invalid_fraction_by_stream == pytest.approx({"impressions": 1 / 6, "engagements": 1 / 7})
    letters = [json.loads(line) for path in out.glob("dead_letter/*.jsonl") for line in path.read_text().splitlines()]
    assert sorted(d["reason"] for d in letters) == ["bad_json", "unknown_event_type"]
    assert any(d["raw"] == IMPRESSIONS[-1] for d in letters)
    assert (out / "manifest.md").read_text().startswith("# Preprocess")
    assert "## Dead letters (15.38% of records read; impressions 16.67%, engagements 14.29%)" in (
        out / "manifest.md").read_text()


def test_transformed_values_and_feature_contract(tiny_run):
    manifest, out = tiny_run
    train, evaluation = read_split(out, manifest, "train"), read_split(out, manifest, "eval")
    features = {f.name: f for f in manifest.features}
    # ad_id vocabulary on train: a1 (twice) then a2; unseen a3 lands in the single OOV bucket.
    assert [int(r["ad_id"]) for r in train] == [0, 0, 1]
    assert int(evaluation[0]["ad_id"]) == 2
    assert features["ad_id"].table_rows == 3 and features["ad_id"].kind == "categorical"
    assert features["user_id"].table_rows == 10
    assert all(0 <= int(r["user_id"]) < 10 for r in train + evaluation)
    # lists: fixed length 2, id 0 pads, vocabulary ids shifted by one; y (twice) is the most frequent token.
    lists = [r["user_interests"] for r in train]
    assert lists[1] == [1, 0] and lists[2] == [0, 0]
    assert len(lists[0]) == 2 and all(i >= 1 for i in lists[0])
    assert features["user_interests"].length == 2
    assert features["user_interests"].table_rows == 5  # x, y, z + 1 OOV + padding
    assert evaluation[0]["user_interests"][0] == 1
    assert evaluation[0]["user_interests"][1] == 4  # q is OOV: 3 + 1
    assert features["user_interests"].missing_rate == pytest.approx(0.25)
    # z-score with train mean 30 and population std sqrt(200/3).
    std = math.sqrt(200 / 3)
    np.testing.assert_allclose([float(r["user_age"]) for r in train], [-10 / std, 0.0, 10 / std], atol=1e-5)
    np.testing.assert_allclose(float(evaluation[0]["user_age"]), 20 / std, atol=1e-5)
    assert int(evaluation[0]["weekday"]) == 4  # 2026-01-02 is a Friday
    assert features["hour"].table_rows == 24 and features["weekday"].table_rows == 7
    assert manifest.feature_spec["user_interests"] == TransformedFeatureSpec(dtype="int64", shape=[2])
    assert manifest.feature_spec["ad_id"] == TransformedFeatureSpec(dtype="int64", shape=[])
    assert manifest.feature_spec["label_engagement"] == TransformedFeatureSpec(dtype="float32", shape=[])
    assert Manifest.read(out) == manifest


def test_too_many_invalid_records_fail_naming_share_and_reasons(tmp_path, config_for, log_writer):
    imps = log_writer(tmp_path / "i.jsonl", IMPRESSIONS[:2] + ["not json"] * 3)
    evs = log_writer(tmp_path / "e.jsonl", EVENTS[:1])
    config = config_for(
        logs={"source": "files", "impressions": imps, "engagements": evs},
        tasks=[{"name": "engagement", "event_type": "swipe"}],
        features=[{"name": "ad_id", "kind": "categorical"}],
        preprocess={"direct_running_mode": "in_memory", "direct_num_workers": 1, "output_shards": 1,
                    "max_invalid_fraction": 0.1},
        split={"eval_days": 1},
    )
    with pytest.raises(TooManyInvalidRecords, match=r"^impressions: 3 of 5 records read \(60\.00%\) .*impressions:bad_json \(3\)"):
        preprocess(config, None, str(tmp_path / "out"))


def test_the_calibration_split_is_the_latest_train_days(tmp_path, config_for, log_writer):
    """split.calibration_days: 1 writes the last train day again as the calibration split (transformed like
    train); train keeps every train day and the example count is not doubled. Run with tf.Transform's TF2 graph
    (`preprocess.force_tf_compat_v1: false`): the same job, a TF2 SavedModel, the raw spec still beside it."""
    days = ["2026-01-01", "2026-01-02", "2026-01-03"]
    rows = [impression(10 * d + i, f"{day}T{10 + i}:00:00.000Z", "a1", 20 + i, ["x"])
            for d, day in enumerate(days) for i in range(3)]
    events = [event(1, "imp-10", "swipe", f"{days[1]}T10:30:00.000Z"),   # day 2 (the calibration day): positive
              event(2, "imp-0", "swipe", f"{days[0]}T10:30:00.000Z")]    # day 1: positive
    config = config_for(
        logs={"source": "files", "impressions": log_writer(tmp_path / "logs" / "impressions.jsonl", rows),
              "engagements": log_writer(tmp_path / "logs" / "engagements.jsonl", events)},
        tasks=[{"name": "engagement", "event_type": "swipe", "attribution_window_seconds": 3600}],
        split={"eval_days": 1, "calibration_days": 1},
        features=[{"name": "ad_id", "kind": "categorical", "encoding": "vocabulary"},
                  {"name": "user_age", "kind": "numeric", "normalization": "zscore"},
                  {"name": "hour", "kind": "time", "part": "hour_of_day"}],
        preprocess={"direct_running_mode": "in_memory", "direct_num_workers": 1, "output_shards": 1,
                    "min_positives_per_task": 0, "min_negatives_per_task": 0, "force_tf_compat_v1": False},
    )
    manifest = preprocess(config, None, str(tmp_path / "out"))
    saved = saved_model_pb2.SavedModel.FromString((tmp_path / "out" / "transform_fn" / "saved_model.pb").read_bytes())
    assert "transform_signature" not in saved.meta_graphs[0].signature_def  # a TF2 graph
    assert set(tft.TFTransformOutput(str(tmp_path / "out")).raw_feature_spec()) == {
        "timestamp_ms", "ad_id", "user_age", "label_engagement"}
    assert {s: manifest.splits[s].examples for s in manifest.splits} == {"train": 6, "eval": 3, "calibration": 3}
    assert manifest.counts["examples"] == 9
    assert manifest.splits["calibration"].label_rates == pytest.approx({"engagement": 1 / 3})
    # per UTC day, what the calibration step's day-ahead backtest reads
    assert manifest.splits["train"].days == [DayCount(date=days[0], examples=3, positives={"engagement": 1}),
                                             DayCount(date=days[1], examples=3, positives={"engagement": 1})]
    assert manifest.splits["calibration"].days == manifest.splits["train"].days[1:]
    assert manifest.splits["eval"].days == []
    calibration = read_split(tmp_path / "out", manifest, "calibration")
    train = read_split(tmp_path / "out", manifest, "train")
    ages = lambda split: sorted(float(r["user_age"]) for r in split)  # noqa: E731 (zscored: day 2's are a subset)
    assert set(ages(calibration)) <= set(ages(train)) and len(ages(calibration)) == 3
    assert sorted(float(r["label_engagement"]) for r in calibration) == [0.0, 0.0, 1.0]


def test_eval_values_never_seen_in_train_are_measured_per_feature_and_flagged(tiny_run, capsys):
    """The eval example (user u1, ad a3, 09:00 on a Friday) after three train examples (u1; a1, a1, a2; 10–12 h on a
    Thursday): its ad, hour and weekday never occur in train, its user does."""
    manifest, _ = tiny_run
    assert manifest.unseen_eval_shares == {"user_id": 0.0, "ad_id": 1.0, "hour": 1.0, "weekday": 1.0}
    assert set(manifest.mostly_unseen_features) == {"ad_id", "hour", "weekday"}  # above max_unseen_share 0.5


def test_every_split_is_written_as_blocks_the_trainer_reads(tiny_run):
    """The training-ready blocks hold each split's examples once, counted per file in the manifest, and the trainer's
    reader gives exactly the examples the block format holds."""
    from components.train.input import InputOptions, block_dataset

    manifest, out = tiny_run
    assert manifest.block_layout is not None
    for split in ("train", "eval"):
        blocks = manifest.splits[split].blocks
        assert blocks is not None and blocks.examples == manifest.splits[split].examples
        assert all((out / name).stat().st_size == blocks.blocks_in(name) * manifest.block_layout.record_bytes
                   for name in blocks.files)
        options = InputOptions(batch_size=2, training=False, drop_remainder=False)
        read = sorted((int(f["hour"][i]), float(f["user_age"][i]), tuple(f["user_interests"][i].numpy().tolist()),
                       float(labels["engagement"][i][0]))
                      for f, labels in block_dataset(out, manifest, split, options) for i in range(len(f["hour"])))
        assert read == sorted((r["hour"], r["user_age"], tuple(r["user_interests"]), r["label_engagement"])
                              for r in read_blocks(out, manifest, split))
        assert not list((out / split).glob("part-*"))  # blocks only: no per-example TFRecords
    assert list((out / "raw_eval").glob("part-*.tfrecord.gz"))


def test_the_transform_graph_is_tf1_with_the_raw_spec_beside_it(tiny_run):
    """The default `preprocess.force_tf_compat_v1`: tf.Transform's TF1 graph (its `transform_signature`, no TF2
    function), and the raw parse spec written beside it (`metadata/`), which the serving export reads."""
    import tensorflow as tf

    from components.train.export import raw_feature_spec

    _, out = tiny_run
    saved = saved_model_pb2.SavedModel.FromString((out / "transform_fn" / "saved_model.pb").read_bytes())
    assert [list(graph.signature_def) for graph in saved.meta_graphs] == [["transform_signature"]]
    spec = raw_feature_spec(tft.TFTransformOutput(str(out)))
    assert spec == tft.TFTransformOutput(str(out)).raw_feature_spec()  # read from metadata/, not the graph
    assert spec == {
        "timestamp_ms": tf.io.FixedLenFeature([], tf.int64), "user_id": tf.io.FixedLenFeature([], tf.string),
        "ad_id": tf.io.FixedLenFeature([], tf.string), "user_interests": tf.io.VarLenFeature(tf.string),
        "user_age": tf.io.FixedLenFeature([], tf.float32),
        "label_engagement": tf.io.FixedLenFeature([], tf.float32),
        "label_conversion": tf.io.FixedLenFeature([], tf.float32),
    }


def test_the_graphs_inputs_are_found_as_tf_transform_finds_them(tiny_run):
    """On the transform graph the step wrote, loaded as tf.Transform's `Transform` loads it: the inputs its outputs
    need (`tft_dependencies.dependent_inputs`, in use) are tf.Transform's own answer, and per output only its own."""
    import tensorflow as tf
    from tensorflow_transform.saved import saved_transform_io

    from components.preprocess.tft_dependencies import _TFT_OWN, dependent_inputs

    _, out = tiny_run
    with tf.compat.v1.Graph().as_default() as graph:
        inputs, outputs = saved_transform_io.partially_apply_saved_transform_internal(str(out / "transform_fn"), {})
        fetches = [outputs[key] for key in sorted(outputs)]
        assert list(dependent_inputs(graph, inputs, fetches)) == list(_TFT_OWN(graph, inputs, fetches))
        assert dependent_inputs(graph, inputs, [outputs["label_conversion"]]) == {
            "label_conversion": inputs["label_conversion"]}
        assert list(dependent_inputs(graph, inputs, [outputs["user_interests"]])) == ["user_interests"]
