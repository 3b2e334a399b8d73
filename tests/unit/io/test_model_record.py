"""The model seam typed (socsim.io.model_record): the record a stage's metrics hold per model, written by the
runtime and read by the RO-Crate, the scorecard, the plan and the limits benchmark, round-trips exactly."""

from __future__ import annotations

import json

from socsim.io.model_record import ModelRecord, records


def test_a_record_is_written_in_the_metrics_shape_and_read_back_whole():
    accounting = {"requests": 3, "calls": 2, "cache_hits": 1, "parse_failures_cut": 1, "sampling": {"top_p": 1.0}}
    identity = {"backend": "openai", "model_id": "Qwen/Qwen2.5-7B-Instruct", "runtime": "vllm"}
    server = {"engine": "vllm", "version": "0.32.0", "url": "http://127.0.0.1:8000"}
    rec = ModelRecord(identity, accounting, server=server, canary=[{"field": "structured_outputs", "ok": True}])
    data = rec.as_json()
    # the accounting's keys first, then the identity and each part the record has, in that order (no empty part)
    assert list(data) == [*accounting, "identity", "server", "canary"]
    back = ModelRecord.from_json(json.loads(json.dumps(data)))
    assert back == rec and back.as_json() == data
    assert (back.calls, back.cache_hits, back.count("parse_failures_cut"), back.count("absent")) == (2, 1, 1, 0)
    assert back.sampling == {"top_p": 1.0} and back.engine is None and back.replayed_from is None


def test_the_records_of_a_stages_metrics_and_of_metrics_without_models():
    metrics = {"calls": 2, "models": {"m": {"calls": 2, "identity": {"model_id": "x"}}, "bad": "not a record"}}
    assert list(records(metrics)) == ["m"] and records(metrics)["m"].identity == {"model_id": "x"}
    assert records({"calls": 0}) == {} and records([]) == {} and records({"models": None}) == {}
