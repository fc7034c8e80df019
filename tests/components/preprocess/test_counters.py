"""The preprocess counters as typed records: summed per `Count` by Beam, read back as `PreprocessCounts`; and
the manifest's typed window and feature spec, read from manifests the previous version wrote."""

from __future__ import annotations

import json

import apache_beam as beam
import pytest

from components.contracts.manifest import ImpressionWindow, Manifest, TransformedFeatureSpec
from components.preprocess.counters import Count, PreprocessCounts, WriteCounters, count_dead_letter, read_counters


def test_counters_are_summed_per_count_and_read_back_typed(tmp_path):
    emitted = [(count.key, n) for count, n in [
        (Count("records_read", "impressions"), 6), (Count("records_read", "engagements"), 7),
        (Count("join", subject="duplicate_impressions"), 1), (Count("join", subject="duplicate_impressions"), 2),
        (Count("split_examples", "train"), 3), (Count("split_positives", "train", "label_click"), 1),
        (Count("split_missing", "eval", "ad_id"), 2),
    ]] + [
        count_dead_letter({"stream": "impressions", "reason": "bad_json", "raw": "{"}),
        count_dead_letter({"stream": "impressions", "reason": "bad_json", "raw": "}"}),
        count_dead_letter({"stream": "engagements", "reason": "no_timestamp", "raw": "{}"}),
    ]
    with beam.Pipeline() as pipeline:
        _ = (pipeline | beam.Create(emitted),) | WriteCounters(str(tmp_path))
    counts = read_counters(str(tmp_path))

    assert counts.records_read() == {"impressions": 6, "engagements": 7}
    assert counts.join_outcomes() == {"duplicate_impressions": 3}
    assert counts.dead_letters() == {"impressions:bad_json": 2, "engagements:no_timestamp": 1}
    assert (counts.dead_letters_in("impressions"), counts.dead_letters_in("engagements")) == (2, 1)
    assert (counts.split_examples("train"), counts.split_examples("eval")) == (3, 0)
    assert counts.positives("train", "label_click") == 1 and counts.positives("eval", "label_click") == 0
    assert counts.missing("eval", "ad_id") == 2


def test_a_count_survives_its_beam_key():
    count = Count("dead_letters", "engagements", "unparsable:ValueError")
    assert Count.from_key(count.key) == count and isinstance(count.key, str)


def test_counts_never_emitted_are_zero():
    counts = PreprocessCounts({})
    assert counts.split_examples("train") == 0 and counts.records_read() == {} and counts.dead_letters() == {}


def test_a_manifest_of_the_previous_version_reads_into_typed_records(tmp_path):
    written_before = {
        "tasks": ["click"], "features": [], "splits": {},
        "feature_spec": {"ad_id": {"dtype": "int64", "shape": []}, "interests": {"dtype": "int64", "shape": [8]}},
        "window": {"start": "2026-03-08T00:00:00.000Z", "end": "2026-03-10T00:00:00.000Z"},
    }
    (tmp_path / "manifest.json").write_text(json.dumps(written_before))
    manifest = Manifest.read(tmp_path)
    assert manifest.window == ImpressionWindow(start="2026-03-08T00:00:00.000Z", end="2026-03-10T00:00:00.000Z")
    assert manifest.feature_spec["interests"] == TransformedFeatureSpec(dtype="int64", shape=[8])
    assert json.loads(manifest.model_dump_json())["window"] == written_before["window"]


def test_an_account_that_does_not_balance_fails_preprocess_naming_what_is_missing():
    from components.contracts.manifest import InputAccount, Manifest, SplitInfo
    from components.preprocess.run import InputNotAccounted, check_input_accounted

    balanced = dict(files=1, bytes=100, framing_bytes=10, blank_lines=1, blank_bytes=2, records=4, record_bytes=88,
                    parsed=3, parsed_bytes=80, dead_letters=1, dead_letter_bytes=8)
    split = SplitInfo(examples=1, label_rates={}, file_pattern="x")
    manifest = Manifest(tasks=[], features=[], splits={"train": split}, input={"impressions": InputAccount(**balanced)})
    check_input_accounted(manifest)
    from components.preprocess.manifest_markdown import manifest_markdown

    assert "| impressions | 1 | 100 | 10 | 1 (2) | 4 | 3 (80) | 1 (8) |" in manifest_markdown(manifest)
    lost = InputAccount(**balanced | {"parsed": 2, "parsed_bytes": 60})  # a record of 20 bytes vanished
    with pytest.raises(InputNotAccounted, match=r"^impressions: input lost between reading and parsing: "
                                                r"4 records read but 2 parsed \+ 1 dead letters; "
                                                r"88 record bytes read but 60 parsed \+ 8 dead-letter bytes"):
        check_input_accounted(manifest.model_copy(update={"input": {"impressions": lost}}))
    assert InputAccount(**balanced | {"bytes": 101}).problems() == [
        "1 of 101 bytes read are neither framing, blank lines nor records"]
