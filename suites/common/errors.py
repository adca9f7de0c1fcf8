"""The two kinds of bad input a command reports in one line (`fusebench: error: ...`, exit 2):
a bad configuration value, and a bad input file. Each message names the bad key, value or
file and, where there is one, what is accepted."""


class ConfigError(ValueError):
    """A bad configuration value (a key, an override, a command-line option), reported before
    any work starts."""


class InputError(ValueError):
    """An input file that cannot be read as what it should be: a trace, a results table, a run
    folder."""
