"""Dyadic conversations and the LLM-as-judge (paper 001, Appendix A (d)).

Agent 1 opens with the topic's question; the agents alternate, at most `turns_per_agent` turns
each; a statement ending with "Goodbye." ends the conversation (the first one, or once both have
said it). After every turn the judge scores agreement 1-5 from at most the last `window`
statements of each agent (-1 for an empty window). Conversations run concurrently.
"""

from __future__ import annotations

import re

from socsim.coherence.agents import system_prompt
from socsim.llm import IntRange, LLMClient, Request, derive_seed
from socsim.progress import gather_with_progress

GOODBYE = re.compile(r"goodbye\.?[\"')\s]*$", re.IGNORECASE)
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

    add(1, question)
    speaker = 2
    while len(utterances) < 2 * cp["turns_per_agent"] and not finished(utterances, cp["stop"]):
        req = Request.chat(agent_messages(systems[speaker], utterances, speaker),
                           derive_seed(seed, "coherence", "converse", cid, len(utterances)), sampling)
        add(speaker, (await client.generate(req)).text.strip())
        speaker = 3 - speaker
    return utterances


async def judge(conversation: list[dict], prompts: dict, cp: dict, client: LLMClient, judge_name: str,
                seed: int) -> list[dict]:
    sampling = client.sampling(max_tokens=4, temperature=0.0)
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
            await c.backend.aclose()
    return [u for conv in results for u in conv]


async def run_judge(utterances: list[dict], prompts: dict, cp: dict, client: LLMClient, judge_name: str,
                    seed: int) -> list[dict]:
    await client.probe()
    by_conv: dict[str, list[dict]] = {}
    for u in sorted(utterances, key=lambda u: (u["conversation_id"], u["turn"])):
        by_conv.setdefault(u["conversation_id"], []).append(u)
    try:
        results = await gather_with_progress(
            (judge(conv, prompts, cp, client, judge_name, seed) for conv in by_conv.values()), "judging", unit="conv")
    finally:
        await client.backend.aclose()
    return [r for rows in results for r in rows]
