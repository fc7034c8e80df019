"""Does the examples' manifest give each feature the table rows the config says it has?

Preprocess writes every feature's table rows into the manifest (`table_rows`) and the trainer builds its
embedding tables from them. Where the config alone decides that figure (`configs.features.configured_table_rows`:
hash buckets, quantile buckets, time parts), a different figure means the examples were made with another
config, so training stops before it builds anything, naming the feature. A vocabulary's rows come from the
data, so the config has no figure of its own to check them against.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.contracts.manifest import Manifest
from configs.features import Feature, configured_table_rows, model_inputs


class TableRowsMismatch(ValueError):
    """The manifest and the config give a feature different table rows."""


def check_table_rows(manifest: Manifest, features: Sequence[Feature]) -> None:
    """`TableRowsMismatch` naming every feature whose manifest figure differs from the config's."""
    written = {info.name: info.table_rows for info in manifest.features}
    problems = []
    for feature in model_inputs(features):
        expected = configured_table_rows(feature)
        if expected is None or feature.name not in written or written[feature.name] == expected:
            continue
        problems.append(f"feature '{feature.name}': the examples' manifest gives {written[feature.name]} table rows, "
                        f"the config {expected}")
    if problems:
        raise TableRowsMismatch("; ".join(problems) + ": these examples were preprocessed with another feature "
                                "config; preprocess them again with this one, or train with the config that made them")
