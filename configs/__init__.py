"""adrank configuration: one validated pydantic object per entry point."""

from configs.errors import ConfigError
from configs.loader import config_from_json, config_hash, config_to_json, load_config, with_overrides
from configs.schema import AdrankConfig

__all__ = ["AdrankConfig", "ConfigError", "config_from_json", "config_hash", "config_to_json", "load_config",
           "with_overrides"]
