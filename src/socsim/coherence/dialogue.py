"""Dyadic conversations and the LLM-as-judge (paper 001, Appendix A (d)).

Who opens: the pair's `opener` (a seeded coin per conversation, see agents.opener) asks the
topic's question verbatim. Turn budget: after the question the other agent replies and the agents
alternate; each agent generates exactly `turns_per_agent` statements (the opening question is the
topic's, not a generated statement) unless a Goodbye ends the conversation earlier (the first one,
or once both have said it). A statement says Goodbye when it ends with "goodbye" in any case,
followed by any of . ! and then only closing quotes, brackets, asterisks or whitespace
("Goodbye.", "goodbye!", "Goodbye." with a closing quote); "Goodbye. But ..." does not end it.
After every turn the judge scores agreement 1-5 from at most the last `window` statements of each
agent (-1 for an empty window); the judge also scores the five calibration examples of its own
prompt (same prompt, constraint and seed scheme). Conversations run concurrently.
"""

from __future__ import annotations

import re

from socsim.coherence.agents import system_prompt
from socsim.llm import IntRange, LLMClient, Request, derive_seed
from socsim.progress import gather_with_progress

GOODBYE = re.compile(r"\bgoodbye[.!]*[\"'\u201d\u2019)\]*_\s]*$", re.IGNORECASE)
JUDGE_SCORE = IntRange(1, 5)


def says_goodbye(text: str) -> bool:
    return bool(GOODBYE.search(text.strip()))


def finished(utterances: list[dict], stop: str) -> bool:
    said = {u["speaker"] for u in utterances if u["says_goodbye"]}
    return bool(said) if stop == "first_goodbye" else said == {1, 2}


def agent_messages(system: str, utterances: list[dict], speaker: int) -> list[dict]:
    """The conversation from one agent's side: its own statements as assistant turns."""
    msgs = [{"role": "system", "content": system}]
    for u in utterances:
        msgs.append({"role": "assistant" if u["speaker"] == speaker else "user", "content": u["text"]})
    return msgs


def judge_window(utterances: list[dict], window: int) -> list[dict]:
    """At most the last `window` statements of each agent, in conversation order."""
    keep = set()
    for speaker in (1, 2):
        keep.update(u["turn"] for u in [u for u in utterances if u["speaker"] == speaker][-window:])
    return [u for u in utterances if u["turn"] in keep]


def judge_messages(prompts: dict, window: list[dict]) -> list[dict]:
    examples = "\n\n".join(f"Example (score {e['score']}):\n{e['conversation']}" for e in prompts["judge_examples"])
    convo = "\n".join(f"Agent {u['speaker']}: {u['text']}" for u in window)
    return [{"role": "system", "content": f"{prompts['judge'].strip()}\n\n{examples}"},
            {"role": "user", "content": f"Conversation:\n{convo}\n\nScore (1-5):"}]


async def converse(pair: dict, agents: dict[str, dict], question: str, prompts: dict, cp: dict,
                   client: LLMClient, seed: int) -> list[dict]:
    cid = pair["conversation_id"]
    ids = {1: pair["agent1_id"], 2: pair["agent2_id"]}
    systems = {s: system_prompt(agents[a], prompts, "conversation_instruction") for s, a in ids.items()}
    sampling = client.sampling(max_tokens=cp["utterance_max_tokens"])
    utterances: list[dict] = []

    def add(speaker: int, text: str) -> None:
        utterances.append({"conversation_id": cid, "turn": len(utterances), "speaker": speaker,
                           "agent_id": ids[speaker], "text": text, "says_goodbye": says_goodbye(text),
                           "model": pair["model"]})

    first = pair["opener"]
    add(first, question)
    speaker = 3 - first
    while len(utterances) < 1 + 2 * cp["turns_per_agent"] and not finished(utterances, cp["stop"]):
        req = Request.chat(agent_messages(systems[speaker], utterances, speaker),
                           derive_seed(seed, "coherence", "converse", cid, len(utterances)), sampling)
        add(speaker, (await client.generate(req)).text.strip())
        speaker = 3 - speaker
    return utterances


def judge_sampling(client: LLMClient):
    return client.sampling(max_tokens=4, temperature=0.0)


