"""Silent garbage fails preprocess or is reported: a task with one label class in a split, a configured column
absent from the input's header, a feature absent from most examples."""

from __future__ import annotations

import logging

import pytest

from components.preprocess.input_columns import MissingInputColumns
from components.preprocess.run import OneClassLabels, check_configured_columns, preprocess
from components.report.findings import missing_features

DAYS = ("2026-01-01", "2026-01-02", "2026-01-03")
CHECKED = {"direct_running_mode": "in_memory", "direct_num_workers": 1, "output_shards": 1,
           "max_invalid_fraction": 0.5}


def impressions(per_day: int = 4) -> list[dict]:
    return [{"impression_id": f"{day}-{i}", "timestamp": f"{day}T1{i}:00:00Z", "ad_id": f"a{i % 2}"}
            for day in DAYS for i in range(per_day)]


def swipes() -> list[dict]:
    """A swipe after the first impression of every day: both splits have positives and negatives."""
    return [{"impression_id": f"{day}-0", "event_type": "swipe", "timestamp": f"{day}T10:10:00Z"} for day in DAYS]


def two_stream_config(config_for, tmp_path, log_writer, tasks, **preprocess_settings):
    imps = log_writer(tmp_path / "impressions.jsonl", impressions())
    evs = log_writer(tmp_path / "engagements.jsonl", swipes())
    return config_for(logs={"source": "files", "impressions": imps, "engagements": evs}, tasks=tasks,
                      features=[{"name": "ad_id", "kind": "categorical", "oov_buckets": 1}],
                      preprocess=CHECKED | preprocess_settings)


def test_a_declared_event_that_never_occurs_fails_naming_the_task_and_split(tmp_path, config_for, log_writer):
    config = two_stream_config(config_for, tmp_path, log_writer, [
        {"name": "engagement", "event_type": "swipe"}, {"name": "purchase", "event_type": "purchase"},
    ])
    with pytest.raises(OneClassLabels, match=(
        r"^task 'purchase': the train split has 0 positive labels of 8 examples, fewer than "
        r"preprocess\.min_positives_per_task 1 \(label: event type 'purchase' within 3600 s of the impression\)"
    )):
        preprocess(config, None, str(tmp_path / "out"))


def test_fewer_positives_than_the_configured_minimum_fail(tmp_path, config_for, log_writer):
    config = two_stream_config(config_for, tmp_path, log_writer, [{"name": "engagement", "event_type": "swipe"}],
                               min_positives_per_task=2)
    with pytest.raises(OneClassLabels, match=r"^task 'engagement': the eval split has 1 positive labels of 4 examples, "
                                             r"fewer than preprocess\.min_positives_per_task 2"):
        preprocess(config, None, str(tmp_path / "out"))


def test_an_all_positive_split_fails_on_negatives(tmp_path, config_for, log_writer):
    imps = log_writer(tmp_path / "impressions.jsonl", impressions(per_day=1))
    evs = log_writer(tmp_path / "engagements.jsonl", swipes())
    config = config_for(logs={"source": "files", "impressions": imps, "engagements": evs},
                        tasks=[{"name": "engagement", "event_type": "swipe"}],
                        features=[{"name": "ad_id", "kind": "categorical", "oov_buckets": 1}], preprocess=CHECKED)
    with pytest.raises(OneClassLabels, match=r"task 'engagement': the train split has 0 negative labels of 2 examples, "
                                             r"fewer than preprocess\.min_negatives_per_task 1"):
        preprocess(config, None, str(tmp_path / "out"))


def test_both_classes_in_both_splits_pass(tmp_path, config_for, log_writer):
    config = two_stream_config(config_for, tmp_path, log_writer, [{"name": "engagement", "event_type": "swipe"}])
    manifest = preprocess(config, None, str(tmp_path / "out"))
    assert manifest.splits["train"].positives == {"engagement": 2}
    assert manifest.splits["eval"].positives == {"engagement": 1}


def click_csv(path, header: str) -> str:
    rows = [f"{100 + i},{i % 3},2026-01-0{1 + i % 3} 1{i % 10}:00:00,{'2026-01-01 23:00:00' if i % 2 else ''}"
            for i in range(12)]
    path.write_text("\n".join([header, *rows]) + "\n")
    return str(path)


