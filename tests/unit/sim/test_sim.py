"""The simulation engine (socsim.sim) on its own: policies, views, stop rules and the loop with
scripted speakers; the runner with the real embedded model."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from socsim.llm import IntRange, LLMClient, Request, Response, Sampling
from socsim.seeds import derive_seed
from socsim.sim import judge, policies, runner, stop, views
from socsim.sim.episode import Episode, Speaker, Transcript, play
from support.llm import Scripted

USERS = [f"u{i}" for i in range(7)]


# -- turn policies --------------------------------------------------------------------------------


def _reply_rate(speakers: list[str]) -> float:
    return sum(speakers[t] == speakers[t - 2] for t in range(2, len(speakers))) / (len(speakers) - 2)


def _draw(kind, n, seed, p=0.4, speakers=USERS):
    policy = policies.Drawn(kind, speakers, random.Random(seed), p)
    return [policy.next() for _ in range(n)]


@pytest.mark.parametrize("p", [0.0, 0.1, 0.4, 0.8])
def test_respond_observed_reply_rate_is_p_respond(p):
    speakers = _draw("respond", 50_000, 11, p)
    assert all(a != b for a, b in zip(speakers, speakers[1:]))  # nobody replies to themselves
    # The paper: the replier with probability p, otherwise *another* participant: the observed
    # rate P(speaker_t = speaker_t-2) is p itself.
    assert abs(_reply_rate(speakers) - p) <= 0.01
    assert set(Counter(speakers)) == set(USERS)  # everybody speaks


@pytest.mark.parametrize("p", [0.0, 0.4, 0.8])
def test_respond_uniform_keeps_the_old_rule(p):
    speakers = _draw("respond_uniform", 50_000, 5, p)
    # The old rule's other branch may pick the replier again: p + (1 - p) / (k - 1) (0.5 at p = 0.4).
    assert abs(_reply_rate(speakers) - (p + (1 - p) / (len(USERS) - 1))) <= 0.01
    assert abs(_reply_rate(speakers) - p) > 0.02  # (1 - p) / 6 >= 0.033 away from p


def test_respond_with_two_speakers_alternates():
    seq = _draw("respond", 200, 1, speakers=["a", "b"])
    assert all(x != y for x, y in zip(seq, seq[1:]))


def test_round_robin_is_exact_and_random_never_repeats():
    assert _draw("round_robin", 21, 1) == USERS * 3
    seq = _draw("random", 5000, 2)
    assert all(a != b for a, b in zip(seq, seq[1:]))
    counts = Counter(seq)
    assert set(counts) == set(USERS) and min(counts.values()) > 5000 / 7 * 0.8
    assert _draw("random", 50, 2) == seq[:50] and _draw("random", 50, 3) != seq[:50]  # seeded by its rng
    with pytest.raises(ValueError, match="turn taking must be one of"):
        policies.Drawn("debate", USERS, random.Random(0))
    with pytest.raises(ValueError, match="at least two"):
        policies.Drawn("random", ["a"], random.Random(0))


def test_alternate_schedule_and_followed_by():
    alt = policies.Alternate("b", "a")
    assert [alt.next() for _ in range(5)] == ["b", "a", "b", "a", "b"]
    pairs = [("a", "b"), ("c", "a"), ("a", "c")]
    sched = policies.Schedule(pairs)
    assert [(sched.next(), sched.listener) for _ in range(3)] == pairs
    with pytest.raises(IndexError):
        sched.next()
    fb = policies.FollowedBy(policies.Drawn("round_robin", ["x", "y"], random.Random(0)), "mod")
    assert [fb.next() for _ in range(6)] == ["x", "y", "mod", "x", "mod", "y"]  # no answer to the opening


# -- views ---------------------------------------------------------------------------------------


def _turns(*spec):
    """(speaker, text, silent) triples as turn records."""
    return [
        {"turn": i, "speaker_id": s, "speaker_name": s, "text": text, "is_silent": silent}
        for i, (s, text, silent) in enumerate(spec)
    ]


def test_window_per_speaker_render_and_chat_views():
    turns = _turns(("a", "t0", False), ("b", "t1", False), ("m", "", True), ("a", "t3", False), ("b", "t4", False))
    assert [t["text"] for t in views.window(turns, 3)] == ["t1", "t3", "t4"]  # the silent turn skipped
    assert [t["text"] for t in views.window(turns[:3], 5)] == ["t0", "t1"]
    assert [t["text"] for t in views.per_speaker(turns, 1)] == ["", "t3", "t4"]
    assert [t["text"] for t in views.per_speaker(turns, 2)] == ["t0", "t1", "", "t3", "t4"]
    assert views.render(turns[:2]) == "@a: t0\n@b: t1"
    assert views.render(turns[:1], "{speaker_id} said {text}") == "a said t0"
    chat = views.as_chat("sys", turns[:2], "b")
    assert chat == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "t0"},
        {"role": "assistant", "content": "t1"},
    ]


def test_memory_appends_summarises_and_renders():
    mem = views.Memory()
    assert mem.render() == "" and len(mem) == 0
    for t in _turns(("a", "one", False), ("b", "two", False), ("a", "three", False)):
        mem.append(t)
    assert mem.render() == "@a: one\n@b: two\n@a: three" and len(mem) == 3
    mem.summarise("a and b argued", keep=1)
    assert mem.render() == "Summary so far: a and b argued\n@a: three" and len(mem) == 1
    mem.summarise("all forgotten")
    assert mem.render() == "Summary so far: all forgotten" and len(mem) == 0
    custom = views.Memory(line="{speaker_id}> {text}", summary_head="Earlier: ")
    custom.append(_turns(("z", "hi", False))[0])
    custom.summarise("s", keep=5)  # keeping more than there is keeps everything
    assert custom.render() == "Earlier: s\nz> hi"


# -- stop rules ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I think we covered it. Goodbye.",
        "Thanks! goodbye",
        "Goodbye!",
        "goodbye.",
        "Nice talking.  Goodbye.  \n",
        'Take care. Goodbye."',
        "Take care. Goodbye.'",
        "See you. Goodbye!\u201d",
        "**Goodbye.**",
        "(Goodbye.)",
        "GOODBYE!!",
    ],
)
def test_goodbye_accepted(text):
    assert stop.says_goodbye(text)


@pytest.mark.parametrize(
    "text",
    [
        "Goodbye. But wait, one more point about taxes.",
        "I said goodbye to him.",
        "No goodbyes yet.",
        "Goodbye? Not yet.",
        "",
        "Taxes are good.",
    ],
)
def test_goodbye_rejected(text):
    assert not stop.says_goodbye(text)


EP = Episode("e1", "m", 7, (Speaker("a", "Ann", "sys a"), Speaker("b", "Bob", "sys b")), "Q?", ("study", "e1"))


def test_stop_rules_first_and_both_goodbye_and_budget():
    t = Transcript(EP)
    t.add("a", "Q?", opening=True)
    t.add("b", "Fine. Goodbye.")
    assert stop.Goodbye()(t) and not stop.Goodbye(both=True)(t)
    assert not stop.TurnBudget(3)(t) and stop.TurnBudget(2)(t)
    t.add("b", "Goodbye!")  # the same speaker twice is not both
    assert not stop.Goodbye(both=True)(t)
    t.add("a", "goodbye.")
    assert stop.Goodbye(both=True)(t)
    assert stop.any_of(stop.TurnBudget(99), stop.Goodbye(both=True))(t)
    assert not stop.any_of(stop.TurnBudget(99), stop.Goodbye())(Transcript(EP))


def test_transcript_records_silent_turns_without_a_position():
    t = Transcript(EP)
    t.add("a", "Q?", opening=True)
    t.add("b", "first", 5)
    t.add("a", "", 0, silent=True)
    t.add("b", "second", 4)
    assert [r["position"] for r in t.turns] == [0, 1, None, 2]
    assert [r["turn"] for r in t.turns] == [0, 1, 2, 3] and t.turns[2]["is_silent"]
    assert t.turns[0] == {
        "episode_id": "e1",
        "turn": 0,
        "position": 0,
        "speaker_id": "a",
        "speaker_name": "Ann",
        "text": "Q?",
        "is_silent": False,
        "is_opening": True,
        "completion_tokens": 0,
    }
    assert [r["text"] for r in views.window(t.turns, 2)] == ["first", "second"]


# -- the loop with scripted speakers ------------------------------------------------------------------


def test_play_runs_policy_views_seeds_and_stop():
    backend = Scripted(lambda req: f"  reply {len(req.messages)}  ")
    client = LLMClient(backend, None)
    turns = asyncio.run(
        play(
            EP,
            policies.Alternate("b", "a"),
            stop.TurnBudget(4),
            client,
            Sampling(max_tokens=5),
            lambda sp, ts: views.as_chat(sp.system_prompt, ts, sp.id),
        )
    )
    assert [t["speaker_id"] for t in turns] == ["b", "a", "b", "a"]  # the opener posts the opening
    assert turns[0]["text"] == "Q?" and turns[0]["is_opening"] and turns[0]["completion_tokens"] == 0
    assert [t["text"] for t in turns[1:]] == ["reply 2", "reply 3", "reply 4"]  # stripped by default
    assert [r.seed for r in backend.requests] == [derive_seed(7, "study", "e1", k) for k in (1, 2, 3)]
    assert backend.requests[1].message_dicts() == [
        {"role": "system", "content": "sys b"},
        {"role": "assistant", "content": "Q?"},
        {"role": "user", "content": "reply 2"},
    ]
    assert all(r.sampling.max_tokens == 5 for r in backend.requests)

    def goodbye_on_third(req):
        return "Goodbye." if len(req.messages) == 3 else "Hm."  # turn 3, by b

    for rule, n in ((stop.Goodbye(), 4), (stop.Goodbye(both=True), 9)):
        backend = Scripted(goodbye_on_third)
        turns = asyncio.run(
            play(
                EP,
                policies.Alternate("a", "b"),
                stop.any_of(stop.TurnBudget(9), rule),
                LLMClient(backend, None),
                Sampling(),
                lambda sp, ts: views.as_chat(None, ts, sp.id),
                lambda sp, text: (text, text == "Hm."),
            )
        )
        assert len(turns) == n and [t["is_silent"] for t in turns[1:4]] == [True, True, False]


def test_observe_sees_every_model_turn_and_memory_renders_as_messages():
    """The engine's observe step (a study writes memories there) runs after each model turn, before
    the next speaker's view is built, and not for the opening."""
    seen, memories = [], {"a": views.Memory(summary_head="S: "), "b": views.Memory(summary_head="S: ")}

    async def observe(speaker, turn):
        seen.append((speaker.id, turn["turn"], turn["text"]))
        memories[speaker.id].append({"text": f"I said {turn['text']}"})
        if len(memories[speaker.id]) == 2:
            memories[speaker.id].summarise("two turns", keep=1)

    backend = Scripted(lambda req: f"r{len(req.messages)}")
    turns = asyncio.run(
        play(
            EP,
            policies.Alternate("b", "a"),
            stop.TurnBudget(5),
            LLMClient(backend, None),
            Sampling(),
            lambda sp, ts: [{"role": "system", "content": sp.system_prompt}, *memories[sp.id].messages()],
            observe=observe,
        )
    )
    assert seen == [(t["speaker_id"], t["turn"], t["text"]) for t in turns[1:]]
    assert [len(r.messages) for r in backend.requests] == [1, 1, 2, 2]  # each view holds what observe wrote
    assert memories["a"].messages() == [
        {"role": "user", "content": "S: two turns"},
        {"role": "user", "content": "I said r2"},
    ]  # a summarised after its 2nd turn


