"""The r loops of a looped reduction, from the kernel IR: which loop each node runs in, and after
which loop each epilogue runs. A value that needs a finished reduction opens the next loop; a
sum computed online (`online_softmax`, `online_variance`) runs in the loop of what it reads.
The emitter prints these loops; the cost model (`codegen.cost`) counts what each reads."""

from __future__ import annotations

from fuseopt.analysis.access_match import FusedReadMismatch
from fuseopt.codegen.online_softmax import online_operand
from fuseopt.codegen.online_variance import is_variance_sum, variance_operand
from fuseopt.codegen.schedule import ComputeLaunch
from fuseopt.ir.expr import Expr, Reduce

Online = dict[str, tuple[Expr, str]]


def online_sums(launch: ComputeLaunch) -> Online:
    """Sums that run online in the loop of the reduction they read (for a looped reduction; a
    persistent one has no loops to save): each sum of `exp(F - max(F))` with its F and its max's
    node (`online_softmax`), each sum of `(F - mean(F))**2` with its F and its mean's node
    (`online_variance`)."""
    produced = launch.producer()
    out: Online = {}
    for p in launch.placements:
        op = online_operand(p, produced) or variance_operand(p, produced)
        if op is not None:
            out[p.node.name] = op
    return out


def accumulators(launch: ComputeLaunch, online: Online) -> int:
    """A looped tile's accumulators a lane, summed over its reductions: three for an online
    variance (`online_variance`: Welford's count, mean and squared deviations), two for an
    argmax/argmin (its value and its int32 position), one for any other (an online softmax's
    running maximum is a row's, [XBLOCK, 1])."""
    return sum(_held(p.node.value, p.node.name in online) for p in launch.placements if p.role == "reduction")


def _held(value: object, online: bool) -> int:
    if not isinstance(value, Reduce):
        return 0
    if online and is_variance_sum(value):
        return 3
    return 2 if value.op in ("argmax", "argmin") else 1


def phases(launch: ComputeLaunch, online: Online) -> tuple[dict[str, int], dict[str, int]]:
    """Which r loop each inner/reduction node runs in and after which loop each epilogue runs."""
    produced = launch.producer()
    phase: dict[str, int] = {}
    post: dict[str, int] = {}
    for p in launch.placements:
        deps = [produced[b] for b in p.node.read_buffers() if b in produced]
        if p.role == "epilogue":
            k = 0
            for d in deps:
                if d.role == "inner":  # `match_read` refuses this: a planner bug
                    raise FusedReadMismatch(
                        f"plan kernel {launch.plan_kernel!r}: epilogue {p.node.name!r} reads "
                        f"{d.node.output!r}, a value of the reduction loop"
                    )
                k = max(k, phase[d.node.name] if d.role == "reduction" else post[d.node.name])
            post[p.node.name] = k
        else:
            k = 0
            sum_of = online.get(p.node.name)
            for d in deps:
                if sum_of is not None and d.node.name == sum_of[1]:
                    continue  # an online sum keeps its own maximum or mean: that one's loop
                if d.role == "reduction":
                    k = max(k, phase[d.node.name] + 1)
                elif d.role == "epilogue":
                    k = max(k, post[d.node.name] + 1)
                else:
                    k = max(k, phase[d.node.name])
            phase[p.node.name] = k
    return phase, post