def click_config(config_for, csv_path, features=None):
    return config_for(
        logs={"source": "files", "label_mode": "outcome", "format": "csv", "impressions": csv_path,
              "impression_fields": {"timestamp": "click_time"}, "timestamp_format": "%Y-%m-%d %H:%M:%S"},
        tasks=[{"name": "download", "label_column": "attributed_time", "positive_when": "present"}],
        features=features or [{"name": "ip", "kind": "categorical", "encoding": "hash", "hash_buckets": 10},
                              {"name": "app", "kind": "categorical", "oov_buckets": 1}],
        preprocess=CHECKED,
    )


def test_a_misspelt_csv_column_fails_at_the_start_naming_it_and_the_columns_present(tmp_path, config_for):
    csv_path = click_csv(tmp_path / "clicks.csv", "..ip,app,click_time,attributed_time")
    out = tmp_path / "out"
    with pytest.raises(MissingInputColumns) as error:
        preprocess(click_config(config_for, csv_path), None, str(out))
    message = str(error.value)
    assert message.startswith(f"impressions: {csv_path} has no column 'ip' (configured by features.0 (ip));")
    assert "its columns are: '..ip', 'app', 'click_time', 'attributed_time'" in message
    assert "logs.impression_fields" in message
    assert not (out / "stats").exists()  # failed before the Beam job started


HISTORY_AND_TIME = [{"name": "ip", "kind": "categorical", "encoding": "hash", "hash_buckets": 10},
                    {"name": "app", "kind": "categorical", "oov_buckets": 1},
                    {"name": "hour", "kind": "time", "part": "hour_of_day"},
                    {"name": "ip_history", "kind": "history", "ids": ["ip"], "windows_hours": [24]}]


@pytest.mark.parametrize("file_format", ["csv", "parquet"])
def test_derived_features_are_no_columns_of_the_file_but_their_ids_are(tmp_path, config_for, file_format):
    """A history feature (and a time part) is computed by preprocess: a CSV header or Parquet schema without a
    column of its name passes the check; the ids it is computed over are columns, checked as such."""
    csv_path = click_csv(tmp_path / "clicks.csv", "ip,app,click_time,attributed_time")
    path = csv_path
    if file_format == "parquet":
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        path = str(tmp_path / "clicks.parquet")
        pq.write_table(pacsv.read_csv(csv_path), path)

    def config(features):
        raw = click_config(config_for, path, features)
        return raw.model_copy(update={"logs": raw.logs.model_copy(update={"format": file_format})})

    check_configured_columns(config(HISTORY_AND_TIME), None)
    without_ip = [{"name": "ip_history", "kind": "history", "ids": ["app"]}, *HISTORY_AND_TIME[1:3]]
    check_configured_columns(config(without_ip), None)
    renamed = [{**HISTORY_AND_TIME[0], "name": "user"}, *HISTORY_AND_TIME[1:3],
               {**HISTORY_AND_TIME[3], "ids": ["user"]}]
    with pytest.raises(MissingInputColumns, match=r"has no column 'user' \(configured by features\.0 \(user\)\);"):
        check_configured_columns(config(renamed), None)


def test_a_missing_label_or_timestamp_column_is_named(tmp_path, config_for):
    csv_path = click_csv(tmp_path / "clicks.csv", "ip,app,clicked_at,attributed")
    with pytest.raises(MissingInputColumns, match=(
        r"has no column 'click_time' \(configured by logs\.impression_fields\.timestamp\); "
        r"'attributed_time' \(configured by tasks\.0\.label_column \(download\)\)"
    )):
        preprocess(click_config(config_for, csv_path), None, str(tmp_path / "out"))


def test_a_mostly_absent_feature_is_in_the_manifest_and_printed_as_a_warning(tmp_path, config_for, caplog):
    csv_path = click_csv(tmp_path / "clicks.csv", "ip,app,click_time,attributed_time")
    text = (tmp_path / "clicks.csv").read_text().splitlines()
    # `app` empty in 9 of 12 rows: 75% absent, above the default share of 50%
    rows = [text[0]] + [(row if i % 4 == 0 else row.replace(f",{i % 3},", ",,", 1)) for i, row in enumerate(text[1:])]
    (tmp_path / "clicks.csv").write_text("\n".join(rows) + "\n")
    manifest = preprocess(click_config(config_for, csv_path), None, str(tmp_path / "out"))

    assert manifest.mostly_missing_features == {"app": pytest.approx(0.75)}
    assert any(record.levelno == logging.WARNING and record.getMessage().startswith(
        "feature 'app' is absent from 75.0% of examples (above preprocess.max_missing_share 50%)")
        for record in caplog.records)
    assert missing_features(manifest.mostly_missing_features) == [
        "Feature 'app' is absent from 75.0% of examples: check its column in the logs "
        "(logs.impression_fields maps names that differ)."
    ]
