"""Dyadic conversations and the LLM-as-judge (paper 001, Appendix A (d)).

Who opens: the pair's `opener` (a seeded coin per conversation, see agents.opener) asks the
topic's question verbatim. Turn budget: after the question the other agent replies and the agents
alternate; each agent generates exactly `turns_per_agent` statements (the opening question is the
topic's, not a generated statement) unless a Goodbye ends the conversation earlier (the first one,
or once both have said it). A statement says Goodbye when it ends with "goodbye" in any case,
followed by any of . ! and then only closing quotes, brackets, asterisks or whitespace
("Goodbye.", "goodbye!", "Goodbye." with a closing quote); "Goodbye. But ..." does not end it.
After every turn the judge scores agreement 1-5 from at most the last `window` statements of each
agent (-1 for an empty window); run_calibration (the `calibrate` stage) has each judge score five
held-out calibration examples, not those of its own prompt (same prompt, constraint and seed scheme).
Conversations run concurrently.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from socsim.llm import IntRange, LLMClient, Request, Sampling
from socsim.models import reader_of
from socsim.sim import judge as sim_judge
from socsim.sim import policies, runner, stop, views
from socsim.sim.episode import Episode, Speaker, play
from socsim.sim.stop import says_goodbye

JUDGE_SCORE = IntRange(1, 5)
AGENT_LINE = "Agent {speaker}: {text}"


def episode(pair: dict[str, Any]) -> Episode:
    """A pairs row as an engine episode: agents 1 and 2, the topic's question as the opening."""
    speakers = tuple(Speaker(pair[f"agent{k}_id"], f"Agent {k}", pair[f"agent{k}_system_prompt"]) for k in (1, 2))
    return Episode(
        pair["conversation_id"],
        pair["model"],
        pair["seed"],
        speakers,
        pair["question"],
        ("coherence", "converse", pair["conversation_id"]),
    )


async def converse(pair: dict[str, Any], cp: dict[str, Any], client: LLMClient) -> list[dict[str, Any]]:
    """One conversation from its pairs row; one UTTERANCES row per statement."""
    ep = episode(pair)
    ids = [s.id for s in ep.speakers]
    first = pair["opener"] - 1
    rules = stop.any_of(stop.TurnBudget(1 + 2 * cp["turns_per_agent"]), stop.Goodbye(cp["stop"] == "both_goodbye"))
    turns = await play(
        ep,
        policies.Alternate(ids[first], ids[1 - first]),
        rules,
        client,
        client.sampling(max_tokens=cp["utterance_max_tokens"]),
        lambda speaker, turns: views.as_chat(speaker.system_prompt, turns, speaker.id),
    )
    return [
        {
            "conversation_id": t["episode_id"],
            "turn": t["turn"],
            "speaker": 1 + ids.index(t["speaker_id"]),
            "agent_id": t["speaker_id"],
            "text": t["text"],
            "says_goodbye": says_goodbye(t["text"]),
            "model": pair["model"],
        }
        for t in turns
    ]


async def run_conversations(
    pairs: list[dict[str, Any]], cp: dict[str, Any], clients: dict[str, LLMClient]
) -> list[dict[str, Any]]:
    return await runner.run_all(
        clients, (converse(p, cp, clients[p["model"]]) for p in pairs), "conversations", unit="conv"
    )


def judge_sampling(client: LLMClient) -> Sampling:
    return client.sampling(max_tokens=4, temperature=0.0)


def judge_request(
    prompts: dict[str, Any], window: list[dict[str, Any]], sampling: Sampling, seed: int, *ids: object
) -> Request:
    """The judge prompt (with its calibration examples) on a window of "Agent k: ..." statements."""
    examples = "\n\n".join(f"Example (score {e['score']}):\n{e['conversation']}" for e in prompts["judge_examples"])
    return sim_judge.request(
        f"{prompts['judge'].strip()}\n\n{examples}",
        f"Conversation:\n{views.render(window, AGENT_LINE)}\n\nScore (1-5):",
        JUDGE_SCORE,
        sampling,
        seed,
        "coherence",
        "judge",
        *ids,
    )


