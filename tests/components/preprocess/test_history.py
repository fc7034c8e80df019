"""History features: counts, clicks and smoothed rates per id from earlier examples only — never an example's own
label, nor one at the same or a later time, nor one whose attribution window was still open."""

from __future__ import annotations

import copy
import math
import random
from collections import defaultdict
from datetime import datetime

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from components.contracts.manifest import Manifest
from components.preprocess import history
from components.preprocess.history import AddHistoryFeatures, history_key, no_history, with_history
from components.preprocess.parse import MISSING_TOKEN
from components.preprocess.run import preprocess
from components.preprocess.stages import SplitByTime
from components.train.input import InputOptions, make_dataset
from configs import ConfigError, load_config
from configs.features import NEVER_SEEN_SECONDS, HistoryFeature
from configs.logs import TaskConfig

HOUR = 3_600_000
DAY_1 = 1767225600000  # 2026-01-01T00:00:00Z: the split works on UTC days
IN_MEMORY = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
LABEL = "label_click"
USER = HistoryFeature(name="user_history", ids=["user_id"], windows_hours=[1, 24], smoothing_prior=10.0,
                      prior_rate=0.01)
PAIR = HistoryFeature(name="user_ad_history", ids=["user_id", "ad_id"], windows_hours=[48])
TASK = TaskConfig(name="click", event_type="click", attribution_window_seconds=3600)


def example(i, hours, label, user="u1", ad="a1"):
    return {"impression_id": f"imp-{i}", "timestamp_ms": int(hours * HOUR), "user_id": user, "ad_id": ad,
            LABEL: float(label)}


def by_id(rows):
    return {row["impression_id"]: row for row in rows}


def all_history(examples, feature=USER):
    """The pure computation over every id, as the Beam transform groups it (the logs start at the first example)."""
    log_start = min(e["timestamp_ms"] for e in examples)
    groups = defaultdict(list)
    out = []
    for e in examples:
        key = history_key(e, feature)
        if key is None:
            out.append({**e, **no_history(feature)})
        else:
            groups[key].append(e)
    for rows in groups.values():
        out += with_history(rows, feature, LABEL, TASK.attribution_window_seconds * 1000, log_start)
    return by_id(out)


def history_columns(row, feature=USER):
    return {name: row[name] for name in feature.column_names()}


def test_counts_clicks_and_rates_come_from_earlier_examples_whose_label_was_known():
    rows = all_history([example(0, 0.0, 1), example(1, 0.5, 0), example(2, 2.0, 1), example(3, 2.0, 0),
                        example(4, 25.0, 0)], USER.model_copy(update={"censored_windows": "keep"}))
    first = rows["imp-0"]
    assert first["user_history_impressions_24h"] == 0 and first["user_history_rate_24h"] == pytest.approx(0.01)
    assert first["user_history_seconds_since_previous"] == NEVER_SEEN_SECONDS
    half = rows["imp-1"]  # 0 h is 30 min earlier, but its 1 h attribution window is still open at 0:30
    assert half["user_history_impressions_1h"] == 1 and half["user_history_clicks_1h"] == 0
    assert half["user_history_rate_1h"] == pytest.approx(0.01) and half["user_history_seconds_since_previous"] == 1800
    two = rows["imp-2"]  # at 2:00: 0:00 and 0:30 are in the 24 h window and matured; the 1 h window is empty
    assert two["user_history_impressions_1h"] == 0 and two["user_history_impressions_24h"] == 2
    assert two["user_history_clicks_24h"] == 1
    assert two["user_history_rate_24h"] == pytest.approx((1 + 10 * 0.01) / (2 + 10))
    assert history_columns(rows["imp-3"]) == history_columns(two)  # the same instant: neither sees the other
    late = rows["imp-4"]  # 25 h: the 24 h window starts at 1:00, so only the two at 2:00 fall in it
    assert late["user_history_impressions_24h"] == 2 and late["user_history_clicks_24h"] == 1
    assert late["user_history_seconds_since_previous"] == 23 * 3600