# -- judging over transcripts ---------------------------------------------------------------------------


def _resp(text, constraint):
    value, ok, err = constraint.parse(text)
    return Response(
        text=text,
        value=value,
        parse_ok=ok,
        parse_error=err,
        prompt_tokens=0,
        completion_tokens=0,
        finish_reason="stop",
        cached=False,
    )


def test_judge_targets_requests_and_answers():
    turns = _turns(("a", "t0", False), ("b", "", True), ("a", "t2", False), ("b", "t3", False))
    got = list(judge.targets(turns, lambda before, t: views.window(before, 1), keep=lambda t: not t["is_silent"]))
    assert [(t["text"], [w["text"] for w in w_]) for t, w_ in got] == [("t0", []), ("t2", ["t0"]), ("t3", ["t2"])]
    every = list(judge.targets(turns, lambda before, t: before + [t]))
    assert [len(w) for _, w in every] == [1, 2, 3, 4]
    score = IntRange(1, 5)
    req = judge.request("sys", "rate", score, Sampling(max_tokens=4), 9, "judge", "e1", 3)
    assert req == Request.chat(
        [{"role": "system", "content": "sys"}, {"role": "user", "content": "rate"}],
        derive_seed(9, "judge", "e1", 3),
        Sampling(max_tokens=4),
        score,
    )
    assert judge.answer(_resp("4", score), score=None) == {"score": 4, "parse_ok": True, "raw_answer": "4"}
    assert judge.answer(_resp("lots", score), score=None) == {"score": None, "parse_ok": False, "raw_answer": "lots"}