async def judge(
    conversation: list[dict[str, Any]],
    prompts: dict[str, Any],
    cp: dict[str, Any],
    client: LLMClient,
    judge_name: str,
    seed: int,
) -> list[dict[str, Any]]:
    """Agreement after every utterance from at most the last `judge_window` statements of each
    agent; -1 (no call) when the window holds no text."""
    sampling = judge_sampling(client)
    rows: list[dict[str, Any]] = []
    for u, window in sim_judge.targets(
        conversation, lambda before, u: views.per_speaker(before + [u], cp["judge_window"], "speaker")
    ):
        base = {"conversation_id": u["conversation_id"], "turn": u["turn"], "judge_model": judge_name}
        if not any(w["text"].strip() for w in window):
            rows.append({**base, "score": -1, "raw_answer": "", "parse_ok": True})
            continue
        resp = await client.generate(judge_request(prompts, window, sampling, seed, u["conversation_id"], u["turn"]))
        rows.append({**base, **sim_judge.answer(resp, score=None)})
    return rows


def calibration_window(example: dict[str, Any]) -> list[dict[str, Any]]:
    """A calibration example's "Agent k: ..." lines as a window."""
    window: list[dict[str, Any]] = []
    for line in example["conversation"].splitlines():
        head, _, text = line.partition(":")
        window.append({"speaker": int(head.split()[-1]), "text": text.strip()})
    return window


def held_out_examples(prompts: dict[str, Any]) -> list[dict[str, Any]]:
    """The calibration examples (prompts.yaml `calibration_examples`): held out from the judge's prompt,
    so that scoring them tests judging, not copying; an error if one is also in the prompt."""
    examples: list[dict[str, Any]] = list(prompts["calibration_examples"])
    in_prompt = {e["conversation"].strip() for e in prompts["judge_examples"]}
    copied = [i for i, e in enumerate(examples) if e["conversation"].strip() in in_prompt]
    if copied:
        raise ValueError(f"calibration_examples {copied} are also judge_examples (in the judge's prompt)")
    return examples


async def calibrate(prompts: dict[str, Any], client: LLMClient, judge_name: str, seed: int) -> list[dict[str, Any]]:
    """The judge scores the held-out calibration examples (`held_out_examples`), with the prompt,
    constraint and sampling of the real judgments (seed from the run seed, the judge and the example's
    index)."""
    sampling = judge_sampling(client)
    rows: list[dict[str, Any]] = []
    for i, example in enumerate(held_out_examples(prompts)):
        req = judge_request(prompts, calibration_window(example), sampling, seed, "calibration", judge_name, i)
        rows.append(
            {
                "judge_model": judge_name,
                "example": i,
                "reference": int(example["score"]),
                **sim_judge.answer(await client.generate(req), score=None),
            }
        )
    return rows


def judges_for(
    agent_models: list[str],
    judge_model: str,
    judge_models: dict[str, str] | None,
    registry: Collection[str] | Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The judge (a registry name) of every agent model: `judge_models[agent model]` where given,
    otherwise `judge_model` (the paper avoids a model judging its own conversations), except that a
    planted model (a control, by its `registry` entry) judges its own conversations by default
    (socsim.models.reader_of: no other model reads its levels). A key of `judge_models` that is no
    agent model is an error (a typo), unless it names a model of the `registry`: then it is a judge
    for a model this run leaves out (params.paper.yaml's mapping for Llama3.1-8B when `agent_models`
    is cut to a subset)."""
    judge_models = judge_models or {}
    unknown = sorted(set(judge_models) - set(agent_models) - set(registry or ()))
    if unknown:
        raise ValueError(
            f"coherence.judge_models names agent models that do not exist: {', '.join(unknown)} "
            f"(agent models: {', '.join(agent_models)})"
        )
    entries = registry if isinstance(registry, Mapping) else {}
    return {m: judge_models.get(m, reader_of(entries, m, judge_model)) for m in agent_models}


async def run_judge(
    utterances: list[dict[str, Any]],
    prompts: dict[str, Any],
    cp: dict[str, Any],
    clients: dict[str, LLMClient],
    judge_of: dict[str, str],
    seed: int,
) -> list[dict[str, Any]]:
    """Judge every conversation with the judge of its agent model (`judge_of`: agent model -> judge
    name, `clients`: judge name -> client)."""
    return await runner.run_all(
        clients,
        (
            judge(conv, prompts, cp, clients[judge_of[conv[0]["model"]]], judge_of[conv[0]["model"]], seed)
            for conv in sim_judge.transcripts(utterances, "conversation_id").values()
        ),
        "judging",
        unit="conv",
    )


async def run_calibration(prompts: dict[str, Any], clients: dict[str, LLMClient], seed: int) -> list[dict[str, Any]]:
    """Every judge (`clients`: judge name -> client) scores the calibration examples."""
    return await runner.run_all(
        clients,
        (calibrate(prompts, clients[name], name, seed) for name in sorted(clients)),
        "calibration",
        unit="judge",
    )
