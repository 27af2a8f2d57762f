"""Reading plan.json files (docs/format.md "Plans") for `diff-jit-aot --plans`.

Pydantic models check the structure (fields docs/format.md requires must exist with the right types;
more fields are welcome and ignored); then the plan is checked as a whole (every node in exactly
one kernel, unique kernel names, decisions numbered 0.. and naming known nodes). Every problem is
an `InputError` with a JSON pointer and, where known, line:col.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fuseopt.errors import Diagnostic, InputError
from fuseopt.io.files import read_regular_file
from fuseopt.io.load import MAX_FILE_BYTES, parse_text
from fuseopt.io.locate import Positions
from fuseopt.plan import Decision, Kernel, Plan

NonNegInt = Annotated[int, Field(ge=0, strict=True)]
Loop = tuple[str, Annotated[int, Field(ge=1, strict=True)]]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class KernelModel(_Model):
    name: Annotated[str, Field(min_length=1)]
    nodes: tuple[Annotated[str, Field(min_length=1)], ...] = Field(min_length=1)
    kind: str
    loops: tuple[Loop, ...]
    reduce: tuple[Loop, ...]
    bytes: NonNegInt


class DecisionModel(_Model):
    step: NonNegInt
    pair: tuple[str, str]
    action: str
    score: dict[str, Any]
    round: NonNegInt = 0
    kind: str = ""


class PlanModel(_Model):
    format: Literal["fuseopt-plan/1", "fuseopt-plan/2"]  # /2 = fuseopt.plan.PLAN_FORMAT
    graph: str
    graph_sha256: str = ""
    options: dict[str, Any] = Field(default_factory=dict)
    kernels: tuple[KernelModel, ...]
    decisions: tuple[DecisionModel, ...]
    metrics: dict[str, int]


def _pointer(loc: tuple[int | str, ...]) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in loc) if loc else ""


def _semantic(model: PlanModel, file: str) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    where: dict[str, int] = {}
    names: set[str] = set()
    for i, k in enumerate(model.kernels):
        if k.name in names:
            diags.append(Diagnostic(f"duplicate kernel name {k.name!r}", f"/kernels/{i}/name", file))
        names.add(k.name)
        for j, n in enumerate(k.nodes):
            if n in where:
                other = model.kernels[where[n]].name
                diags.append(
                    Diagnostic(
                        f"node {n!r} is in kernels {other!r} and {k.name!r}", f"/kernels/{i}/nodes/{j}", file
                    )
                )
            where[n] = i
    for i, d in enumerate(model.decisions):
        if d.step != i:
            diags.append(
                Diagnostic(
                    f"decision {i} has step {d.step}; steps count 0, 1, ...", f"/decisions/{i}/step", file
                )
            )
        for j, n in enumerate(d.pair):
            if n not in where:
                diags.append(
                    Diagnostic(
                        f"decision names node {n!r}, which no kernel holds", f"/decisions/{i}/pair/{j}", file
                    )
                )
    return diags


def to_plan(model: PlanModel) -> Plan:
    kernels = tuple(
        Kernel(k.name, k.nodes, k.kind, tuple(k.loops), tuple(k.reduce), k.bytes) for k in model.kernels
    )
    decisions = tuple(Decision(d.step, d.pair, d.action, d.score, d.round, d.kind) for d in model.decisions)
    return Plan(
        model.graph,
        model.graph_sha256,
        kernels,
        decisions=decisions,
        metrics=model.metrics,
        options=model.options,
    )


def plan_from_text(text: str, file: str = "<plan>") -> Plan:
    data = parse_text(text, file)
    if not isinstance(data, dict):
        raise InputError([Diagnostic("a plan file must hold a JSON object", "", file, code="type")])
    positions = Positions(text)  # one parse of the text for every diagnostic's line:column
    try:
        model = PlanModel.model_validate(data)
    except ValidationError as exc:
        diags = []
        for err in exc.errors(include_url=False):
            msg = "field required by the plan format" if err["type"] == "missing" else err["msg"]
            diags.append(Diagnostic(msg, _pointer(tuple(err["loc"])), file, code=str(err["type"])))
        raise InputError([_located(d, positions) for d in diags]) from None
    problems = _semantic(model, file)
    if problems:
        raise InputError([_located(d, positions) for d in problems])
    return to_plan(model)


def _located(d: Diagnostic, positions: Positions) -> Diagnostic:
    if not d.pointer:
        return d
    pos = positions.at(d.pointer)
    return d if pos is None else d.with_location(line=pos[0], column=pos[1])


def load_plan(path: str) -> Plan:
    """Read and check a plan.json file; raises InputError with located diagnostics."""
    raw = read_regular_file(path, MAX_FILE_BYTES)  # a FIFO would block: regular files only
    if len(raw) > MAX_FILE_BYTES:
        raise InputError([Diagnostic("plan file is larger than 16 MiB", "", path, code="limit")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            [Diagnostic(f"file is not UTF-8 (byte {exc.start})", "", path, code="encoding")]
        ) from None
    return plan_from_text(text, path)
