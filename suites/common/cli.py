"""The command line's one error shape: `fusebench: error: <one line>` on stderr, exit code 2.

    def main(argv=None) -> int:
        return cli.run_main(_parser(), compare, argv)

`Parser` turns argparse's own errors (a missing or bad argument) into that shape too; argparse
alone prints the usage block before its message.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable

from suites.common.errors import ConfigError, InputError

EXIT_BAD_INPUT = 2


class Parser(argparse.ArgumentParser):
    """argparse's errors as fusebench's: one line, exit code 2 (argparse prints usage too)."""

    def error(self, message):
        raise ConfigError(message)


def run_main(parser: argparse.ArgumentParser, command: Callable[[argparse.Namespace], object],
             argv=None, errors: tuple[type[BaseException], ...] = (ConfigError, InputError,
                                                                    OSError)) -> int:
    """Parse argv and run command(args): 0 when it returns, 2 and one line on stderr when it
    raises one of `errors` (by default bad input or an unreadable / unwritable path)."""
    try:
        command(parser.parse_args(argv))
    except errors as exc:
        print(f"fusebench: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0
