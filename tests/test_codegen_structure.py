"""The structure issue #25 asks of fuseopt/codegen/: no import cycle among its modules, no module
importing another's private names, no file over 500 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODEGEN = ROOT / "fuseopt" / "codegen"


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(CODEGEN.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = ast.parse(path.read_text(encoding="utf-8"))
    return out


def _imports(tree: ast.Module) -> list[tuple[str, list[str]]]:
    """(module, names) of each module-level `from ... import` and `import` (TYPE_CHECKING blocks
    and imports inside functions run later, so they cannot make a cycle at import time)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((a.name, []) for a in node.names)
    return found


def test_codegen_modules_import_no_cycle() -> None:
    modules = _modules()
    edges: dict[str, set[str]] = {}
    for name, tree in modules.items():
        deps = set()
        for module, names in _imports(tree):
            if module in modules:
                deps.add(module)
            deps.update(f"{module}.{n}" for n in names if f"{module}.{n}" in modules)
        edges[name] = deps - {name}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(edges[node]):
            if state.get(dep) == 1:
                cycle = path[path.index(dep) :] + [dep] if dep in path else [node, dep]
                raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            if dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])


def test_no_module_imports_another_s_private_names() -> None:
    bad = []
    for name, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fuseopt"):
                bad.extend(f"{name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_"))
    assert not bad, bad


def test_no_codegen_file_over_500_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in CODEGEN.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert not long, long
