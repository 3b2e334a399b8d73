"""Outside information in the agents' outputs (paper 002, section 3.3; v4 App. L).

The paper reports that about 15 % of outputs carry information from outside the simulation in the
open world (v4: 6 of 40 outputs, 20 tweets and 20 reports, three annotators) and none in the closed
world. Here an LLM judge labels each output of a seeded sample: per world setting that ran,
`outside_info.sample` tweets and as many reviewer reports of the main simulations (null = all),
drawn with seeds.rng(seed, "opinion_dynamics", "outside_info", world, kind). The judge is
`outside_info.model` (null = the classifier's model), temperature 0, its answer constrained to
yes / no (prompts.yaml `outside_info`). Raw answers and a parse flag are kept; a failed parse is
never a crash (counted, left out of the rate).

Its analysis (the rate per model and world, and the finding "more common in the open world") is
socsim.opinion_dynamics.analysis.outside_info.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from socsim import seeds
from socsim.llm import Choice, LLMClient, Request, Response
from socsim.seeds import derive_seed
from socsim.sim import judge as sim_judge
from socsim.sim import runner

ANSWER = Choice(("yes", "no"))
WORLDS = ("closed", "open")
KINDS = ("tweet", "report")


def outputs(events: Sequence[Mapping[str, Any]], setups: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every tweet and reviewer report of the main simulations, with its world, in (sim_id, t, kind) order."""
    info = {s["sim_id"]: s for s in setups if s["condition"] == "main"}
    out = []
    for e in sorted(events, key=lambda e: (e["sim_id"], e["t"])):
        s = info.get(e["sim_id"])
        if s is None:
            continue
        for kind, text, agent in (("tweet", e.get("tweet"), e["writer"]), ("report", e.get("report"), e["reviewer"])):
            if text is not None:
                out.append(
                    {
                        "sim_id": e["sim_id"],
                        "t": int(e["t"]),
                        "kind": kind,
                        "agent": int(agent),
                        "model": e["model"],
                        "topic": e["topic"],
                        "world": s["world"],
                        "claim": s["claim"],
                        "text": text,
                    }
                )
    return out


def sample(items: Sequence[dict[str, Any]], n: int | None, seed: int) -> list[dict[str, Any]]:
    """Per (agent model, world, kind): `n` outputs drawn without replacement (all where n is None or
    larger), so each model's rate rests on a sample of its own."""
    chosen = []
    for model in sorted({x["model"] for x in items}):
        for world in WORLDS:
            for kind in KINDS:
                pool = [x for x in items if x["model"] == model and x["world"] == world and x["kind"] == kind]
                if n is not None and n < len(pool):
                    pool = seeds.rng(seed, "opinion_dynamics", "outside_info", model, world, kind).sample(pool, n)
                chosen += pool
    return sorted(chosen, key=lambda x: (x["sim_id"], x["t"], x["kind"]))


def request(
    prompts: Mapping[str, Any], item: Mapping[str, Any], client: LLMClient, cfg: Mapping[str, Any], seed: int, name: str
) -> Request:
    text = prompts["outside_info"].format(kind=item["kind"], claim=item["claim"], text=str(item["text"]).strip())
    sampling = client.sampling(max_tokens=cfg["max_tokens"], temperature=cfg["temperature"])
    s = derive_seed(seed, "opinion_dynamics", "outside_info", name, item["sim_id"], item["t"], item["kind"])
    label = f"{item['sim_id']} t={item['t']} {item['kind']}"
    return Request.chat([{"role": "user", "content": text}], s, sampling, ANSWER, label=label)


def label(item: Mapping[str, Any], resp: Response, name: str) -> dict[str, Any]:
    ans = sim_judge.answer(resp, outside=None)
    keep = ("sim_id", "t", "kind", "agent", "model", "topic", "world")
    return {
        **{k: item[k] for k in keep},
        "outside": None if ans["outside"] is None else ans["outside"] == "yes",
        "raw_answer": ans["raw_answer"],
        "parse_ok": ans["parse_ok"],
        "judge_model": name,
    }


async def judge(
    items: Sequence[dict[str, Any]],
    prompts: Mapping[str, Any],
    cfg: Mapping[str, Any],
    client: LLMClient,
    name: str,
    seed: int,
) -> list[dict[str, Any]]:
    """One label per output, all concurrently, started claim by claim and kind by kind (the prompts
    that share a prefix); rows in the items' order."""

    async def one(x: dict[str, Any]) -> list[dict[str, Any]]:
        return [label(x, await client.generate(request(prompts, x, client, cfg, seed, name)), name)]

    def group(x: dict[str, Any]) -> tuple[str, ...]:
        return (str(x["claim"]), str(x["kind"]))

    return await runner.run_grouped({name: client}, items, one, group, f"outside information ({name})", unit="output")
