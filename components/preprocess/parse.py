"""Raw log record → typed record, or a dead letter carrying the raw record and the reason.

`ImpressionParser` and `EngagementParser` are plain callables (unit-testable without Beam); `ParseRecords`
runs one inside Beam with tagged outputs, so every record read leaves as exactly one valid record or one dead
letter, and says how many of each (and their bytes) it produced.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from components.logs.records import parse_timestamp
from components.preprocess.step_messages import ParseTally
from configs.logs import EVENT_TYPE, IMPRESSION_ID, TIMESTAMP

VALID = "valid"
DEAD_LETTER = "dead_letter"
OUTCOMES = "outcomes"
MISSING_TOKEN = "__missing__"
MISSING = "_missing"  # the record key listing the features whose value was absent
TIMESTAMP_MS = "timestamp_ms"
_FALSE = {"", "0", "false", "no", "n", "f", "0.0"}
_TRUE = {"1", "true", "yes", "y", "t", "1.0"}
_NON_FINITE_WORDS = {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
# Times whose day and the days around it are valid dates (date arithmetic on year 9999 overflows).
EARLIEST_MS = int((dt.datetime(1, 1, 8, tzinfo=dt.timezone.utc) - _EPOCH).total_seconds() * 1000)
LATEST_MS = int((dt.datetime(9999, 12, 24, tzinfo=dt.timezone.utc) - _EPOCH).total_seconds() * 1000)


class InvalidRecord(ValueError):
    """The record cannot become an example; `reason` is its dead-letter bucket."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class RecordDecoder:
    """Raw record (a JSON line or a CSV record as read, bytes or text, or a dict) → dict of source columns.
    A text record longer than `max_record_bytes` is `record_too_large` before it is decoded."""

    file_format: str = "jsonl"
    csv_columns: tuple[str, ...] = ()
    csv_delimiter: str = ","
    max_record_bytes: int | None = None

    def __call__(self, raw: Any) -> dict:
        if isinstance(raw, dict):
            return raw
        if self.max_record_bytes is not None and isinstance(raw, (bytes, str)) and len(raw) > self.max_record_bytes:
            raise InvalidRecord("record_too_large")
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidRecord("bad_encoding") from None
        if not isinstance(raw, str) or not raw.strip():
            raise InvalidRecord("empty_record")
        if self.file_format == "csv":
            return self._csv_row(raw)
        try:
            record = json.loads(raw)
        except ValueError:
            raise InvalidRecord("bad_json") from None
        if not isinstance(record, dict):
            raise InvalidRecord("not_an_object")
        return record

    def _csv_row(self, raw: str) -> dict:
        """One CSV record (line breaks only inside quoted fields) → {column: value or None}; `bad_csv_row:<what>`."""
        try:
            rows = list(csv.reader(io.StringIO(raw, newline=""), delimiter=self.csv_delimiter, strict=True))
        except csv.Error as error:
            detail = "unterminated quoted field" if "unexpected end of data" in str(error) else str(error)
            raise InvalidRecord(f"bad_csv_row:{detail}") from None
        if len(rows) != 1:
            raise InvalidRecord(f"bad_csv_row:{len(rows)} rows in one record (a line break outside quotes)")
        if len(rows[0]) != len(self.csv_columns):
            raise InvalidRecord(f"bad_csv_row:expected {len(self.csv_columns)} columns, got {len(rows[0])}")
        return {column: (value if value != "" else None) for column, value in zip(self.csv_columns, rows[0])}


@dataclass(frozen=True)
class TimestampParser:
    """rfc3339 | epoch_seconds | epoch_millis | a strptime pattern (naive times are UTC) → epoch ms, within
    years 1..9999 less a week on either side (plausibility relative to the data is `time_range`'s job)."""

    timestamp_format: str = "rfc3339"

    def __call__(self, value: Any) -> int:
        stamp = self._epoch_ms(value)
        if not EARLIEST_MS <= stamp <= LATEST_MS:
            raise InvalidRecord("bad_timestamp")
        return stamp

    def _epoch_ms(self, value: Any) -> int:
        try:
            if self.timestamp_format in ("epoch_seconds", "epoch_millis"):
                if isinstance(value, bool):
                    raise ValueError(value)
                number = float(value)
                if not math.isfinite(number):
                    raise ValueError(value)
                return int(round(number * (1000 if self.timestamp_format == "epoch_seconds" else 1)))
            if not isinstance(value, str):
                raise ValueError(value)
            if self.timestamp_format == "rfc3339":
                return parse_timestamp(value.strip())
            moment = dt.datetime.strptime(value.strip(), self.timestamp_format)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.timezone.utc)
            return int(round((moment - _EPOCH).total_seconds() * 1000))
        except (ValueError, TypeError, OverflowError):
            raise InvalidRecord("bad_timestamp") from None


def _required(record: dict, name: str, column: str) -> Any:
    value = record.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InvalidRecord(f"missing_field:{name}")
    return value


