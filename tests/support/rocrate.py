"""Checks of an RO-Crate that `socsim rocrate` wrote, independent of the code that wrote it:

- `validate`: the RO-Crate validator (roc-validator, CRS4) against a profile (Workflow Run Crate 0.5, Provenance
  Run Crate 0.5 with every profile they extend: Process Run Crate, Workflow RO-Crate 1.0, RO-Crate 1.1), run
  offline. The validator reads the crate as JSON-LD, which needs the RO-Crate 1.1 context; this machine reaches
  no host of it, so the context is served from the copy ro-crate-py 0.15 ships (its RO-Crate 1.1.0 context) and
  every other request fails: the URLs asked for are returned, so a test sees that nothing else was needed.
- `structure`: what RO-Crate 1.1 and the Workflow Run Crate ask of the graph, checked directly on the JSON: the
  context, the metadata descriptor, the root, the profiles, a flat graph whose every reference resolves, every
  file described with a path in the crate and its sha256 and size right, every file of the folder described.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import requests
import requests.adapters

CONTEXT_URL = "https://w3id.org/ro/crate/1.1/context"
WORKFLOW_RUN = "https://w3id.org/ro/wfrun/workflow/0.5"
PROCESS_RUN = "https://w3id.org/ro/wfrun/process/0.5"
PROVENANCE_RUN = "https://w3id.org/ro/wfrun/provenance/0.5"
WORKFLOW_RO_CRATE = "https://w3id.org/workflowhub/workflow-ro-crate/1.0"


def context_1_1() -> bytes:
    """The RO-Crate 1.1 JSON-LD context, as ro-crate-py 0.15 ships it (its `@id` says which one it is)."""
    data = (importlib.resources.files("rocrate") / "data" / "ro-crate.jsonld").read_bytes()
    assert json.loads(data)["@id"] == CONTEXT_URL, "ro-crate-py ships another context: pin rocrate==0.15.0"
    return data


@contextmanager
def offline() -> Iterator[list[str]]:
    """No network but the RO-Crate 1.1 context (served from the local copy); yields the URLs asked for."""
    asked: list[str] = []
    context = context_1_1()

    def send(adapter: Any, request: requests.PreparedRequest, **_: Any) -> requests.Response:
        url = str(request.url)
        asked.append(url)
        if url.rstrip("/") != CONTEXT_URL:
            raise requests.ConnectionError(f"offline: {url}")
        response = requests.Response()
        response.status_code, response.url, response.request = 200, url, request
        response._content = context
        response.headers["Content-Type"] = "application/ld+json"
        return response

    def urlopen(url: Any, *_: Any, **__: Any) -> Any:
        asked.append(str(getattr(url, "full_url", url)))
        raise OSError(f"offline: {url}")

    saved = requests.adapters.HTTPAdapter.send, urllib.request.urlopen
    requests.adapters.HTTPAdapter.send, urllib.request.urlopen = send, urlopen  # type: ignore[method-assign,assignment]
    try:
        yield asked
    finally:
        requests.adapters.HTTPAdapter.send, urllib.request.urlopen = saved  # type: ignore[method-assign]


def validate(crate: Path, profile: str, severity: str = "REQUIRED") -> tuple[list[str], list[str]]:
    """The validator's issues at `severity` and above against `profile` (e.g. "workflow-run-crate-0.5"), and the
    URLs it asked for."""
    from rocrate_validator import services

    with offline() as asked:
        settings = services.ValidationSettings(
            rocrate_uri=str(crate), profile_identifier=profile, requirement_severity=severity, no_cache=True
        )
        result = services.validate(settings)
    issues = [f"{i.severity.name} {i.check.identifier}: {i.message} [{i.violatingEntity}]" for i in result.get_issues()]
    assert result.passed() == (not issues), issues
    return issues, sorted(set(asked))


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        assert set(value) == {"@id"}, f"a nested entity (the graph must be flat): {value}"
        yield value["@id"]
    elif isinstance(value, list):
        for v in value:
            yield from _refs(v)


def _types(entity: dict[str, Any]) -> set[str]:
    t = entity.get("@type", [])
    return {t} if isinstance(t, str) else set(t)


def _absolute(ref: str) -> bool:
    return "://" in ref


def structure(crate: Path) -> list[str]:
    """What is wrong with the crate's graph and files (empty: nothing)."""
    doc = json.loads((crate / "ro-crate-metadata.json").read_text(encoding="utf-8"))
    problems: list[str] = []
    context = doc.get("@context")
    first = context[0] if isinstance(context, list) else context
    if first != CONTEXT_URL:
        problems.append(f"@context does not start with {CONTEXT_URL}: {context}")
    graph = doc.get("@graph", [])
    ids = [e.get("@id") for e in graph]
    by_id = {e["@id"]: e for e in graph}
    problems += [f"two entities {i}" for i in sorted({i for i in ids if ids.count(i) > 1})]
    problems += _descriptor_and_root(by_id)
    for e in graph:
        for key, value in e.items():
            if key.startswith("@"):
                continue
            try:
                refs = list(_refs(value))
            except AssertionError as exc:
                problems.append(f"{e['@id']}.{key}: {exc}")
                continue
            problems += [
                f"{e['@id']}.{key} -> {r}: no such entity" for r in refs if not _absolute(r) and r not in by_id
            ]
    problems += _files(crate, by_id)
    return problems


