"""Command-line options shared by the planning commands (one definition, many commands)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from fuseopt.passes.options import MAX_FUSION_SIZE_LIMIT, SCORINGS, Options

F = TypeVar("F", bound=Callable[..., Any])


def planning_options(fn: F) -> F:
    fn = click.option(
        "--no-loop-order", "no_loop_order", is_flag=True, help="Turn the loop-order unification pass off."
    )(fn)
    fn = click.option(
        "--max-fusion-size",
        type=click.IntRange(1, MAX_FUSION_SIZE_LIMIT),
        default=64,
        show_default=True,
        help="Most nodes in one kernel (Inductor's max_fusion_size).",
    )(fn)
    fn = click.option(
        "--scoring",
        type=click.Choice(SCORINGS),
        default="stable",
        show_default=True,
        help="stable: order-independent (default); inductor: Inductor's score_fusion, list order included.",
    )(fn)
    return fn


def options_from(scoring: str, max_fusion_size: int, no_loop_order: bool) -> Options:
    return Options(scoring=scoring, max_fusion_size=max_fusion_size, loop_order=not no_loop_order)