async def judge(conversation: list[dict], prompts: dict, cp: dict, client: LLMClient, judge_name: str,
                seed: int) -> list[dict]:
    sampling = judge_sampling(client)
    rows = []
    for k in range(len(conversation)):
        window = judge_window(conversation[: k + 1], cp["judge_window"])
        base = {"conversation_id": conversation[0]["conversation_id"], "turn": k, "judge_model": judge_name}
        if not any(u["text"].strip() for u in window):
            rows.append({**base, "score": -1, "raw_answer": "", "parse_ok": True})
            continue
        req = Request.chat(judge_messages(prompts, window),
                           derive_seed(seed, "coherence", "judge", base["conversation_id"], k), sampling, JUDGE_SCORE)
        resp = await client.generate(req)
        rows.append({**base, "score": resp.value if resp.parse_ok else None, "raw_answer": resp.text,
                     "parse_ok": resp.parse_ok})
    return rows


def calibration_messages(prompts: dict, example: dict) -> list[dict]:
    """The judge prompt applied to one of its own calibration examples (its lines are already
    "Agent k: ..." statements)."""
    window = []
    for line in example["conversation"].splitlines():
        head, _, text = line.partition(":")
        window.append({"speaker": int(head.split()[-1]), "text": text.strip()})
    return judge_messages(prompts, window)


async def calibrate(prompts: dict, client: LLMClient, judge_name: str, seed: int) -> list[dict]:
    """The judge scores the calibration examples of its own prompt, with the prompt, constraint and
    sampling of the real judgments (seed from the run seed, the judge and the example's index)."""
    sampling = judge_sampling(client)
    rows = []
    for i, example in enumerate(prompts["judge_examples"]):
        req = Request.chat(calibration_messages(prompts, example),
                           derive_seed(seed, "coherence", "judge", "calibration", judge_name, i), sampling, JUDGE_SCORE)
        resp = await client.generate(req)
        rows.append({"judge_model": judge_name, "example": i, "reference": int(example["score"]),
                     "score": resp.value if resp.parse_ok else None, "raw_answer": resp.text,
                     "parse_ok": resp.parse_ok})
    return rows


async def run_conversations(pairs: list[dict], agents: dict[str, dict], questions: dict[str, str], prompts: dict,
                            cp: dict, clients: dict[str, LLMClient], seed: int) -> list[dict]:
    for c in clients.values():
        await c.probe()
    try:
        results = await gather_with_progress(
            (converse(p, agents, questions[p["topic"]], prompts, cp, clients[p["model"]], seed) for p in pairs),
            "conversations", unit="conv")
    finally:
        for c in clients.values():
            await c.aclose()
    return [u for conv in results for u in conv]


def judges_for(agent_models: list[str], judge_model: dict, judge_models: dict | None) -> dict[str, dict]:
    """The judge entry of every agent model: `judge_models[agent model]` where given, otherwise
    `judge_model` (the paper avoids a model judging its own conversations)."""
    judge_models = judge_models or {}
    unknown = sorted(set(judge_models) - set(agent_models))
    if unknown:
        raise ValueError(f"coherence.judge_models names agent models that do not exist: {', '.join(unknown)} "
                         f"(agent models: {', '.join(agent_models)})")
    out = {m: judge_models.get(m, judge_model) for m in agent_models}
    by_name: dict[str, dict] = {}
    for entry in out.values():
        if by_name.setdefault(entry["name"], entry) != entry:
            raise ValueError(f"two different judge entries are both named {entry['name']!r}")
    return out


async def run_judge(utterances: list[dict], prompts: dict, cp: dict, clients: dict[str, LLMClient],
                    judge_of: dict[str, str], seed: int) -> tuple[list[dict], list[dict]]:
    """Judge every conversation with the judge of its agent model (`judge_of`: agent model -> judge
    name, `clients`: judge name -> client); also each judge's calibration answers."""
    for c in clients.values():
        await c.probe()
    by_conv: dict[str, list[dict]] = {}
    for u in sorted(utterances, key=lambda u: (u["conversation_id"], u["turn"])):
        by_conv.setdefault(u["conversation_id"], []).append(u)
    try:
        calibration = [r for name in sorted(set(judge_of.values())) for r in await calibrate(prompts, clients[name], name, seed)]
        results = await gather_with_progress(
            (judge(conv, prompts, cp, clients[judge_of[conv[0]["model"]]], judge_of[conv[0]["model"]], seed)
             for conv in by_conv.values()), "judging", unit="conv")
    finally:
        for c in clients.values():
            await c.aclose()
    return [r for rows in results for r in rows], calibration