def test_a_window_reaching_back_before_the_logs_is_scaled_to_the_counts_a_full_window_holds():
    """The logs start at 0:00: at 6:00 a 24 h window covers 6 h of them, so its counts are scaled by 4 (the rate, a
    ratio, is not); from 24:00 on the window is covered and its counts are as they are; within the first hour the
    scale is at most the window in hours."""
    log = [example(0, 0.0, 0, user="u0"), example(1, 1.0, 1), example(2, 2.0, 0), example(3, 6.0, 0),
           example(4, 30.0, 0), example(5, 0.5, 0)]
    scaled, kept = all_history(log), all_history(log, USER.model_copy(update={"censored_windows": "keep"}))
    at_six, at_six_kept = scaled["imp-3"], kept["imp-3"]
    assert at_six_kept["user_history_impressions_24h"] == 3 and at_six_kept["user_history_clicks_24h"] == 1
    assert at_six["user_history_impressions_24h"] == 3 * 4 and at_six["user_history_clicks_24h"] == 1 * 4
    assert at_six["user_history_rate_24h"] == at_six_kept["user_history_rate_24h"]
    assert at_six["user_history_impressions_1h"] == at_six_kept["user_history_impressions_1h"]  # 6 h in: covered
    assert history_columns(scaled["imp-4"]) == history_columns(kept["imp-4"])  # 30 h in: every window covered
    assert scaled["imp-1"]["user_history_impressions_24h"] == 24 * kept["imp-1"]["user_history_impressions_24h"]


def random_log(seed=0, days=3, per_day=300):
    rng = random.Random(seed)
    return [example(i, day * 24 + rng.random() * 24, rng.random() < 0.2, user=f"u{rng.randrange(20)}",
                    ad=f"a{rng.randrange(5)}")
            for day in range(days) for i in [day * per_day + k for k in range(per_day)]]


@pytest.mark.parametrize("feature", [USER, PAIR], ids=["user", "user-ad pair"])
def test_shuffling_labels_within_a_day_leaves_every_earlier_examples_history_unchanged(feature):
    log = random_log()
    before = all_history(log, feature)
    shuffled = copy.deepcopy(log)
    last_day = [e for e in shuffled if e["timestamp_ms"] >= 48 * HOUR]
    labels = [e[LABEL] for e in last_day]
    random.Random(1).shuffle(labels)
    for e, label in zip(last_day, labels):
        e[LABEL] = label
    after = all_history(shuffled, feature)
    earlier = [i for i, row in before.items() if row["timestamp_ms"] < 48 * HOUR]
    assert len(earlier) == 600
    assert all(history_columns(before[i], feature) == history_columns(after[i], feature) for i in earlier)
    changed = [i for i in before if history_columns(before[i], feature) != history_columns(after[i], feature)]
    assert changed  # later examples of the day do see the shuffled labels: the test can fail


def test_flipping_an_examples_own_label_never_changes_its_own_features():
    log = random_log(seed=2, days=2, per_day=150)
    before = all_history(log)
    for index in range(0, len(log), 7):
        flipped = copy.deepcopy(log)
        flipped[index][LABEL] = 1.0 - flipped[index][LABEL]
        own = flipped[index]["impression_id"]
        assert history_columns(all_history(flipped)[own]) == history_columns(before[own])


def batches(rows, size=25):
    """The rows as record batches of `size` rows (several parts per partition, as in a real job)."""
    return [pa.RecordBatch.from_pylist(rows[start:start + size]) for start in range(0, len(rows), size)]


@pytest.mark.parametrize("feature", [USER, USER.model_copy(update={"censored_windows": "keep"}), PAIR,
                                     PAIR.model_copy(update={"windows_hours": [0.5, 1.5, 30]})],
                         ids=["user", "user, censored kept", "user-ad pair", "fractional windows"])
