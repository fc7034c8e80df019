"""Load a YAML config (or the embedded default), apply `--set dotted.key=value` overrides, validate once; more
overrides on a config already loaded (`with_overrides`) without reading its file again."""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import ValidationError

from configs.duplicate_keys import duplicate_keys
from configs.errors import ConfigError
from configs.schema import AdrankConfig
from foundation.canonical_json import canonical_json

EMBEDDED_DEFAULT = "local.yaml"


def embedded_config_path() -> Path:
    """The config `adrank run` uses when none is given: `configs/local.yaml` shipped in the package."""
    return Path(str(resources.files("configs").joinpath(EMBEDDED_DEFAULT)))


def load_config(path: str | Path | None = None, overrides: Iterable[str] = ()) -> AdrankConfig:
    """Read `path` (default: the embedded local config), apply overrides, and validate.

    Raises `ConfigError` naming the file and each offending field, e.g.
    `configs/local.yaml: training.global_batch_size: Input should be greater than or equal to 1`, or each key
    written twice in one mapping with both line numbers (`configs.duplicate_keys`).
    """
    source = Path(path) if path is not None else embedded_config_path()
    try:
        text = source.read_text()
        repeated = duplicate_keys(text)
        raw = yaml.safe_load(text)
    except FileNotFoundError:
        raise ConfigError(f"{source}: config file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{source}: is a directory, not a YAML config file") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{source}: not UTF-8 text (byte {error.start}): a config must be a YAML text file") from None
    except OSError as error:
        raise ConfigError(f"{source}: cannot read the config file: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{source}: not valid YAML: {error}") from None
    if repeated:
        raise ConfigError(f"{source}: " + "; ".join(duplicate.describe() for duplicate in repeated))
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: a config must be a mapping at the top level")
    resolve_log_paths(raw, source.parent)
    for override in overrides:
        apply_override(raw, override)
    return config_from_dict(raw, source=str(source))


def with_overrides(config: AdrankConfig, overrides: Iterable[str], source: str = "<config>") -> AdrankConfig:
    """`config` with more `--set` overrides, validated again (its file is not read again; the same config when there
    are none). A `ConfigError` names `source` and each offending field, as `load_config`'s."""
    overrides = list(overrides)
    if not overrides:
        return config
    raw = config.model_dump(mode="json")
    for override in overrides:
        apply_override(raw, override)
    return config_from_dict(raw, source=source)


def resolve_log_paths(raw: dict[str, Any], config_dir: Path) -> None:
    """Relative `logs.impressions` / `logs.engagements` file globs in a config file are relative to that
    file (as in `configs/examples/click_log.yaml`), wherever adrank is started; `--set` values stay
    relative to the working directory. URIs (gs://...) and BigQuery tables/queries are left alone."""
    logs = raw.get("logs")
    if not isinstance(logs, dict) or logs.get("format") == "bigquery":
        return
    for key in ("impressions", "engagements"):
        value = logs.get(key)
        if isinstance(value, str) and value and "://" not in value and not Path(value).is_absolute():
            logs[key] = str((config_dir / value).resolve())


def config_from_dict(raw: dict[str, Any], source: str = "<config>") -> AdrankConfig:
    try:
        return AdrankConfig.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(f"{source}: invalid config: " + format_validation_error(error)) from None


def config_from_json(text: str) -> AdrankConfig:
    """The inverse of `config_to_json`: how a pipeline step receives the config."""
    return config_from_dict(json.loads(text), source="<pipeline parameter config_json>")


def config_to_json(config: AdrankConfig) -> str:
    """Canonical JSON of a config: sorted keys, so equal configs give equal text (and equal compiled YAML)."""
    return canonical_json(config.model_dump(mode="json"))


def config_hash(config: AdrankConfig) -> str:
    """12 hex digits of the canonical JSON; a step's config slice (`configs.slices`) carries its full config's."""
    return hashlib.sha256(config_to_json(config).encode()).hexdigest()[:12]


def format_validation_error(error: ValidationError) -> str:
    """One line: `field: message` per error, joined by '; '. Cross-field rules put the field in their message."""
    parts = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown key (not part of the config schema)"
        parts.append(f"{field}: {message}" if field else message)
    return "; ".join(parts)


def apply_override(raw: dict[str, Any], override: str) -> None:
    """Set `a.b.c=value` in the raw mapping; list items are addressed by index (`targets.0.name=x`).

    The value is parsed as YAML, so `3`, `0.5`, `true`, `[64, 32]` and `null` keep their types.
    """
    key, sep, text = override.partition("=")
    if not sep or not key:
        raise ConfigError(f"--set {override!r}: expected dotted.key=value")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"--set {override!r}: value is not valid YAML: {error}") from None
    parts = key.split(".")
    node: Any = raw
    for depth, part in enumerate(parts[:-1]):
        node = _child(node, part, ".".join(parts[: depth + 1]), override)
    last = parts[-1]
    if isinstance(node, list):
        node[_index(node, last, key, override)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ConfigError(f"--set {override!r}: '{'.'.join(parts[:-1])}' is not a mapping or list")


def _child(node: Any, part: str, path: str, override: str) -> Any:
    if isinstance(node, list):
        return node[_index(node, part, path, override)]
    if not isinstance(node, dict):
        raise ConfigError(f"--set {override!r}: '{path}' is not a mapping or list")
    if part not in node or node[part] is None:
        node[part] = {}
    return node[part]


def _index(node: list, part: str, path: str, override: str) -> int:
    if not part.isdigit() or int(part) >= len(node):
        raise ConfigError(f"--set {override!r}: '{path}' must be an index below {len(node)}")
    return int(part)
