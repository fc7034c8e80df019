"""The error raised when a config file cannot become a valid `AdrankConfig`."""


class ConfigError(ValueError):
    """A config failed to load; the message names the file and every offending field."""