def test_a_batch_gets_each_ids_columns_to_the_last_bit(feature):
    """`history.history_columns` (every id at once) equals `with_history` id by id, float for float: ties in time,
    ids with one example, a missing id and a null one included."""
    log = random_log(seed=5, days=3, per_day=120)
    log += [{**log[7], "impression_id": "tie"}, example(998, 30.0, 1, user=MISSING_TOKEN), example(999, 31.0, 0)]
    log[-1]["user_id"] = None
    expected = all_history([dict(e, user_id=e["user_id"] or MISSING_TOKEN) for e in log], feature)
    batch = pa.RecordBatch.from_pylist(log)
    columns = history.history_columns(batch, feature, LABEL, TASK.attribution_window_seconds * 1000,
                                      min(e["timestamp_ms"] for e in log))
    for row, impression_id in enumerate(batch.column("impression_id").to_pylist()):
        assert {name: values[row] for name, values in columns.items()} == history_columns(
            expected[impression_id], feature), impression_id


def test_the_beam_transform_computes_the_same_columns_and_gives_a_missing_id_no_history():
    log = random_log(seed=3, days=2, per_day=40) + [example(999, 30.0, 1, user=MISSING_TOKEN)]
    expected = all_history(log)
    pair_expected = all_history(list(expected.values()), PAIR)
    schema = pa.RecordBatch.from_pylist(log).schema
    with TestPipeline() as pipeline:
        out = (pipeline | beam.Create(batches(log)) | AddHistoryFeatures([USER, PAIR], [TASK], schema, partitions=3)
               | beam.FlatMap(lambda batch: batch.to_pylist())
               | beam.Map(lambda row: (row["impression_id"], sorted(row.items()))))
        assert_that(out, equal_to([(i, sorted(row.items())) for i, row in pair_expected.items()]))
    assert expected["imp-999"]["user_history_impressions_1h"] == 0.0
    assert expected["imp-999"]["user_history_seconds_since_previous"] == NEVER_SEEN_SECONDS


@pytest.mark.parametrize("override, field", [
    ("features.9={name: h, kind: history, ids: [user_name]}", "features.9.ids"),
    ("features.9={name: h, kind: history, ids: [user_id], windows_hours: [200]}", "features.9.windows_hours"),
    ("features.9={name: h, kind: history, ids: [user_id], smoothing_prior: 0}", "features.9.smoothing_prior"),
    ("features.9={name: h, kind: history, ids: [user_id], windows_hours: [-1]}", "features.9.windows_hours"),
    # a window of neither whole hours nor whole minutes: its columns could not be named (not `name` of a column)
    ("features.9={name: h, kind: history, ids: [user_id], windows_hours: [0.01, 24]}", "features.9.windows_hours"),
    ("features.9={name: h, kind: history, ids: [user_id], task: purchase}", "features.9.task"),
])
def test_a_bad_history_feature_fails_at_load_naming_the_field(override, field):
    field_pattern = field.replace(".", r"\.").replace(r"features\.9\.", r"features\.9\.(history\.)?")
    with pytest.raises(ConfigError, match=field_pattern):
        load_config(overrides=[override])


def test_a_window_is_checked_against_the_lookback_when_one_is_set():
    with pytest.raises(ConfigError, match=r"features\.9\.windows_hours: a window of 72 h is longer than the logs "
                                          r"read \(logs\.lookback_days 2 = 48 h\)"):
        load_config(overrides=["logs.lookback_days=2",
                               "features.9={name: h, kind: history, ids: [user_id], windows_hours: [72]}"])
    config = load_config(overrides=["features.9={name: h, kind: history, ids: [user_id, ad_id], windows_hours: [1, 72]}"])
    assert config.features[9].column_names()[0] == "h_impressions_1h"


