"""The package's layers: every import of src/socsim read from the source (module-level, function-level and
type-only alike), no import circle between modules, and every arrow between the package's parts points down
its floors (docs/architecture.md, "Floors")."""

from __future__ import annotations

import ast
from pathlib import Path

from support.project import ROOT

SRC = ROOT / "src"

# Bottom to top. A part may import parts on lower floors only (within a part, modules import each other
# freely, without a circle). The studies' packages sit above the contract they implement and below the
# registry that lists them.
FLOORS: list[set[str]] = [
    {"canonical", "seeds", "progress", "legacy"},
    {"config", "stats"},
    {"io", "llm", "planted"},
    {"models", "sim"},
    {"serving"},
    {"runtime"},
    {"preflight", "stages"},
    {"context"},
    {"facilitation", "coherence", "opinion_dynamics", "debate"},
    {"studies"},
    {"workflow", "plan", "limits", "scorecard"},
    {"dvc", "rocrate"},
    {"cli"},
]
# The LLM layer knows no params and no registry: what it may import besides itself.
LLM_MAY_IMPORT = {"canonical", "progress", "seeds"}


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(src: Path = SRC) -> dict[str, set[str]]:
    """Module -> the socsim modules it imports anywhere in its source (a name imported from a package is the
    package's submodule of that name when there is one, else the package)."""
    files = {module_name(p, src): p for p in (src / "socsim").rglob("*.py")}
    out: dict[str, set[str]] = {}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names}
        out[mod] = {m for m in found if m in files and m != mod and m != "socsim"}
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def part(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_no_import_circle():
    assert circles(imports()) == []


def test_every_arrow_points_down_the_floors():
    floor = {p: i for i, names in enumerate(FLOORS) for p in names}
    graph = imports()
    parts = {part(m) for m in graph if m != "socsim"}
    assert parts == set(floor), (
        f"parts without a floor: {sorted(parts - set(floor))}; gone: {sorted(set(floor) - parts)}"
    )
    upward = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        if part(m) != part(t) and floor[part(t)] >= floor[part(m)]
    )
    assert upward == [], "imports that do not point down the floors:\n  " + "\n  ".join(upward)
    llm = sorted(
        f"{m} -> {t}"
        for m, ts in graph.items()
        if part(m) == "llm"
        for t in ts
        if part(t) not in {"llm"} | LLM_MAY_IMPORT
    )
    assert llm == [], "the LLM layer imports params or the registry:\n  " + "\n  ".join(llm)


def test_the_checks_find_a_circle_and_an_upward_arrow(tmp_path):
    """The reader on a package made for it: a function-level import closing a circle and a type-only upward
    import are both found."""
    pkg = tmp_path / "socsim"
    (pkg / "llm").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "llm" / "__init__.py").write_text("from socsim.llm.client import X\n")
    (pkg / "llm" / "client.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from socsim.models import Spec\nX = 1\n"
    )
    (pkg / "models.py").write_text("def f():\n    from socsim import llm\n    return llm\n")
    (pkg / "config.py").write_text("def g():\n    from . import models\n")
    graph = imports(tmp_path)
    assert graph["socsim.llm.client"] == {"socsim.models"} and graph["socsim.config"] == {"socsim.models"}
    assert circles(graph) == [["socsim.llm", "socsim.llm.client", "socsim.models"]]


# The planted control is a model like any other to the studies: the reader rule is the registry's
# (socsim.models.reader_of). One study module still imports it, named here: DEBATE's planted humans write in the
# planted model's vocabulary (open: they belong with the control's materials).
STUDY_IMPORTS_OF_PLANTED = {"socsim.debate.planted_humans"}


def test_no_study_module_imports_the_planted_control():
    studies = {"facilitation", "coherence", "opinion_dynamics", "debate"}
    found = {mod for mod, deps in imports().items() if part(mod) in studies and any(part(d) == "planted" for d in deps)}
    assert found == STUDY_IMPORTS_OF_PLANTED


def test_a_model_served_on_the_planted_engine_reads_itself_and_no_other_does():
    from socsim.models import reader_of, reads_itself

    registry = {
        "planted": {"backend": "openai", "serve": {"engine": "planted", "model": "planted"}},
        "qwen": {"backend": "openai", "serve": {"engine": "vllm", "model": "Qwen/Qwen2.5-7B-Instruct"}},
        "smollm2-135m": {"backend": "embedded"},
    }
    assert [reads_itself(registry[m]) for m in registry] == [True, False, False]
    assert reader_of(registry, "planted", "judge") == "planted"
    assert reader_of(registry, "qwen", "judge") == reader_of(registry, "smollm2-135m", "judge") == "judge"
    assert reader_of(registry, "not-in-the-registry", "judge") == "judge"