def identifier(value: Any, name: str) -> str | None:
    """A categorical value as a string id; None when absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        value = value.strip()
        return value or None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    raise InvalidRecord(f"wrong_type:{name}")


def _any_number(value: Any, name: str) -> float | None:
    """A JSON number or numeric text as a float (nan and inf included); None when absent or blank."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidRecord(f"wrong_type:{name}")
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer beyond any float
            raise InvalidRecord(f"non_finite:{name}") from None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            return float(value)
        except ValueError:
            raise InvalidRecord(f"wrong_type:{name}") from None
    raise InvalidRecord(f"wrong_type:{name}")


def feature_number(value: Any, name: str) -> float | None:
    """A numeric feature's value; None when absent. nan and ±inf are no value a model can use, and not an absent
    one either (a logger wrote something wrong): `non_finite:<feature>`."""
    number = _any_number(value, name)
    if number is not None and not math.isfinite(number):
        raise InvalidRecord(f"non_finite:{name}")
    return number


def outcome_flag(value: Any, name: str, positive_when: str) -> float:
    """Outcome label: `present` → the column is set; `truthy` → 1/true/yes or a positive number.

    Values outside the label's domain are dead letters, never a silent 0: nan or ±inf (`non_finite_label:<column>`,
    in either mode), a negative number (`negative_label:<column>`, truthy), text that is neither a boolean word
    nor a number (`wrong_type:<column>`)."""
    if positive_when == "present":
        if value is None or (isinstance(value, str) and not value.strip()):
            return 0.0
        if isinstance(value, float) or (isinstance(value, str) and value.strip().lower() in _NON_FINITE_WORDS):
            if not math.isfinite(float(value)):
                raise InvalidRecord(f"non_finite_label:{name}")
        return 1.0
    if value is None:
        raise InvalidRecord(f"missing_field:{name}")
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _FALSE:
            return 0.0
        if text in _TRUE:
            return 1.0
    if not isinstance(value, (int, float, str)):
        raise InvalidRecord(f"wrong_type:{name}")
    try:
        number = _any_number(value, name)
    except InvalidRecord as error:
        raise InvalidRecord(error.reason.replace("non_finite:", "non_finite_label:")) from None
    if number is None:
        raise InvalidRecord(f"missing_field:{name}")
    if not math.isfinite(number):
        raise InvalidRecord(f"non_finite_label:{name}")
    if number < 0:
        raise InvalidRecord(f"negative_label:{name}")
    return 1.0 if number > 0 else 0.0


@dataclass(frozen=True)
class FeatureField:
    """How one raw feature is read: `kind` is the config kind; `column` the source column."""

    name: str
    kind: str
    column: str
    separator: str = "|"
    default: float = 0.0


@dataclass(frozen=True)
class OutcomeLabel:
    name: str  # the example key, label_<task>
    column: str
    positive_when: str


@dataclass(frozen=True)
class ImpressionParser:
    """Source record → {impression_id, timestamp_ms, <features…>, [label_<task>…], _missing}."""

    decoder: RecordDecoder
    timestamps: TimestampParser
    features: tuple[FeatureField, ...]
    id_column: str = IMPRESSION_ID
    timestamp_column: str = TIMESTAMP
    id_required: bool = True
    outcome_labels: tuple[OutcomeLabel, ...] = field(default_factory=tuple)

    def __call__(self, raw: Any) -> dict:
        record = self.decoder(raw)
        if self.id_required:
            impression_id = identifier(_required(record, IMPRESSION_ID, self.id_column), IMPRESSION_ID)
        else:
            impression_id = identifier(record.get(self.id_column), IMPRESSION_ID)
        example: dict[str, Any] = {
            IMPRESSION_ID: impression_id,
            TIMESTAMP_MS: self.timestamps(_required(record, TIMESTAMP, self.timestamp_column)),
        }
        missing = []
        parsed: str | list[str] | float | None
        for feature in self.features:
            value = record.get(feature.column)
            if feature.kind == "categorical":
                parsed = identifier(value, feature.name)
                if parsed is None:
                    missing.append(feature.name)
                    parsed = MISSING_TOKEN
            elif feature.kind == "categorical_list":
                parsed = self.id_list(value, feature)
                if not parsed:
                    missing.append(feature.name)
            elif feature.kind == "numeric":
                parsed = feature_number(value, feature.name)
                if parsed is None:
                    missing.append(feature.name)
                    parsed = feature.default
            else:  # derived, not a column: a time part (the transform graph), a history feature (history.py)
                continue
            example[feature.name] = parsed
        for label in self.outcome_labels:
            example[label.name] = outcome_flag(record.get(label.column), label.column, label.positive_when)
        example[MISSING] = missing
        return example

    @staticmethod
    def id_list(value: Any, feature: FeatureField) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            return [token.strip() for token in value.split(feature.separator) if token.strip()]
        if not isinstance(value, list):
            raise InvalidRecord(f"wrong_type:{feature.name}")
        ids = []
        for item in value:
            if isinstance(item, (list, dict)):
                raise InvalidRecord(f"wrong_type:{feature.name}")
            parsed = identifier(item, feature.name)
            if parsed is not None:
                ids.append(parsed)
        return ids


