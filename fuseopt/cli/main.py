"""The `fuseopt` command: a click group whose commands live one per module in this package.

Errors: a `FuseoptError` is printed as located diagnostics on stderr, without a traceback, and
exits with its code (README "Exit codes"); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from fuseopt import __version__
from fuseopt.cli.console import print_diagnostics
from fuseopt.errors import FuseoptError


class FuseoptGroup(click.Group):
    """Turns FuseoptError into diagnostics + exit code, and click usage errors into exit 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except FuseoptError as err:
            print_diagnostics(err.diagnostics)
            sys.exit(err.exit_code)


@click.group(
    cls=FuseoptGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="fuseopt")
def cli() -> None:
    """fuseopt: explainable kernel fusion for compiler engineers.

    Reads a kernel graph (FORMAT.md, JSON or YAML), plans fusion and loop orders, explains every
    decision, and emits Triton. Exit codes: 0 success, 1 a check failed, 2 bad input or usage,
    3 no GPU where one is required.
    """


def _register() -> None:
    # One module per command; importing registers it on `cli`.
    from fuseopt.cli import commands  # noqa: F401


def main(argv: list[str] | None = None) -> None:
    _register()
    try:
        cli.main(args=argv, prog_name="fuseopt", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        # click uses exit 2 for usage errors already; keep codes as documented.
        raise SystemExit(code) from None