# -- the runner -------------------------------------------------------------------------------------------


def test_runner_probes_first_and_closes_every_client_on_failure():
    events = []

    class Failing(Scripted):
        async def probe(self):
            raise RuntimeError("endpoint down")

    ok, bad = Scripted(lambda r: "x"), Failing(lambda r: "x")

    async def job():
        events.append("job")
        return []

    with pytest.raises(RuntimeError, match="endpoint down"):
        asyncio.run(
            runner.run_all({"ok": LLMClient(ok, None), "bad": LLMClient(bad, None)}, (job() for _ in range(2)), "test")
        )
    assert events == [] and ok.closed == bad.closed == 1  # no job started, both closed


def test_run_grouped_starts_group_by_group_and_returns_rows_in_item_order():
    """Requests sharing a prefix run one after another (stable within a group); rows keep the items'
    order, two rows for some items, none for one."""
    backend = Scripted(lambda r: r.label)
    client = LLMClient(backend, None)
    items = [("b", 0), ("a", 1), ("b", 2), ("a", 3), ("c", 4)]

    async def job(item):
        group, i = item
        req = Request.chat([{"role": "user", "content": f"{group}{i}"}], i, Sampling(), label=f"{group}{i}")
        resp = await client.generate(req)
        return [] if group == "c" else [(i, resp.text)] * (1 + i % 2)

    rows = asyncio.run(runner.run_grouped({"m": client}, items, job, lambda it: (it[0],), "test"))
    assert [r.label for r in backend.requests] == ["a1", "a3", "b0", "b2", "c4"]
    assert rows == [(0, "b0"), (1, "a1"), (1, "a1"), (2, "b2"), (3, "a3"), (3, "a3")]
    assert backend.closed == 1


def test_transcripts_group_rows_by_episode_in_turn_order():
    rows = [{"cid": c, "turn": t} for c, t in (("b", 1), ("a", 2), ("b", 0), ("a", 0), ("a", 1))]
    got = judge.transcripts(rows, "cid")
    assert list(got) == ["a", "b"] and [[r["turn"] for r in v] for v in got.values()] == [[0, 1, 2], [0, 1]]
