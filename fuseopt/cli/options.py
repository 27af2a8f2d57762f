"""Command-line options shared by the planning commands (one definition, many commands).

Each is None unless given, so a graph's recorded options (`meta: {max_fusion_size: 2}`,
`fuseopt.ir.recorded_options`) apply where the command line is silent; the command line wins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from fuseopt.codegen.options import STRATEGY_NAMES
from fuseopt.interp.limits import DEFAULT_LIMITS, parse_size
from fuseopt.ir.graph import Graph
from fuseopt.ir.recorded_options import Resolved, resolve_options
from fuseopt.passes.options import MAX_FUSION_SIZE_LIMIT, SCORINGS, Options

F = TypeVar("F", bound=Callable[..., Any])


def strategy_option(fn: F) -> F:
    """`--strategy NAME` (`CodegenOptions.strategy`) and `--fission auto|on|off`
    (`CodegenOptions.fission`), as `optimize` and `bench` take them."""
    fn = click.option(
        "--fission",
        type=click.Choice(["auto", "on", "off"]),
        default="auto",
        show_default=True,
        help="Run a looped reduction's r loops as launches of their own: where the cost model says "
        "that is faster (auto), wherever they come apart (on), or never (off).",
    )(fn)
    return click.option(
        "--strategy",
        type=click.Choice(STRATEGY_NAMES),
        default=None,
        help="Take this kernel strategy wherever it applies, instead of the one the cost model says is "
        "fastest (to compare kernel shapes: docs/ARCHITECTURE.md, Kernel shapes).",
    )(fn)


FISSION = {"auto": None, "on": True, "off": False}  # --fission -> CodegenOptions.fission


class SizeParam(click.ParamType):
    """A size in bytes: `4GiB`, `512MiB`, `1048576` (`fuseopt.interp.limits.parse_size`)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def limit_options(fn: F) -> F:
    """`--max-memory` and `--max-points` (`fuseopt.interp.Limits`), as `run` and `bench` take them:
    checked before anything is allocated."""
    fn = click.option(
        "--max-points",
        type=click.IntRange(min=1),
        default=DEFAULT_LIMITS.max_points,
        show_default=True,
        help="Refuse (exit 2) a graph whose loop boxes have more points in all (numel x rnumel, summed over nodes).",
    )(fn)
    fn = click.option(
        "--max-memory",
        type=SizeParam(),
        default="4GiB",
        show_default=True,
        help="Refuse (exit 2) a graph whose buffer storage, inputs included, is larger (bytes, or KiB/MiB/GiB/TiB).",
    )(fn)
    return fn


def planning_options(fn: F) -> F:
    fn = click.option(
        "--no-loop-order/--loop-order",
        "no_loop_order",
        default=None,
        help="Turn the loop-order unification pass off (or on). Default: the graph's meta.loop_order, else on.",
    )(fn)
    fn = click.option(
        "--max-fusion-size",
        type=click.IntRange(1, MAX_FUSION_SIZE_LIMIT),
        default=None,
        help="Most nodes in one kernel (Inductor's max_fusion_size). Default: the graph's "
        "meta.max_fusion_size, else 64.",
    )(fn)
    fn = click.option(
        "--scoring",
        type=click.Choice(SCORINGS),
        default=None,
        help="stable: order-independent; inductor: Inductor's score_fusion, list order included. "
        "Default: the graph's meta.scoring, else stable.",
    )(fn)
    return fn


def given(scoring: str | None, max_fusion_size: int | None, no_loop_order: bool | None) -> dict[str, Any]:
    """The planning options the command line gave (None: not given), by Options field."""
    return {
        "scoring": scoring,
        "max_fusion_size": max_fusion_size,
        "loop_order": None if no_loop_order is None else not no_loop_order,
    }


def options_from(scoring: str | None, max_fusion_size: int | None, no_loop_order: bool | None) -> Options:
    """The command line's options over the defaults, for commands without one graph's meta."""
    return resolve_options({}, given(scoring, max_fusion_size, no_loop_order)).options


def graph_options(
    graph: Graph, scoring: str | None, max_fusion_size: int | None, no_loop_order: bool | None
) -> Resolved:
    """The options to plan `graph` with: the command line, else its meta, else the defaults."""
    return resolve_options(graph.meta, given(scoring, max_fusion_size, no_loop_order))
