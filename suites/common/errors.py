"""The one error type for bad input: its message names the bad key and the accepted values."""


class ConfigError(ValueError):
    """A bad configuration value, reported before any work starts."""