def test_history_columns_are_bucketed_by_default_and_numbers_with_encoding_log():
    bucketed = load_config(overrides=["features.9={name: h, kind: history, ids: [user_id], windows_hours: [24]}"])
    logged = load_config(overrides=["features.9={name: h, kind: history, ids: [user_id], windows_hours: [24], "
                                    "encoding: log}"])
    inputs, numbers = bucketed.features[9].numeric_inputs(), logged.features[9].numeric_inputs()
    assert [f.name for f in inputs] == [f.name for f in numbers] == [
        "h_impressions_24h", "h_clicks_24h", "h_rate_24h", "h_seconds_since_previous"]
    assert {(f.normalization, f.buckets) for f in inputs} == {("quantile_buckets", 16)}
    assert [f.normalization for f in numbers] == ["log1p", "log1p", "log_ratio", "log1p_zscore"]


def test_a_fractional_window_of_whole_minutes_is_named_in_minutes():
    config = load_config(overrides=["features.9={name: h, kind: history, ids: [user_id], windows_hours: [1.5, 24]}"])
    assert config.features[9].column_names()[:4] == ["h_impressions_90m", "h_clicks_90m", "h_rate_90m",
                                                     "h_impressions_24h"]


@pytest.mark.parametrize("burn_in_days, train_days", [(0, {0, 1}), (1, {1})])
def test_burn_in_days_leave_the_train_split_but_keep_feeding_the_history_of_later_examples(burn_in_days, train_days):
    """split.history_burn_in_days: the first days' examples are in no split, and every later example keeps the
    history features it has without burn-in, computed over every day read (history comes before the split)."""
    log = [{**e, "timestamp_ms": e["timestamp_ms"] + DAY_1} for e in random_log(seed=4, days=3, per_day=40)]
    expected = all_history(list(all_history(log).values()), PAIR)  # over every day, burn-in days included

    def day(row):
        return (row["timestamp_ms"] - DAY_1) // (24 * HOUR)

    def rows_of(days):
        return [(i, sorted(row.items())) for i, row in expected.items() if day(row) in days]

    assert any(row["user_history_impressions_24h"] > 0 for _, row in expected.items() if day(row) == 1)
    assert len(rows_of(train_days)) == 40 * len(train_days)
    schema = pa.RecordBatch.from_pylist(log).schema
    with TestPipeline(argv=IN_MEMORY) as pipeline:
        splits = (pipeline | beam.Create(batches(log)) | AddHistoryFeatures([USER, PAIR], [TASK], schema, partitions=2)
                  | SplitByTime(eval_days=1, calibration_days=1, burn_in_days=burn_in_days))
        for split, days in (("train", train_days), ("eval", {2}), ("calibration", {1})):
            rows = (splits.by_split[split] | f"Examples{split}" >> beam.FlatMap(lambda batch: batch.to_pylist())
                    | f"Rows{split}" >> beam.Map(lambda row: (row["impression_id"], sorted(row.items()))))
            assert_that(rows, equal_to(rows_of(days)), label=f"Expected{split}")


@pytest.mark.parametrize("overrides, message", [
    (["split.history_burn_in_days=3"], "split.history_burn_in_days: 3 days of burn-in and split.eval_days 1 leave no "
     "train day in the 4 days read (logs.synthetic.days 4)"),
    (["split.history_burn_in_days=1", "logs.lookback_days=2"], "split.history_burn_in_days: 1 days of burn-in and "
     "split.eval_days 1 leave no train day in the 2 days read (logs.lookback_days 2)"),
    (["split.history_burn_in_days=-1"], "split.history_burn_in_days: Input should be greater than or equal to 0"),
    (["split.history_burn_in_days=2", "split.calibration_days=2", "training.calibration=intercept",
      "training.calibration_data=latest_train_days"], "split.calibration_days: 2 days, but the synthetic logs leave 1 "
     "train days"),
])
def test_a_burn_in_that_leaves_no_train_day_fails_at_load_naming_the_field(overrides, message):
    with pytest.raises(ConfigError) as error:
        load_config(overrides=overrides)
    assert message in str(error.value)
    assert load_config(overrides=["split.history_burn_in_days=2"]).split.history_burn_in_days == 2


