"""The three simulation modes and the four memory ablations (paper 003, Sect. 4-5) on the engine.

Every human s_i of a complete group gets a twin a_i with the same group, topic, partner schedule,
number of merged turns per dyad-round and speaker order; only the content is generated. A dyad-round
is an engine episode whose turn policy is the humans' speaker order (`policies.Schedule`) and whose
budget is the humans' turn count. What a twin sees (its memory, one user message per component,
all history as text, never as assistant turns):

1. system: demographics (part A) + the task and closed world (part B);
2. its initial opinion and justification;
3. one block per earlier round: both tweets and the whole dyad conversation;
4. the current round: both tweets and the utterances so far; then the instruction.

Sources per mode: Mode 1 (next message prediction) sees only human tweets and human utterances
(teacher forcing: each position is generated from the human history before it); Mode 2
(tweet-guided conversation) human tweets, its own simulated conversations; Mode 3 (full conversation
simulation) the human round-1 tweet, its own simulated tweets of rounds 2 and 3 (written at the start
of the round from its memory), simulated conversations, and at the end a final opinion (a label of
the six-point scale and a justification, JSON-constrained). Ablations drop components for every
generation: no_prior_chats (3), no_initial_opinion (2), no_demographics (part A), no_private_profile
(part A and 2). Rounds are sequential; the two dyads of a round and the sessions run concurrently.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from typing import Any

from socsim.debate.schemas import SETTING
from socsim.llm import JsonSchema, LLMClient, Request
from socsim.seeds import derive_seed
from socsim.sim import policies, runner, stop
from socsim.sim.episode import Episode, Speaker, Turn, play

ABLATIONS = ("original", "no_prior_chats", "no_initial_opinion", "no_demographics", "no_private_profile")
PREFIX = re.compile(r"^\s*(my response|response)\s*:\s*", re.IGNORECASE)


def clean(text: str) -> str:
    """A reply without a leading "My response:" and surrounding quotes."""
    text = PREFIX.sub("", text.strip())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def final_opinion_schema(labels: Iterable[str]) -> JsonSchema:
    """The final-opinion answer: one of the stance labels and a justification."""
    return JsonSchema.of(
        {
            "type": "object",
            "required": ["opinion", "justification"],
            "properties": {"opinion": {"enum": list(labels)}, "justification": {"type": "string"}},
        }
    )


def options(prompts: dict[str, Any]) -> str:
    return ", ".join(f'"{label}"' for label in prompts["labels"])


def label_of(prompts: dict[str, Any], value: float) -> str:
    label: str = min(prompts["labels"], key=lambda lab: abs(prompts["labels"][lab] - value))
    return label


class Session:
    """One group's twins under one setting (model, mode, ablation)."""

    def __init__(
        self,
        setting: dict[str, Any],
        session: dict[str, Any],
        participants: list[dict[str, Any]],
        tweets: list[dict[str, Any]],
        utterances: list[dict[str, Any]],
        prompts: dict[str, Any],
        dp: dict[str, Any],
        seed: int,
        client: LLMClient,
    ):
        self.set, self.s, self.p, self.dp, self.seed, self.client = setting, session, prompts, dp, seed, client
        self.mode, self.ablation = setting["mode"], setting["ablation"]
        self.people = {p["worker_id"]: p for p in participants}
        self.names = {w: p["name"] for w, p in self.people.items()}
        self.human_tweets = {(t["round"], t["worker_id"]): t for t in tweets}
        self.human: dict[tuple[int, str], list[dict[str, Any]]] = {}
        for u in utterances:
            self.human.setdefault((u["round"], u["dyad"]), []).append(u)
        self.partner = {(r, w): t["partner_id"] for (r, w), t in self.human_tweets.items()}
        self.sim_tweets: dict[tuple[int, str], str] = {}
        self.sim_turns: dict[tuple[int, str], list[dict[str, Any]]] = {}  # (round, dyad) -> [{speaker, text}]
        self.sampling = client.sampling(max_tokens=dp["max_tokens"])
        self.rows: list[dict[str, Any]] = []

    # -- memory ---------------------------------------------------------------------------------
    def system(self, worker: str) -> str:
        parts = (
            []
            if self.ablation in ("no_demographics", "no_private_profile")
            else [self.p["demographics"].format(**json.loads(self.people[worker]["demographics"])).strip()]
        )
        return " ".join(parts + [self.p["task"].format(topic=self.s["statement"]).strip()])

    def tweet(self, r: int, worker: str) -> str:
        if self.mode == 3 and r >= 2:
            return self.sim_tweets[(r, worker)]
        text: str = self.human_tweets[(r, worker)]["text"]
        return text

    def turns(self, r: int, dyad: str, upto: int | None = None) -> list[dict[str, Any]]:
        """The utterances of a dyad-round this twin remembers: human (Mode 1) or simulated."""
        if self.mode == 1:
            return self.human.get((r, dyad), [])[:upto]
        return self.sim_turns.get((r, dyad), [])[:upto]

    def block(self, r: int, worker: str, turns: list[dict[str, Any]]) -> list[str]:
        partner = self.partner[(r, worker)]
        name = self.names[partner]
        lines = [
            self.p["my_tweet"].format(text=self.tweet(r, worker)),
            self.p["partner_tweet"].format(partner=name, text=self.tweet(r, partner)),
        ]
        for t in turns:
            mine = t["speaker"] == worker
            lines.append(self.p["my_response" if mine else "partner_response"].format(partner=name, text=t["text"]))
        return lines

    def dyad(self, r: int, worker: str) -> str:
        return "|".join(sorted((worker, self.partner[(r, worker)])))

    def memory(self, worker: str, r: int, current: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        """System, initial opinion, earlier rounds, and (current given) the current round so far."""
        p = self.people[worker]
        msgs = [{"role": "system", "content": self.system(worker)}]
        if self.ablation not in ("no_initial_opinion", "no_private_profile"):
            msgs.append(
                {
                    "role": "user",
                    "content": self.p["initial_opinion"]
                    .format(
                        topic=self.s["statement"],
                        options=options(self.p),
                        label=label_of(self.p, p["o_init"]),
                        justification=p["j_init"],
                    )
                    .strip(),
                }
            )
        prior = self.ablation != "no_prior_chats"
        if prior:
            for q in range(1, min(r, 4)):
                head = self.p["previous_round"].format(partner=self.names[self.partner[(q, worker)]])
                msgs.append(
                    {
                        "role": "user",
                        "content": "\n".join([head, *self.block(q, worker, self.turns(q, self.dyad(q, worker)))]),
                    }
                )
        if current is not None:
            name = self.names[self.partner[(r, worker)]]
            head = (
                self.p["next_partner"].format(previous=self.names[self.partner[(r - 1, worker)]], partner=name)
                if prior and r > 1
                else self.p["current_round"].format(partner=name)
            )
            msgs.append({"role": "user", "content": "\n".join([head.strip(), *self.block(r, worker, current)])})
        return msgs

    # -- generation ---------------------------------------------------------------------------------
    def row(self, r: int, kind: str, dyad: str, k: int, speaker: str, partner: str, text: str, **extra: Any) -> None:
        self.rows.append(
            {
                **self.set,
                "session_id": self.s["session_id"],
                "round": r,
                "kind": kind,
                "dyad": dyad,
                "k": k,
                "speaker": speaker,
                "partner": partner,
                "text": text,
                "opinion": extra.get("opinion"),
                "parse_ok": extra.get("parse_ok", True),
                "raw": extra.get("raw", text),
            }
        )

    def ids(self, *more: object) -> tuple[object, ...]:
        return ("debate", self.set["model"], self.mode, self.ablation, self.s["session_id"], *more)

    async def write_tweet(self, r: int, worker: str) -> None:
        msgs = self.memory(worker, r, None) + [
            {"role": "user", "content": self.p["tweet"].format(topic=self.s["statement"])}
        ]
        resp = await self.client.generate(
            Request.chat(
                msgs,
                derive_seed(self.seed, *self.ids(r, worker, "tweet")),
                self.sampling,
                label=" ".join(map(str, self.ids(r, worker, "tweet"))),
            )
        )
        self.sim_tweets[(r, worker)] = clean(resp.text)
        self.row(r, "tweet", "", 0, worker, self.partner[(r, worker)], self.sim_tweets[(r, worker)], raw=resp.text)

    async def converse(self, r: int, dyad: str) -> None:
        human = self.human.get((r, dyad), [])
        if not human:
            return
        a, b = dyad.split("|")
        ep = Episode(
            f"{self.s['session_id']}.r{r}.{dyad}",
            self.set["model"],
            self.seed,
            (Speaker(a, self.names[a], None), Speaker(b, self.names[b], None)),
            seed_ids=self.ids(r, dyad),
        )
        order = [(u["speaker"], u["partner"]) for u in human]

        def messages(speaker: Speaker, turns: list[Turn]) -> list[dict[str, Any]]:
            current = (
                self.turns(r, dyad, len(turns))
                if self.mode == 1
                else [{"speaker": t["speaker_id"], "text": t["text"]} for t in turns]
            )
            partner = self.names[self.partner[(r, speaker.id)]]
            return self.memory(speaker.id, r, current) + [
                {"role": "user", "content": self.p["utterance"].format(partner=partner)}
            ]

        raws: list[str] = []

        def reply(speaker: Speaker, text: str) -> tuple[str, bool]:
            raws.append(text)  # the model's own text is kept beside the cleaned one
            return clean(text), False

        turns = await play(
            ep, policies.Schedule(order), stop.TurnBudget(len(order)), self.client, self.sampling, messages, reply
        )
        self.sim_turns[(r, dyad)] = [{"speaker": t["speaker_id"], "text": t["text"]} for t in turns]
        for k, (t, raw) in enumerate(zip(turns, raws), 1):
            self.row(r, "utterance", dyad, k, t["speaker_id"], self.partner[(r, t["speaker_id"])], t["text"], raw=raw)

    async def final_opinion(self, worker: str) -> None:
        schema = final_opinion_schema(self.p["labels"])
        msgs = self.memory(worker, 4, None) + [
            {
                "role": "user",
                "content": self.p["final_opinion"].format(topic=self.s["statement"], options=options(self.p)),
            }
        ]
        req = Request.chat(
            msgs,
            derive_seed(self.seed, *self.ids(worker, "final")),
            self.client.sampling(max_tokens=self.dp["opinion_max_tokens"]),
            schema,
            label=" ".join(map(str, self.ids(worker, "final"))),
        )
        resp = await self.client.generate(req)
        value = self.p["labels"][resp.value["opinion"]] if resp.parse_ok else None
        text = resp.value["justification"] if resp.parse_ok else resp.text
        self.row(4, "opinion", "", 0, worker, "", text, opinion=value, parse_ok=resp.parse_ok, raw=resp.text)

    async def run(self) -> list[dict[str, Any]]:
        workers = sorted(self.people)
        for r in (1, 2, 3):
            if self.mode == 3 and r >= 2:
                await asyncio.gather(*(self.write_tweet(r, w) for w in workers))
            dyads = sorted({self.dyad(r, w) for w in workers})
            await asyncio.gather(*(self.converse(r, d) for d in dyads))
        if self.mode == 3:
            await asyncio.gather(*(self.final_opinion(w) for w in workers))
        return self.rows


def by_session(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["session_id"], []).append(r)
    return out


async def run_setups(
    setups: list[dict[str, Any]],
    participants: list[dict[str, Any]],
    tweets: list[dict[str, Any]],
    utterances: list[dict[str, Any]],
    prompts: dict[str, Any],
    dp: dict[str, Any],
    clients: dict[str, LLMClient],
) -> list[dict[str, Any]]:
    """Every setup row (one session under one setting, socsim.debate.setups) concurrently, each on the
    seed its row carries."""
    people, tw, ut = by_session(participants), by_session(tweets), by_session(utterances)
    for s in setups:
        if s["session_id"] not in people or s["session_id"] not in tw:
            raise ValueError(f"setup {s['setup_id']}: session {s['session_id']} has no participants or tweets")
    jobs = (
        Session(
            {k: s[k] for k in SETTING},
            {"session_id": s["session_id"], "statement": s["statement"]},
            people[s["session_id"]],
            tw[s["session_id"]],
            ut.get(s["session_id"], []),
            prompts,
            dp,
            s["seed"],
            clients[s["model"]],
        ).run()
        for s in setups
    )
    return await runner.run_all(clients, jobs, "twins", unit="group")
