"""socsim plan: calls and tokens per study, stage and model before a run, from the stages' own code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from socsim import config, plan, studies
from socsim.llm import counting
from socsim.llm.constraints import Choice, IntRange, JsonSchema
from support.plans import check_plan
from support.project import ROOT


@pytest.fixture(scope="module")
def default_plan():
    params = plan.plan_params([str(ROOT / "params.yaml")])
    plans, how, skipped = plan.run(params, ROOT)
    return params, plans, how, skipped


def by_stage(plans):
    return {(p.study, p.stage, p.model): p for p in plans}


def test_every_llm_stage_of_the_default_run_is_planned(default_plan):
    params, plans, how, skipped = default_plan
    assert skipped == []
    planned = {(p.study, p.stage) for p in plans}
    calling = {(s.name, st.name) for s, st in studies.all_stages() if st.model_names(params)}
    assert planned == calling  # personas and topics come from files: no model, no plan row
    assert how["smollm2-135m"].startswith("tokenizer and chat template")  # the embedded GGUF: exact counts


def test_calls_that_need_no_answer_are_exact_and_known(default_plan):
    params, plans, _, _ = default_plan
    got = by_stage(plans)
    # Coherence elicitation: one preference and nine openness items per agent (materials), agents from the design.
    cp = params["coherence"]
    from socsim.coherence.agents import bias_cells  # level 0: one cell; levels 1 and 2: for and against

    agents = len(cp["topics"]) * len(bias_cells(cp["bias_levels"])) * cp["agents_per_cell"]
    assert agents == 30
    elicit = got[("coherence", "elicit", "smollm2-135m")]
    assert elicit.exact_calls and elicit.total.calls == agents * 10
    # Opinion dynamics: per simulation T writer and T reviewer steps; independent controls (paper 4.3) per topic
    # and framing: every role-play agent and the one bare agent report `reports` times.
    od = params["opinion_dynamics"]
    sims = len(od["topics"]) * len(od["framings"]) * len(od["confirmation_bias"]) * len(od["memory"])
    controls = len(od["topics"]) * len(od["framings"]) * (od["n_agents"] + 1) * od["controls"]["reports"]
    simulate = got[("opinion_dynamics", "simulate", "smollm2-135m")]
    assert simulate.exact_calls and simulate.total.calls == sims * od["steps"] * 2 + controls
    # Facilitation annotate depends on which comments are silent: a bound.
    assert not got[("facilitation", "annotate", "smollm2-135m")].exact_calls
    assert not got[("coherence", "converse", "smollm2-135m")].exact_calls  # "Goodbye." ends early


def test_a_prompt_longer_than_its_context_is_an_error_naming_it():
    params = plan.plan_params([str(ROOT / "params.yaml")], ["models.smollm2-135m.n_ctx=300"])
    dotted = plan.plan_params(
        [str(ROOT / "params.yaml"), str(ROOT / "params.paper.yaml")], ["models.qwen2.5-7b.n_ctx=999"]
    )
    assert dotted["models"]["qwen2.5-7b"]["n_ctx"] == 999 and "qwen2" not in dotted["models"]  # names with dots
    plans, _, _ = plan.run(params, ROOT)
    with pytest.raises(plan.PlanError) as info:
        plan.check_overflow(plans, params)
    text = str(info.value)
    assert "n_ctx = 300" in text and "facilitation simulate on smollm2-135m" in text
    assert " turn " in text and "tokens" in text  # the episode and turn of the largest ones, with sizes


def test_expected_time_from_given_rates_and_from_earlier_metrics(tmp_path):
    tally = counting.Tally(calls=10, prompt_tokens=1000, completion_tokens=200)
    sp = plan.StagePlan("s", "st", "m", {"all": tally}, True)
    assert plan.expected_seconds(sp, {}, {"m": (500.0, 50.0)}) == (1000 / 500 + 200 / 50, "given rates")
    metrics = tmp_path / "s" / "metrics" / "st" / "a.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_text(json.dumps({"models": {"m": {"calls": 5, "prompt_tokens": 500, "generation_wall_s": 4.0}}}))
    measured = plan.measured_rates(tmp_path)
    assert measured == {("s", "st", "m"): (500.0, 4.0)}
    assert plan.expected_seconds(sp, measured, {}) == (8.0, "earlier run of this stage")  # 1000 prompt tokens
    assert plan.expected_seconds(sp, {}, {})[0] is None
    with pytest.raises(config.ParamsError, match="--rate 'm=1'"):
        plan.parse_rates(["m=1"])


def test_planning_answers_are_valid_and_bounded():
    assert counting.answer(Choice(("Yes", "No")), 1, 8)[0] in {"Yes", "No"}
    assert 1 <= int(counting.answer(IntRange(1, 5), 2, 8)[0]) <= 5
    schema = JsonSchema.of(
        {"type": "object", "properties": {"label": {"enum": ["a", "b"]}, "why": {"type": "string"}}, "required": []}
    )
    text, free = counting.answer(schema, 3, 64)
    assert schema.parse(text)[1] and not free
    assert counting.answer(None, 4, 12) == (counting.FILLER * 12, True)  # free text: its full max_tokens
    est = counting.TokenCounter()  # a served model: no GGUF to read, the estimate
    assert not est.exact and est.prompt([{"role": "user", "content": "x" * 400}]) == 100 + counting.MESSAGE_OVERHEAD


@pytest.mark.parametrize(
    "files,overrides",
    [
        (["params.yaml"], []),
        (["params.yaml", "tests/params.tiny.yaml"], []),
        (["params.yaml", "params.laptop.yaml"], []),
    ],
)
def test_shipped_params_plan_without_error(files, overrides, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    check_plan(files, overrides, tmp_path, capsys)


def test_the_summary_totals_every_model_with_gpu_hours_and_names_those_without_a_rate():
    def row(model, seconds, gpus, calls=10):
        return {
            "model": model,
            "where": "w",
            "calls": calls,
            "prompt_tokens": 100,
            "completion_tokens_max": 5,
            "expected_s": seconds,
            "gpus": gpus,
            "tokens_counted_by": "estimate",
        }

    rows = [row("big", 3600.0, 4), row("big", 1800.0, 4), row("small", 600.0, 0), row("new", None, 1)]
    lines = plan.summary(rows).splitlines()
    assert lines[0].startswith("- big: ") and "expected 1.5 h (6.0 GPU-hours on 4 GPU(s))" in lines[0]
    assert "expected ?" in lines[1] and lines[1].startswith("- new: ")
    assert "expected 10 min;" in lines[2] and "GPU-hours" not in lines[2]
    assert lines[3].startswith("- all models: 40 calls, 400 prompt tokens; expected 1.7 h of model time")
    assert ", 6.0 GPU-hours, not counting 1 model(s) without a rate (new: give --rate" in lines[3]
    assert (
        plan.summary([row("new", None, 1)])
        .splitlines()[-1]
        .startswith("- all models: 10 calls, 100 prompt tokens; expected time ?, not counting")
    )


def test_the_plan_shows_progress_and_leaves_no_scratch_even_when_terminated(tmp_path):
    """A paper-scale plan runs for minutes: a bar on stderr (stage shards, the one being planned, calls counted);
    SIGTERM (a scheduler's, a `kill`) removes its scratch folder, and a folder a killed plan left (kill -9)
    is removed by the next plan."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    tmp = tmp_path / "tmp"  # the plans' own temporary folder (other tests plan beside this one)
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    stale = tmp / (plan.SCRATCH_PREFIX + "stale-test")
    stale.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (stale / ".pid").write_text(f"{socket.gethostname()} {dead.stdout.strip()}")  # a process that has ended
    elsewhere = tmp / (plan.SCRATCH_PREFIX + "other-host")
    elsewhere.mkdir()
    (elsewhere / ".pid").write_text(f"another-host {dead.stdout.strip()}")  # not this machine's to judge
    before = {elsewhere}
    proc = subprocess.run(["socsim", "plan"], cwd=ROOT, capture_output=True, text=True, check=True, env=env)
    assert not stale.exists()
    assert "plan: 100%" in proc.stderr and "calls counted" in proc.stderr and "stage shard" in proc.stderr
    assert set(tmp.glob(plan.SCRATCH_PREFIX + "*")) == before

    big = tmp_path / "big.yaml"
    big.write_text("coherence: {agents_per_cell: 200}\n")  # long enough to be caught in the middle
    err = tmp_path / "stderr.txt"
    running = subprocess.Popen(
        ["socsim", "plan", "--params", "params.yaml", "--params", str(big)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err.open("w"),
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (set(tmp.glob(plan.SCRATCH_PREFIX + "*")) - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    mine = set(tmp.glob(plan.SCRATCH_PREFIX + "*")) - before
    assert len(mine) == 1 and running.poll() is None
    time.sleep(1.0)
    os.kill(running.pid, signal.SIGTERM)
    running.wait(timeout=60)
    assert running.returncode == 128 + signal.SIGTERM and "socsim: interrupted (SIGTERM)" in err.read_text()
    assert not any(p.exists() for p in mine)


def test_a_signal_that_lands_in_a_c_callback_still_ends_the_plan(tmp_path):
    """A signal handler's exception is lost where it lands in a C callback (ctypes prints it and goes on; a
    SIGTERM while llama.cpp loads a model, in its log callback, let a plan run to its end): the plan's handler
    ends the process itself, its scratch removed, and names the signal on the stderr the plan began with."""
    import os
    import signal
    import subprocess
    import sys

    code = """
import contextlib, ctypes, os, signal, sys, time
from pathlib import Path
from socsim import plan

def in_callback():
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(2)  # the handler runs here, inside the callback

with plan._scratch(Path(sys.argv[1])) as scratch:
    print(scratch, flush=True)
    with open(os.devnull, "w") as null, contextlib.redirect_stderr(null):
        os.dup2(null.fileno(), 2)  # as llama.cpp silences a model's loading
        ctypes.CFUNCTYPE(None)(in_callback)()
    print("went on", flush=True)
"""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, env=env)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    scratch = Path(proc.stdout.splitlines()[0])
    assert "went on" not in proc.stdout and not scratch.exists() and scratch.parent == tmp_path
    assert "socsim: interrupted (SIGTERM); the plan wrote nothing" in proc.stderr


def test_the_plan_says_what_socsims_client_needs_and_which_sets_the_pace():
    assert plan.client_calls_per_s(256) == plan.CLIENT_CALLS_PER_S[256]
    assert plan.client_calls_per_s(100) == plan.CLIENT_CALLS_PER_S[64]  # the nearest level measured below
    assert plan.client_calls_per_s(0) == plan.CLIENT_CALLS_PER_S[1]
    assert plan.pace(None, 10.0) is None and plan.pace(100.0, 10.0) == "engine" and plan.pace(5.0, 10.0) == "client"

    def row(seconds, client_s, pace):
        return {
            "model": "m",
            "where": "w",
            "calls": 36_340,
            "prompt_tokens": 100,
            "completion_tokens_max": 5,
            "expected_s": seconds,
            "gpus": 1,
            "tokens_counted_by": "estimate",
            "client_s": client_s,
            "pace": pace,
        }

    fast = plan.summary([row(5.0, 10.0, "client")]).splitlines()[0]
    assert fast.endswith("; socsim's client alone: 10 s in one job (one core), so socsim's client sets the pace")
    mixed = plan.summary([row(5.0, 10.0, "client"), row(600.0, 10.0, "engine")]).splitlines()[0]
    assert mixed.endswith("so the engine sets the pace of some stages, socsim's client of others")
    unrated = plan.summary([row(None, 10.0, None)]).splitlines()[0]
    assert "expected ?" in unrated and unrated.endswith("socsim's client alone: 10 s in one job (one core)")
