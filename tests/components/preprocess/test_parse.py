"""Parsing never loses a record: every input is exactly one valid record or one dead letter (hypothesis)."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.preprocess.parse import (
    EngagementParser,
    FeatureField,
    ImpressionParser,
    InvalidRecord,
    OutcomeLabel,
    RecordDecoder,
    TimestampParser,
    parse_stream,
)

FEATURES = (
    FeatureField("ad_id", "categorical", "ad_id"),
    FeatureField("user_age", "numeric", "user_age"),
    FeatureField("user_interests", "categorical_list", "user_interests"),
)
IMPRESSIONS = ImpressionParser(RecordDecoder("jsonl"), TimestampParser(), FEATURES)
ENGAGEMENTS = EngagementParser(RecordDecoder("jsonl"), TimestampParser(), frozenset({"swipe", "install"}))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=6,
)
well_formed = st.fixed_dictionaries({
    "impression_id": st.text(alphabet="abcxyz019-_", min_size=1, max_size=6),
    "timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01 10:00:00", "2026-01-02T01:02:03.004+02:00"]),
    "ad_id": st.text(max_size=5) | st.integers(),
    "user_age": st.integers(0, 99) | st.floats(allow_nan=False, allow_infinity=False),
    "user_interests": st.lists(st.text(min_size=1, max_size=4), max_size=4),
})
mangled = st.dictionaries(
    st.sampled_from(["impression_id", "timestamp", "ad_id", "user_age", "user_interests", "event_type", "other"]),
    json_values, max_size=6,
)
raw_lines = st.one_of(
    well_formed.map(json.dumps),
    mangled.map(json.dumps),
    well_formed.map(lambda r: json.dumps(r)[: max(1, len(json.dumps(r)) // 2)]),  # truncated
    st.text(max_size=30),
    json_values.map(json.dumps),
)


@settings(max_examples=300, deadline=None)
@given(raw_lines)
def test_each_record_is_valid_or_dead_with_a_reason(line):
    for parser in (IMPRESSIONS, ENGAGEMENTS):
        try:
            record = parser(line)
        except InvalidRecord as error:
            assert error.reason
        else:
            assert isinstance(record["timestamp_ms"], int)


@settings(max_examples=300, deadline=None)
@given(well_formed)
def test_well_formed_impressions_are_valid(record):
    parsed = IMPRESSIONS(json.dumps(record))
    assert parsed["impression_id"] == record["impression_id"]
    assert len(parsed["user_interests"]) == len([t for t in record["user_interests"] if t.strip()])


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(raw_lines, min_size=1, max_size=40))
def test_beam_parse_valid_plus_dead_letter_equals_input(lines):
    with TestPipeline(argv=["--direct_running_mode=in_memory", "--direct_num_workers=1"]) as p:
        raw = p | beam.Create(lines)
        valid, dead, _ = parse_stream(raw, "impressions", IMPRESSIONS)
        recovered = (
            (valid | "Kept" >> beam.Map(lambda r: "valid"), dead | "Dead" >> beam.Map(lambda d: d["raw"]))
            | beam.Flatten()
        )
        expected_valid = []
        expected_dead = []
        for line in lines:
            try:
                IMPRESSIONS(line)
                expected_valid.append("valid")
            except InvalidRecord:
                expected_dead.append(line)
        assert_that(recovered, equal_to(expected_valid + expected_dead))


def test_reasons_name_what_is_wrong():
    def reason(parser, line):
        try:
            parser(line)
        except InvalidRecord as error:
            return error.reason
        return None

    good = {"impression_id": "i", "timestamp": "2026-01-01T00:00:00Z", "ad_id": "a", "user_age": 3}
    assert reason(IMPRESSIONS, json.dumps(good)) is None
    assert reason(IMPRESSIONS, "{") == "bad_json"
    assert reason(IMPRESSIONS, "[1]") == "not_an_object"
    assert reason(IMPRESSIONS, json.dumps({**good, "impression_id": None})) == "missing_field:impression_id"
    assert reason(IMPRESSIONS, json.dumps({**good, "timestamp": "yesterday"})) == "bad_timestamp"
    assert reason(IMPRESSIONS, json.dumps({**good, "user_age": "forty"})) == "wrong_type:user_age"
    assert reason(IMPRESSIONS, json.dumps({**good, "ad_id": {"x": 1}})) == "wrong_type:ad_id"
    event = {"impression_id": "i", "event_type": "teleport", "timestamp": "2026-01-01T00:00:00Z"}
    assert reason(ENGAGEMENTS, json.dumps(event)) == "unknown_event_type"
    assert TimestampParser("epoch_seconds")("1.5") == 1500
    for unrepresentable in ("9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"):
        assert reason(IMPRESSIONS, json.dumps({**good, "timestamp": unrepresentable})) == "bad_timestamp"
    for epoch_millis in (1e300, -1e17):
        try:
            TimestampParser("epoch_millis")(epoch_millis)
            raise AssertionError(f"{epoch_millis} parsed")
        except InvalidRecord as error:
            assert error.reason == "bad_timestamp"
    assert TimestampParser("%d/%m/%Y %H:%M")("02/01/1970 00:00") == 86_400_000
    missing = IMPRESSIONS(json.dumps({**good, "ad_id": "", "user_age": None}))
    assert missing["ad_id"] == "__missing__" and missing["_missing"] == ["ad_id", "user_age", "user_interests"]


def test_non_finite_and_out_of_domain_values_are_dead_letters_with_their_reason():
    def reason(parser, record):
        try:
            parser(record)
        except InvalidRecord as error:
            return error.reason
        return None

    good = {"impression_id": "i", "timestamp": "2026-01-01T00:00:00Z", "ad_id": "a", "user_age": 3}
    for age in ("nan", "inf", "-Infinity", float("nan"), float("inf"), 10**400):
        assert reason(IMPRESSIONS, {**good, "user_age": age}) == "non_finite:user_age"
    assert "user_age" in IMPRESSIONS({**good, "user_age": None})["_missing"]  # absent is missing, not invalid
    truthy = ImpressionParser(RecordDecoder("jsonl"), TimestampParser(), FEATURES, id_required=False,
                              outcome_labels=(OutcomeLabel("label_click", "click", "truthy"),))
    present = ImpressionParser(RecordDecoder("jsonl"), TimestampParser(), FEATURES, id_required=False,
                               outcome_labels=(OutcomeLabel("label_click", "click", "present"),))
    for label in ("nan", "NaN", " inf ", "-inf", float("nan"), float("-inf")):
        assert reason(truthy, {**good, "click": label}) == "non_finite_label:click"
        assert reason(present, {**good, "click": label}) == "non_finite_label:click"
    assert reason(truthy, {**good, "click": -1}) == "negative_label:click"
    assert reason(truthy, {**good, "click": "-0.5"}) == "negative_label:click"
    assert reason(truthy, {**good, "click": "maybe"}) == "wrong_type:click"
    assert reason(truthy, {**good, "click": [1]}) == "wrong_type:click"
    values = {label: truthy({**good, "click": label})["label_click"] for label in (0, 1, 2.5, "yes", "0", "", "3")}
    assert values == {0: 0.0, 1: 1.0, 2.5: 1.0, "yes": 1.0, "0": 0.0, "": 0.0, "3": 1.0}
    assert present({**good, "click": "2026-01-01 10:00:00"})["label_click"] == 1.0
    assert present({**good, "click": None})["label_click"] == 0.0