def _descriptor_and_root(by_id: dict[str, dict[str, Any]]) -> list[str]:
    problems = []
    meta = by_id.get("ro-crate-metadata.json", {})
    if "CreativeWork" not in _types(meta) or meta.get("about") != {"@id": "./"}:
        problems.append("no metadata descriptor (CreativeWork about ./)")
    if "https://w3id.org/ro/crate/1.1" not in set(_refs(meta.get("conformsTo", []))):
        problems.append("the descriptor does not conform to RO-Crate 1.1")
    root = by_id.get("./", {})
    if "Dataset" not in _types(root):
        problems.append("no root Dataset")
    problems += [f"the root has no {k}" for k in ("name", "description", "datePublished", "license") if not root.get(k)]
    profiles = set(_refs(root.get("conformsTo", [])))
    problems += [
        f"the root does not conform to {p}" for p in sorted({WORKFLOW_RUN, PROCESS_RUN, WORKFLOW_RO_CRATE} - profiles)
    ]
    main = by_id.get(next(_refs(root.get("mainEntity", {"@id": "?"}))), {})
    if not {"File", "SoftwareSourceCode", "ComputationalWorkflow"} <= _types(main):
        problems.append(f"the main workflow is not File, SoftwareSourceCode and ComputationalWorkflow: {main}")
    language = by_id.get(next(_refs(main.get("programmingLanguage", {"@id": "?"}))), {})
    if "ComputerLanguage" not in _types(language) or language.get("name") != "Snakemake":
        problems.append(f"the workflow's language is not Snakemake: {language}")
    runs = [
        e for e in by_id.values() if "CreateAction" in _types(e) and e.get("instrument") == {"@id": main.get("@id")}
    ]
    if not runs:
        problems.append("no CreateAction of the main workflow")
    mentioned = set(_refs(root.get("mentions", [])))
    problems += [f"{r['@id']} not in the root's mentions" for r in runs if r["@id"] not in mentioned]
    return problems


def _files(crate: Path, by_id: dict[str, dict[str, Any]]) -> list[str]:
    """Every File a path in the crate with its sha256 and size; every file in the folder described and reachable
    from the root (directly or through a Dataset)."""
    problems = []
    reachable, todo = set(), ["./"]
    while todo:
        for ref in _refs(by_id.get(todo.pop(), {}).get("hasPart", [])):
            if ref not in reachable:
                reachable.add(ref)
                todo.append(ref)
    for eid, e in by_id.items():
        if not {"File", "Dataset"} & _types(e) or eid == "./" or _absolute(eid):
            continue
        path = crate / unquote(eid)
        if "File" in _types(e):
            if not path.is_file():
                problems.append(f"{eid}: no such file in the crate")
                continue
            data = path.read_bytes()
            if e.get("sha256") != hashlib.sha256(data).hexdigest() or e.get("contentSize") != str(len(data)):
                problems.append(f"{eid}: sha256 or contentSize differ from the file")
        elif not path.is_dir():
            problems.append(f"{eid}: no such folder in the crate")
        if eid not in reachable:
            problems.append(f"{eid}: not reachable from the root's hasPart")
    on_disk = {p.relative_to(crate).as_posix() for p in crate.rglob("*") if p.is_file()} - {"ro-crate-metadata.json"}
    described = {unquote(i) for i, e in by_id.items() if "File" in _types(e)}
    problems += [f"{f}: in the crate, not described" for f in sorted(on_disk - described)]
    return problems
