"""What a feature or task name may be, and the fix a config error names when one is not.

A name becomes a Keras input, a transform output, a TFRecord key and a serving signature's argument, so it is
lower-case letters, digits and `_`, starting with a letter (`NAME_PATTERN`). A log's own column names need not
follow the rule: a feature is named by the rule and mapped to its column with `logs.impression_fields`
(`C14` → `features: [{name: c14, ...}]`, `logs.impression_fields: {c14: C14}`), so the error for a feature says
exactly that, with the corrected name.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator, Field

NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
NAME_RULE = "lower-case letters, digits and '_', starting with a letter"
_NAME = re.compile(NAME_PATTERN)
_NOT_ALLOWED = re.compile(r"[^a-z0-9_]+")


def suggested_name(name: str, prefix: str) -> str:
    """`name` made valid: lower case, every run of other characters one `_`, no `_` at either end, and `prefix`
    in front of a name that does not start with a letter (`C14` → `c14`, `Site-ID` → `site_id`, `1st` → `f_1st`
    with prefix `f_`); accents dropped (`Ünit` → `unit`)."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    core = _NOT_ALLOWED.sub("_", plain.lower()).strip("_")
    if not core:
        return prefix.rstrip("_")
    return core if core[0].isalpha() else prefix + core


def feature_name(name: str) -> str:
    """A feature's name: valid, or a ValueError saying the rule, the corrected name and how to keep the column."""
    if _NAME.match(name):
        return name
    fixed = suggested_name(name, "f_")
    raise ValueError(
        f"'{name}' is not a valid feature name ({NAME_RULE}); name the feature '{fixed}', and if '{name}' is the "
        f"log's column, map it: logs.impression_fields: {{{fixed}: {name}}}"
    )


def task_name(name: str) -> str:
    """A task's name: valid, or a ValueError with the rule and the corrected name (the label's column is
    `label_column` or `event_type`, spelt as the log spells it)."""
    if _NAME.match(name):
        return name
    fixed = suggested_name(name, "task_")
    raise ValueError(f"'{name}' is not a valid task name ({NAME_RULE}); name the task '{fixed}' (its label column "
                     f"keeps its own spelling in label_column)")


FeatureName = Annotated[str, AfterValidator(feature_name), Field(json_schema_extra={"pattern": NAME_PATTERN})]
TaskName = Annotated[str, AfterValidator(task_name), Field(json_schema_extra={"pattern": NAME_PATTERN})]