@pytest.mark.long  # a whole preprocess with history features (~1-3 min); benchmarks/quality.py --history-variants runs it too
def test_preprocess_writes_history_columns_as_numeric_inputs(tmp_path, config_for, log_writer):
    rows = [{"impression_id": f"imp-{i}", "timestamp": f"2026-01-0{1 + i // 6}T{10 + i % 6:02d}:00:00.000Z",
             "user_id": f"u{i % 2}", "ad_id": "a1"} for i in range(12)]
    events = [{"event_id": f"ev-{i}", "impression_id": f"imp-{i}", "event_type": "swipe",
               "timestamp": f"2026-01-0{1 + i // 6}T{10 + i % 6:02d}:10:00.000Z"} for i in range(0, 12, 3)]
    config = config_for(
        logs={"source": "files", "impressions": log_writer(tmp_path / "imp.jsonl", rows),
              "engagements": log_writer(tmp_path / "ev.jsonl", events)},
        tasks=[{"name": "engagement", "event_type": "swipe", "attribution_window_seconds": 3600}],
        features=[{"name": "user_id", "kind": "categorical", "encoding": "hash", "hash_buckets": 10},
                  {"name": "ad_id", "kind": "categorical"},
                  {"name": "user_recent", "kind": "history", "ids": ["user_id"], "windows_hours": [24],
                   "encoding": "log"}],
    )
    manifest = preprocess(config, None, str(tmp_path / "out"))
    assert Manifest.read(tmp_path / "out") == manifest
    numeric = {f.name for f in manifest.features if f.kind == "numeric"}
    assert numeric == {"user_recent_impressions_24h", "user_recent_clicks_24h", "user_recent_rate_24h",
                       "user_recent_seconds_since_previous"}
    assert manifest.feature_spec["user_recent_rate_24h"].dtype == "float32"
    # The model inputs: counts as log1p, the rate as its log-ratio to the prior (0 without history), never a
    # z-score that would blow the rare ids with clicks up to tens of standard deviations.
    feature = config.features[2]
    raw = [{"impression_id": r["impression_id"], "timestamp_ms": int(datetime.fromisoformat(
        r["timestamp"].replace("Z", "+00:00")).timestamp() * 1000), "user_id": r["user_id"], "ad_id": "a1",
        "label_engagement": float(i % 3 == 0)} for i, r in enumerate(rows)]
    log_start = min(e["timestamp_ms"] for e in raw)  # the 24 h windows of the first day's examples are scaled
    expected = [row for user in ("u0", "u1") for row in with_history(
        [e for e in raw if e["user_id"] == user], feature, "label_engagement", 3_600_000, log_start)]
    expected_inputs = sorted(
        (round(math.log1p(e["user_recent_impressions_24h"]), 5), round(math.log1p(e["user_recent_clicks_24h"]), 5),
         round(math.log(e["user_recent_rate_24h"] / feature.prior_rate), 5)) for e in expected)
    transformed = []
    for split in ("train", "eval"):
        options = InputOptions(batch_size=64, training=False, drop_remainder=False)
        for batch, _ in make_dataset(str(tmp_path / "out"), manifest, split, options):
            transformed += zip(*(batch[f"user_recent_{what}_24h"].numpy().reshape(-1).round(5).tolist()
                                 for what in ("impressions", "clicks", "rate")))
    assert len(transformed) == len(expected_inputs)
    for got, want in zip(sorted(transformed), expected_inputs):
        assert got == pytest.approx(want, abs=1e-4)
    assert (0.0, 0.0, 0.0) in transformed  # an id's first impression: no history, every input 0
    assert max(abs(v) for row in transformed for v in row) < 5
