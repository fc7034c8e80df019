"""How each raw log field becomes a model input. The trainer reads the result from the transform output."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from configs.base import StrictModel
from configs.bounds import at_most
from configs.names import FeatureName

MAX_TABLE_ROWS = 2**31 - 1  # the most rows an int32 id can index; tables near it fail the memory estimate
ROWS_REASON = "an int32 id indexes at most 2^31-1 table rows"


class CategoricalFeature(StrictModel):
    """A string id: hashed into buckets, looked up in a vocabulary computed on the train split, or mapped by a
    hash learned from the train split.

    Vocabulary: the `top_k` most frequent ids seen at least `frequency_threshold` times; the rest hash into
    `oov_buckets`. Missing values become the token `__missing__` (a vocabulary entry like any other).
    learned_hash: a table of `hash_buckets` rows; the `dedicated_rows` most frequent ids have their own, the tail
    shares the rest, ids of similar label rate colliding (components/preprocess/learned_hash.py)."""

    kind: Literal["categorical"] = "categorical"
    name: FeatureName
    encoding: Literal["hash", "vocabulary", "learned_hash"] = "vocabulary"
    hash_buckets: Annotated[int, at_most(MAX_TABLE_ROWS, ROWS_REASON)] = Field(
        1000, ge=2, description="table rows of hash and learned_hash")
    top_k: Annotated[int | None, at_most(MAX_TABLE_ROWS, ROWS_REASON)] = Field(None, ge=1)
    frequency_threshold: Annotated[int, at_most(
        10**12, "occurrences of one id in the train split; above 10^12 no id qualifies")] = Field(1, ge=1)
    oov_buckets: Annotated[int, at_most(
        1_000_000, "rows shared by out-of-vocabulary ids; more belongs in hash_buckets")] = Field(1, ge=1)
    dedicated_rows: Annotated[int | None, at_most(MAX_TABLE_ROWS, ROWS_REASON)] = Field(
        None, ge=0,
        description="learned_hash only: rows of the most frequent ids, one each (default hash_buckets // 2); the "
        "other hash_buckets - dedicated_rows rows are shared by the tail",
    )

    @field_validator("dedicated_rows")
    @classmethod
    def _dedicated_rows_fit(cls, value: int | None, info: ValidationInfo) -> int | None:
        """Checked on the field itself (encoding and hash_buckets are declared before it), so the error names it."""
        encoding, rows = info.data.get("encoding"), info.data.get("hash_buckets")
        if value is None:
            return value
        if encoding != "learned_hash":
            raise ValueError(f"applies to encoding learned_hash only, not {encoding}")
        if rows is not None and value >= rows:
            raise ValueError(f"must be less than hash_buckets ({rows}): the tail needs at least one shared row")
        return value


class CategoricalListFeature(CategoricalFeature):
    """A variable-length list of string ids (e.g. user interests), padded with id 0 or cut to `max_length`.

    In text sources (CSV) the list is one string split on `separator`."""

    kind: Literal["categorical_list"] = "categorical_list"  # type: ignore[assignment]  # its own discriminator value
    encoding: Literal["hash", "vocabulary"] = "vocabulary"  # learned_hash: one id per example
    max_length: Annotated[int, at_most(
        4096, "ids per example after padding; every example carries this many")] = Field(8, ge=1)
    combiner: Literal["mean", "sum"] = "mean"
    separator: str = Field("|", min_length=1)


class NumericFeature(StrictModel):
    """A number, normalized with statistics of the train split.

    zscore: (x − mean) / std. log1p: log(1 + max(x, 0)). log1p_zscore: both. log_ratio: log(max(x, tiny) /
    reference), 0 at the reference, bounded by the data rather than by a train-split std (a z-score of a value
    that is nearly constant on train, such as a click rate smoothed toward its prior, divides by a tiny std
    and turns the rare ids with history into inputs of 20-60 standard deviations). quantile_buckets: the id of
    the train-split quantile bucket (an int64 categorical input with `buckets` rows)."""

    kind: Literal["numeric"] = "numeric"
    name: FeatureName
    normalization: Literal["zscore", "log1p", "log1p_zscore", "log_ratio", "quantile_buckets"] = "zscore"
    buckets: Annotated[int, at_most(1_000_000, "quantile boundaries computed over the train split")] = Field(
        10, ge=2, description="quantile_buckets only")
    reference: float = Field(1.0, gt=0, description="log_ratio only: the value that maps to 0")
    default: float = 0.0


class TimeFeature(StrictModel):
    """Derived from the impression timestamp inside the transform graph (UTC): hour of day or day of week
    (Monday = 0). An int64 categorical input with 24 or 7 rows."""

    kind: Literal["time"] = "time"
    name: FeatureName
    part: Literal["hour_of_day", "day_of_week"]


NEVER_SEEN_SECONDS = 365 * 86_400  # `seconds_since_previous` of an id with no earlier impression in the logs read


def window_name(hours: float) -> str:
    """How a history window appears in its columns' names: whole hours as `24h`, a whole number of minutes as
    `90m` (1.5 h); any other window has no name a feature may carry (ValueError)."""
    if hours == int(hours):
        return f"{int(hours)}h"
    minutes = hours * 60
    if abs(minutes - round(minutes)) < 1e-9 and round(minutes) > 0:
        return f"{round(minutes)}m"
    raise ValueError(f"a window of {hours:g} h is neither whole hours nor whole minutes; its columns need a name "
                     f"such as 24h or 90m")


class HistoryFeature(StrictModel):
    """What an id (or a pair of ids) did before each impression, computed in preprocess from earlier examples only
    (components/preprocess/history.py): per window, its impressions, its clicks (labels of `task` whose
    attribution window had closed by the impression time) and its smoothed click rate
    (clicks + smoothing_prior · prior_rate) / (matured impressions + smoothing_prior); and the seconds since
    its previous impression. Each becomes a model input named `<name>_<what>_<window>h` (`model_inputs`): by
    default its train-split quantile bucket, embedded like an id (`encoding`); a serving request supplies the raw
    values (docs/history_features.md)."""

    kind: Literal["history"] = "history"
    name: FeatureName
    ids: list[str] = Field(min_length=1, max_length=2, description="one categorical feature, or two for an id pair")
    task: str | None = Field(None, description="the task whose labels are counted as clicks; default: the first")
    windows_hours: list[float] = Field(
        default_factory=lambda: [1.0, 24.0], min_length=1, description="trailing windows, in hours",
    )
    smoothing_prior: float = Field(
        10.0, gt=0, description="pseudo-impressions at prior_rate added to each window's click rate",
    )
    prior_rate: float = Field(0.01, gt=0, lt=1, description="the click rate an id with no history is smoothed to")
    encoding: Literal["buckets", "log"] = Field(
        "buckets", description="buckets: each column as its train-split quantile bucket, a categorical input with "
        "`buckets` rows (an embedding, on the scale of every other id's); log: counts as log1p and the rate as its "
        "log-ratio to prior_rate, numeric inputs that enter the cross layers as they are",
    )
    buckets: int = Field(16, ge=2, le=1000, description="encoding buckets only: quantile buckets per column")
    censored_windows: Literal["scale", "keep"] = Field(
        "scale", description="a window reaching back before the first impression of the logs read (early examples, "
        "whose history the logs do not hold): scale its impressions and clicks by window / hours covered (at least "
        "1 h), the counts a full window would hold on average, as serving sees them; keep: the counts as they are",
    )

    @field_validator("windows_hours")
    @classmethod
    def _positive_windows(cls, windows: list[float]) -> list[float]:
        if any(w <= 0 for w in windows):
            raise ValueError(f"windows must be positive hours, got {windows}")
        if len(set(windows)) != len(windows):
            raise ValueError(f"windows must differ, got {windows}")
        for window in windows:
            window_name(window)  # a window whose columns cannot be named fails here, on this field
        return windows

    def numeric_inputs(self) -> list[NumericFeature]:
        """The model inputs this feature becomes, in order: per window impressions, clicks and rate, then the
        seconds since the previous impression.

        `encoding: buckets` (the default): each the id of its train-split quantile bucket, an embedded categorical
        input. As numbers (`log`: counts log1p, the rate's log-ratio to `prior_rate`, the seconds log1p then
        z-scored) they enter x_0 at 0-8 beside embedding entries of ~0.05, and each cross layer multiplies x_0 by a
        projection of itself: on a sparse install log (benchmarks/quality.py install_log, docs/history_features.md)
        they made the model worse and unstable from seed to seed, and better without cross layers; bucketed, better
        with them. Buckets are also unchanged by any monotone rescaling (`prior_rate`, the log). Never z-scored:
        most ids have no clicks on train, so a z-score divides by a tiny std and the few with clicks become inputs
        of 10-70 standard deviations (docs/quality.md)."""
        if self.encoding == "buckets":
            return [NumericFeature(name=name, normalization="quantile_buckets", buckets=self.buckets)
                    for name in self._column_order()]
        inputs = []
        for window in self.windows_hours:
            inputs += [
                NumericFeature(name=self.window_column("impressions", window), normalization="log1p"),
                NumericFeature(name=self.window_column("clicks", window), normalization="log1p"),
                NumericFeature(name=self.window_column("rate", window), normalization="log_ratio",
                               reference=self.prior_rate),
            ]
        return inputs + [NumericFeature(name=f"{self.name}_seconds_since_previous", normalization="log1p_zscore")]

    def _column_order(self) -> list[str]:
        names = [self.window_column(what, window) for window in self.windows_hours
                 for what in ("impressions", "clicks", "rate")]
        return [*names, f"{self.name}_seconds_since_previous"]

    def window_column(self, what: str, window_hours: float) -> str:
        """The column of `what` (impressions, clicks, rate) over one window: `<name>_<what>_<window_name>`."""
        return f"{self.name}_{what}_{window_name(window_hours)}"

    def column_names(self) -> list[str]:
        return [column.name for column in self.numeric_inputs()]


Feature = Annotated[
    CategoricalFeature | CategoricalListFeature | NumericFeature | TimeFeature | HistoryFeature,
    Field(discriminator="kind"),
]


def model_inputs(features: Iterable[Any]) -> list[Any]:
    """The features as the transform and the trainer see them: a history feature becomes its numeric columns
    (counts and seconds: log1p then z-score; rates: z-score); every other feature is itself."""
    inputs: list[Any] = []
    for feature in features:
        inputs += feature.numeric_inputs() if isinstance(feature, HistoryFeature) else [feature]
    return inputs


TIME_PART_ROWS = {"hour_of_day": 24, "day_of_week": 7}


def table_rows(feature: Any, vocabulary_entries: int | None = None) -> int | None:
    """The embedding-table rows a feature gets, None for one that has no table (a plain number, a history
    feature's numeric inputs). The one rule: preprocess writes it to the manifest (`table_rows`), the config's
    memory estimate and the trainer's check against the manifest use it.

    hash, learned_hash: `hash_buckets`. vocabulary: its `vocabulary_entries` (what the train split kept; needed
    for this encoding only) + `oov_buckets`. A categorical list: one row more, the padding id 0. quantile_buckets:
    `buckets`. A time part: 24 hours or 7 weekdays.
    """
    if isinstance(feature, CategoricalFeature):  # and CategoricalListFeature
        padding = 1 if isinstance(feature, CategoricalListFeature) else 0
        if feature.encoding in ("hash", "learned_hash"):
            return feature.hash_buckets + padding
        if vocabulary_entries is None:
            raise ValueError(f"feature '{feature.name}': a vocabulary's table rows need its number of entries")
        return vocabulary_entries + feature.oov_buckets + padding
    if isinstance(feature, NumericFeature):
        return feature.buckets if feature.normalization == "quantile_buckets" else None
    if isinstance(feature, TimeFeature):
        return TIME_PART_ROWS[feature.part]
    return None


def configured_table_rows(feature: Any) -> int | None:
    """`table_rows` where the config alone decides it; None for a vocabulary (its entries come from the data)
    and for a feature without a table."""
    if isinstance(feature, CategoricalFeature) and feature.encoding == "vocabulary":
        return None
    return table_rows(feature)


def history_features(features: Iterable[Any]) -> list[HistoryFeature]:
    return [f for f in features if isinstance(f, HistoryFeature)]


class FeaturesConfig(StrictModel):
    """The ordered feature list. Names must be unique."""

    features: list[Feature] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> FeaturesConfig:
        seen: set[str] = set()
        for feature in model_inputs(self.features):
            if feature.name in seen:
                raise ValueError(f"feature '{feature.name}' is defined twice")
            if feature.name.startswith("label_") or feature.name == "timestamp_ms":
                raise ValueError(f"feature name '{feature.name}' is reserved (labels and the impression time)")
            seen.add(feature.name)
        return self
