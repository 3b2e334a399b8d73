"""The lease on the run's own server is a backend wrapper: the client of a served model holds it, its
calls go to the lease's URL, and the stage's runtime drops it when the job ends."""

from __future__ import annotations

import pytest

from socsim import config, studies
from socsim.llm.server import ServerBackend
from socsim.runtime import ModelRuntime
from socsim.serving import Lease, LeasedBackend, leases


class Beat:
    stopped = 0

    def stop(self) -> None:
        Beat.stopped += 1


def test_a_served_models_client_holds_its_lease_in_its_backend(monkeypatch):
    params = config.validate(
        {"models": {"m": {"backend": "openai", "model_id": "x", "serve": {"engine": "vllm"}}, "e": {}}}
    )
    taken: list[str] = []

    def acquire(spec):
        taken.append(spec.name)
        return Lease(spec.name, "http://127.0.0.1:9", "SOCSIM_RUN_KEY", {"engine": "vllm"}, Beat())  # type: ignore[arg-type]

    monkeypatch.setattr(leases, "acquire", acquire)
    Beat.stopped = 0
    rt = ModelRuntime(params, "toy.stage", lambda: {"m": "models", "e": "models"}, lambda: None)
    client = rt.client("m", "here")
    assert taken == ["m"] and isinstance(client.backend, LeasedBackend)
    inner = client.backend.inner
    assert isinstance(inner, ServerBackend)
    assert inner.endpoint_urls == ["http://127.0.0.1:9"]  # calls go to the lease's URL, with its key
    assert [s.api_key_env for s in inner.specs] == ["SOCSIM_RUN_KEY"]
    inner.retries = 3
    assert client.backend.retries == 3  # the wrapper passes on what the client reads of its backend
    assert client.backend.record == {"engine": "vllm"}
    rt.client("e", "here")  # an unserved model takes no lease
    assert taken == ["m"] and rt.servers() == {}  # nothing answered yet: no server record
    rt.close()
    assert Beat.stopped == 1


def test_a_lease_is_dropped_when_its_client_cannot_be_made(monkeypatch):
    params = config.validate({"models": {"m": {"backend": "openai", "model_id": "x", "serve": {"engine": "vllm"}}}})
    monkeypatch.setattr(leases, "acquire", lambda spec: Lease("m", "http://127.0.0.1:9", None, {}, Beat()))  # type: ignore[arg-type]

    def broken(*a, **kw):
        raise RuntimeError("no backend")

    monkeypatch.setattr("socsim.models.client", broken)
    Beat.stopped = 0
    with pytest.raises(RuntimeError, match="no backend"):
        ModelRuntime(params, "toy.stage", lambda: {"m": "models"}, lambda: None).client("m", "here")
    assert Beat.stopped == 1


def backend_members() -> list[str]:
    """socsim.llm.client.Backend's members (its calls and its optional capabilities), read from the protocol."""
    from socsim.llm.client import Backend

    return sorted(n for n in vars(Backend) if not n.startswith("_"))


def test_every_backend_declares_the_whole_interface_and_the_lease_forwards_each_part():
    from socsim.llm.counting import PlanBackend
    from socsim.llm.embedded import EmbeddedBackend
    from socsim.llm.replay import ReplayBackend

    members = backend_members()
    assert {"retries", "name", "engine", "canaried", "replayed_from", "endpoint_stats", "canary_of"} <= set(members)
    for cls in (ServerBackend, EmbeddedBackend, ReplayBackend, PlanBackend, LeasedBackend):
        assert [m for m in members if m != "retries" and not hasattr(cls, m)] == [], cls.__name__
    # the lease forwards each member itself (it is no Capabilities subclass: nothing is given it by default)
    assert [m for m in members if m not in vars(LeasedBackend)] == []
    inner = ServerBackend("openai", ["http://127.0.0.1:9"], model="x", name="m")
    inner.engine, inner.canaried, inner.retries = {"name": "vllm"}, [{"field": "structured_outputs"}], 2
    leased = LeasedBackend(Lease("m", "http://127.0.0.1:9", None, {}, Beat()), inner)  # type: ignore[arg-type]
    for attr in ("name", "engine", "canaried", "replayed_from", "retries"):
        assert getattr(leased, attr) == getattr(inner, attr), attr
    assert leased.endpoint_stats() == inner.endpoint_stats() and leased.canary_of() == inner.canary_of()
    assert leased.canary_of() is not None  # a server has its canary; a backend without one says None
    with pytest.raises(AttributeError):
        leased.not_in_the_interface  # noqa: B018 - no catch-all forwarding: the interface, part by part


def test_an_artifact_records_what_computed_its_answers_and_the_metrics_where_its_server_ran(monkeypatch, tmp_path):
    from socsim.context import StageContext
    from socsim.llm.client import LLMClient

    record = {"engine": "vllm", "version": "0.9", "url": "http://node7:41000", "launcher": "slurm"}
    record |= {"slurm_job": "123", "command": ["vllm", "serve", "--host", "0.0.0.0"], "prefix_caching": False}
    record |= {"gpus": "2,3"}  # the devices it was given: where it ran
    monkeypatch.setattr(leases, "acquire", lambda spec: Lease("m", "http://127.0.0.1:9", None, record, Beat()))  # type: ignore[arg-type]
    monkeypatch.setattr(LLMClient, "answered", property(lambda self: True))
    monkeypatch.setattr(LLMClient, "identity", lambda self: {"model_id": "x"})
    served = {"backend": "openai", "model_id": "x", "serve": {"engine": "vllm"}}
    params = config.validate({"models": {"m": served}, "coherence": {"judge_model": "m"}})
    params["llm"]["cache_path"] = str(tmp_path / "cache.sqlite")
    study = studies.study("coherence")
    ctx = StageContext(study, study.stage("judge"), params, {})
    try:
        ctx.model_client("m", "coherence.judge_model")
        assert ctx.llm_metrics()["models"]["m"]["server"] == record  # the metrics: all of it
        assert ctx.provenance()["servers"] == {"m": {"engine": "vllm", "version": "0.9", "prefix_caching": False}}
    finally:
        ctx.close()