@dataclass(frozen=True)
class EngagementParser:
    """Source record → {impression_id, event_type, timestamp_ms}; unknown event types are dead letters."""

    decoder: RecordDecoder
    timestamps: TimestampParser
    event_types: frozenset[str]
    id_column: str = IMPRESSION_ID
    type_column: str = EVENT_TYPE
    timestamp_column: str = TIMESTAMP

    def __call__(self, raw: Any) -> dict:
        record = self.decoder(raw)
        impression_id = identifier(_required(record, IMPRESSION_ID, self.id_column), IMPRESSION_ID)
        event_type = _required(record, EVENT_TYPE, self.type_column)
        if not isinstance(event_type, str):
            raise InvalidRecord(f"wrong_type:{EVENT_TYPE}")
        if event_type not in self.event_types:
            raise InvalidRecord("unknown_event_type")
        return {
            IMPRESSION_ID: impression_id,
            EVENT_TYPE: event_type,
            TIMESTAMP_MS: self.timestamps(_required(record, TIMESTAMP, self.timestamp_column)),
        }


RECORD_EXCERPT_BYTES = 1024


def dead_letter(stream: str, reason: str, raw: Any) -> dict:
    """{stream, reason, raw}: `raw` is the record as read; bytes that are not UTF-8 are kept as \\xNN escapes.
    A `record_too_large` record keeps its first RECORD_EXCERPT_BYTES bytes and its size (`raw_bytes`)."""
    if reason == "record_too_large" and isinstance(raw, (bytes, str)):
        size = len(raw)
        excerpt = raw[:RECORD_EXCERPT_BYTES]
        text = excerpt.decode("utf-8", "backslashreplace") if isinstance(excerpt, bytes) else excerpt
        return {"stream": stream, "reason": reason, "raw": text, "raw_bytes": size}
    if isinstance(raw, bytes):
        text = raw.decode("utf-8", "backslashreplace")
    else:
        text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
    return {"stream": stream, "reason": reason, "raw": text}


@dataclass
class ParseOutcomes:
    """Records (and their bytes as read) that parsed, and that became dead letters, in one bundle or summed."""

    parsed: int = 0
    parsed_bytes: int = 0
    dead_letters: int = 0
    dead_letter_bytes: int = 0

    def add(self, raw: Any, parsed: bool) -> None:
        size = record_size(raw)
        if parsed:
            self.parsed, self.parsed_bytes = self.parsed + 1, self.parsed_bytes + size
        else:
            self.dead_letters, self.dead_letter_bytes = self.dead_letters + 1, self.dead_letter_bytes + size


def record_size(raw: Any) -> int:
    """A record's bytes as read: a text record's length in bytes; 0 for a row (Parquet/BigQuery dict)."""
    if isinstance(raw, bytes):
        return len(raw)
    return len(raw.encode("utf-8", "surrogateescape")) if isinstance(raw, str) else 0


class ParseRecords(beam.DoFn):
    """Main output: parsed records. Tagged `dead_letter`: {stream, reason, raw} for everything else. Tagged
    `outcomes`: one `ParseOutcomes` per bundle (what the manifest's input accounting sums)."""

    def __init__(self, stream: str, parser):
        super().__init__()
        self.stream = stream
        self.parser = parser
        self.tally: ParseTally | None = None
        self.outcomes = ParseOutcomes()

    def setup(self):
        self.tally = ParseTally(self.stream)  # this worker's progress lines and the job's metrics counters

    def start_bundle(self):
        self.outcomes = ParseOutcomes()

    def _counted(self, raw: Any, parsed: bool) -> None:
        if self.tally is None:  # setup() runs first on every runner; this keeps the type honest
            self.tally = ParseTally(self.stream)
        self.tally.count(parsed=parsed)
        self.outcomes.add(raw, parsed)

    def process(self, raw):
        try:
            record = self.parser(raw)
        except InvalidRecord as error:
            self._counted(raw, parsed=False)
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(self.stream, error.reason, raw))
            return
        except Exception as error:  # noqa: BLE001 - a record must never be lost, whatever went wrong
            self._counted(raw, parsed=False)
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(self.stream, f"unparsable:{type(error).__name__}", raw))
            return
        self._counted(raw, parsed=True)
        yield record

    def finish_bundle(self):
        if self.tally is not None:
            self.tally.flush_metrics()
        if self.outcomes.parsed or self.outcomes.dead_letters:
            yield beam.pvalue.TaggedOutput(OUTCOMES, GlobalWindows.windowed_value(self.outcomes))
        self.outcomes = ParseOutcomes()


def parse_stream(records, stream: str, parser):
    """(valid, dead_letters, outcomes) PCollections of one stream; `outcomes` holds `ParseOutcomes` to sum."""
    outputs = records | f"Parse{stream.title()}" >> beam.ParDo(ParseRecords(stream, parser)).with_outputs(
        DEAD_LETTER, OUTCOMES, main=VALID
    )
    return outputs[VALID], outputs[DEAD_LETTER], outputs[OUTCOMES]
