"""How each raw log field becomes a model input. The trainer reads the result from the transform output."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from configs.base import StrictModel

FEATURE_NAME = r"^[a-z][a-z0-9_]*$"


class CategoricalFeature(StrictModel):
    """A string id: hashed into buckets, or looked up in a vocabulary computed on the train split."""

    kind: Literal["categorical"] = "categorical"
    name: str = Field(pattern=FEATURE_NAME)
    encoding: Literal["hash", "vocabulary"] = "vocabulary"
    hash_buckets: int = Field(1000, ge=2)
    top_k: int | None = Field(None, ge=1)
    frequency_threshold: int = Field(1, ge=1)
    oov_buckets: int = Field(1, ge=1)


class CategoricalListFeature(CategoricalFeature):
    """A variable-length list of string ids (e.g. user interests), padded or cut to `max_length`."""

    kind: Literal["categorical_list"] = "categorical_list"  # type: ignore[assignment]
    max_length: int = Field(8, ge=1)
    combiner: Literal["mean", "sum"] = "mean"


class NumericFeature(StrictModel):
    """A number, normalized with statistics of the train split."""

    kind: Literal["numeric"] = "numeric"
    name: str = Field(pattern=FEATURE_NAME)
    normalization: Literal["zscore", "log1p_zscore"] = "zscore"
    default: float = 0.0


Feature = Annotated[
    CategoricalFeature | CategoricalListFeature | NumericFeature, Field(discriminator="kind")
]


class FeaturesConfig(StrictModel):
    """The ordered feature list. Names must be unique."""

    features: list[Feature] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> FeaturesConfig:
        seen: set[str] = set()
        for feature in self.features:
            if feature.name in seen:
                raise ValueError(f"feature '{feature.name}' is defined twice")
            seen.add(feature.name)
        return self
