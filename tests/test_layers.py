"""Dependencies point one way: each layer imports only the layers below it (ARCHITECTURE.md).

Scans every module's imports (including those inside functions) with `ast`, so a lazy import
cannot sneak a dependency past the rule.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "nepotism"

#: every top-level module and subpackage of nepotism (the package's own __init__ is its facade)
EVERYTHING = {p.name.removesuffix(".py") for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()} - {
    "__init__"
}


def _only(*allowed: str) -> set[str]:
    return EVERYTHING - set(allowed)


#: layer -> the nepotism subpackages/modules it must never import
FORBIDDEN = {
    "errors": _only(),
    "_malloc": _only(),
    "_loop": _only(),
    "_gc": _only(),
    "_files": _only("errors", "_process", "input_limits"),
    "_process": _only(),
    "input_limits": _only("errors"),
    "_frozen": _only(),
    "votes": _only(),
    "data": _only(),
    "gpt2_tokens": _only(),
    "table_records": _only("errors", "records", "tables", "_files"),
    "simulate": _only("errors", "records", "tables", "_files"),
    "annotate": _only("errors", "records", "tables", "_files", "metrics", "store", "votes", "models", "credentials"),
    "testing": _only("errors", "records", "tables", "_files", "credentials", "_loop"),
    "cli": set(),  # the top: commands parse arguments and print
    "credentials": {
        "records",
        "tables",
        "models",
        "backends",
        "store",
        "judging",
        "runner",
        "grading",
        "metrics",
        "analyses",
        "report",
        "cli",
        "leakage",
        "mitigations",
        "annotate",
        "experiment",
        "importers",
    },
    "extras": {
        "records",
        "tables",
        "models",
        "backends",
        "store",
        "judging",
        "runner",
        "grading",
        "metrics",
        "analyses",
        "report",
        "cli",
        "leakage",
        "mitigations",
        "annotate",
        "experiment",
        "importers",
        "credentials",
    },
    "run_folder": {
        "models",
        "backends",
        "store",
        "judging",
        "runner",
        "grading",
        "metrics",
        "analyses",
        "report",
        "cli",
        "leakage",
        "mitigations",
        "annotate",
        "experiment",
        "importers",
    },
    "records": {
        "models",
        "backends",
        "store",
        "judging",
        "runner",
        "grading",
        "metrics",
        "analyses",
        "report",
        "cli",
        "leakage",
        "mitigations",
        "annotate",
    },
    "api": {"cli"},
    "results": {
        "records",
        "tables",
        "models",
        "backends",
        "store",
        "judging",
        "runner",
        "grading",
        "metrics",
        "analyses",
        "report",
        "cli",
        "leakage",
        "mitigations",
        "annotate",
        "importers",
        "experiment",
        "sandbox",
    },
    "datasets": {
        "models",
        "backends",
        "store",
        "judging",
        "runner",
        "grading",
        "metrics",
        "analyses",
        "report",
        "cli",
        "leakage",
        "mitigations",
        "annotate",
        "api",
    },
    "tables": {
        "models",
        "backends",
        "store",
        "judging",
        "runner",
        "grading",
        "metrics",
        "analyses",
        "report",
        "cli",
        "leakage",
        "mitigations",
        "annotate",
    },
    "models": {
        "backends",
        "store",
        "judging",
        "runner",
        "metrics",
        "analyses",
        "report",
        "cli",
        "leakage",
        "mitigations",
        "annotate",
    },
    "backends": {
        "store",
        "judging",
        "runner",
        "metrics",
        "analyses",
        "report",
        "cli",
        "leakage",
        "mitigations",
        "annotate",
        "grading",
    },
    "store": {"judging", "runner", "metrics", "analyses", "report", "cli", "leakage", "mitigations", "grading"},
    "judging": {"store", "runner", "metrics", "analyses", "report", "cli", "leakage", "mitigations", "annotate"},
    "metrics": {
        "store",
        "backends",
        "judging",
        "runner",
        "analyses",
        "report",
        "cli",
        "leakage",
        "mitigations",
        "annotate",
        "grading",
    },
    "sandbox": {"store", "backends", "judging", "runner", "metrics", "analyses", "report", "cli", "models"},
    "grading": {"runner", "analyses", "report", "cli", "judging", "leakage", "mitigations"},
    "runner": {"analyses", "report", "cli", "leakage", "mitigations", "annotate"},
    "analyses": {"cli", "runner", "backends", "report"},  # the report draws results; analyses make them
    "report": {"cli", "runner", "backends"},
    "experiment": {"runner", "analyses", "report", "cli", "leakage", "mitigations", "annotate", "api"},
    "leakage": {"report", "cli", "api"},
    "mitigations": {"report", "cli", "api"},
    "importers": {
        "analyses",
        "runner",
        "report",
        "cli",
        "backends",
        "store",
        "judging",
        "metrics",
        "leakage",
        "mitigations",
        "annotate",
        "grading",
    },
}


def _layer(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py")


def _imported(path: Path, text: str | None = None) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.ImportFrom):  # relative: resolve against the module's own package
            package = ["nepotism", *path.relative_to(PACKAGE).parent.parts]
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            names.add(".".join(base + ([node.module] if node.module else [])))
    return {n.split(".")[1] for n in names if n.startswith("nepotism.") and len(n.split(".")) > 1}


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if _layer(p) in FORBIDDEN)


def test_every_module_and_package_has_a_declared_layer():
    assert EVERYTHING - set(FORBIDDEN) == set(), "add the new module to FORBIDDEN (and ARCHITECTURE.md)"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layer_imports_point_down(path):
    bad = (_imported(path) - {_layer(path)}) & FORBIDDEN[_layer(path)]
    assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}, above its layer"


def test_relative_and_lazy_imports_are_seen():
    where = PACKAGE / "leakage" / "pipeline.py"
    assert _imported(where, "from ..report import full\n") == {"report"}
    assert _imported(where, "def f():\n    from .audit import x\n") == {"leakage"}
    assert _imported(PACKAGE / "metrics" / "pairwise.py", "from . import bootstrap\n") == {"metrics"}


def _module_name(path: Path) -> str:
    parts = ["nepotism", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_edges() -> dict[str, set[str]]:
    """Module → the nepotism modules it imports (anywhere in it), package __init__ files left out."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    package = name.split(".")[: -node.level]
                    base = ".".join(package + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        edges[name] = {t for t in targets if t in modules and t != name}
    return edges


def test_no_import_cycles_between_modules():
    edges = _module_edges()
    state: dict[str, int] = {}
    cycles = []

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def _package_graph(planted: dict[Path, str] | None = None) -> dict[str, set[str]]:
    """Package (or top-level module) → the others it imports anywhere in any of its modules;
    ``planted`` appends source text to a module first (for the test that the check can fail)."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        layer = _layer(path)
        if layer in ("__init__", "data"):
            continue
        text = path.read_text(encoding="utf-8") + (planted or {}).get(path, "")
        graph.setdefault(layer, set()).update(_imported(path, text) - {layer})
    return graph


def _package_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk meets (each as the packages around it, the first repeated)."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return cycles


def test_no_import_cycle_between_packages():
    """Whatever the layers allow, two packages never import each other, even through a third
    or inside a function (api <-> report was one)."""
    cycles = _package_cycles(_package_graph())
    assert not cycles, "import cycles between packages: " + "; ".join(" -> ".join(c) for c in cycles)


def test_a_planted_cycle_between_packages_is_seen():
    planted = {
        PACKAGE / "report" / "summary.py": "\n\ndef _planted():\n    from nepotism.api import audit\n",
        PACKAGE / "api.py": "\n\ndef _planted():\n    import nepotism.report.summary\n",
    }
    cycles = _package_cycles(_package_graph(planted))
    assert any(set(cycle) == {"api", "report"} for cycle in cycles), cycles


#: Imports of another package's private names that are being removed elsewhere (issue 37, item 1:
#: the audit and the suite are to call the metrics' public definitions instead of their private
#: sums and batched copies). (importing file, module, name); the test fails when one is gone, so
#: the list shrinks with the code. Nothing may be added to it.
PRIVATE_IMPORTS_BEING_REMOVED = {
    ("analyses/audit.py", "nepotism.metrics._batch", "ClusterSetBatch"),
    ("analyses/audit.py", "nepotism.metrics._common", "checked"),
    ("analyses/audit.py", "nepotism.metrics._common", "undefined"),
    ("analyses/audit.py", "nepotism.metrics._estimate", "Estimate"),
    ("analyses/cases.py", "nepotism.metrics._suite_tables", "_reference_scores"),
    ("analyses/comparisons.py", "nepotism.metrics._estimate", "Estimate"),
    ("analyses/per_evaluatee.py", "nepotism.metrics._estimate", "Estimate"),
    ("analyses/stream.py", "nepotism.metrics._common", "undefined"),
    ("analyses/suite.py", "nepotism.metrics._batch", "ClusterSetBatch"),
    ("analyses/suite.py", "nepotism.metrics._common", "undefined"),
    ("analyses/suite.py", "nepotism.metrics._suite_recognition", "association_records"),
    ("analyses/suite.py", "nepotism.metrics._suite_recognition", "perplexity_records"),
    ("analyses/suite.py", "nepotism.metrics._suite_recognition", "recognition_records"),
    ("analyses/suite.py", "nepotism.metrics._suite_tables", "pairwise_rank_records"),
    ("analyses/suite.py", "nepotism.metrics._suite_tables", "pointwise_records"),
    ("analyses/suite.py", "nepotism.metrics._suite_tables", "rubric_records"),
}


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _private_imports(path: Path, text: str | None = None) -> set[tuple[str, str, str]]:
    """The (file, module, name) of each import in ``path`` of a name private to another package:
    a module or name starting with ``_`` inside a package other than the file's own (``name`` is
    "" for ``import a.b``). Top-level private modules (`nepotism._files`, ...) belong to the whole
    package and may be imported anywhere; their private names may not."""
    own, where = _layer(path), str(path.relative_to(PACKAGE))
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8") if text is None else text)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            pairs = [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            pairs = [(alias.name, "") for alias in node.names]
        else:  # a relative import stays inside its package
            continue
        for module, name in pairs:
            parts = module.split(".")
            if parts[0] != "nepotism" or len(parts) < 2 or parts[1].removesuffix(".py") == own:
                continue
            if any(_private(p) for p in parts[2:]) or _private(name):
                found.add((where, module, name))
    return found


def test_no_module_imports_a_name_private_to_another_package():
    found = set().union(*(_private_imports(p) for p in PACKAGE.rglob("*.py") if _layer(p) != "data"))
    new = found - PRIVATE_IMPORTS_BEING_REMOVED
    assert not new, "private names imported across packages (make them public where they are defined): " + "; ".join(
        f"{f}: from {m} import {n}" for f, m, n in sorted(new)
    )
    gone = PRIVATE_IMPORTS_BEING_REMOVED - found
    assert not gone, f"no longer imported, delete from PRIVATE_IMPORTS_BEING_REMOVED: {sorted(gone)}"


def test_private_imports_are_seen_inside_functions_and_through_private_modules():
    where = PACKAGE / "runner" / "grade_step.py"
    text = (
        "def f():\n    from nepotism.importers._common import read_jsonl\n"
        "import nepotism.backends._inprocess\nfrom nepotism.tables import _x\n"
        "from nepotism._files import atomic_write\nfrom nepotism.runner._replay import y\n"
    )
    assert _private_imports(where, text) == {
        ("runner/grade_step.py", "nepotism.importers._common", "read_jsonl"),
        ("runner/grade_step.py", "nepotism.backends._inprocess", ""),
        ("runner/grade_step.py", "nepotism.tables", "_x"),
    }
