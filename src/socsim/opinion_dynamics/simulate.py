"""Simulate (paper 002, Algorithm 1) on the engine (socsim.sim).

A simulation is an episode whose turn policy is its precomputed pair schedule: at step t the writer
w writes a tweet, then the reviewer r reads it and reports its belief with step-by-step reasoning
(two turns per step). What each agent sees: the system prompt (persona, Twitter framing, closed
world and bias), its persona again as the first user message, its memory, then the task prompt
(with the closed-world and bias reminder repeated, `injection: every_prompt`, as the original code
does). The model's answers are not kept as assistant turns: after each turn the agent's memory
gets one event (the engine's `observe` step):

- cumulative memory: the event text of the six cases (previous type -> this type, spec 1.1), tweet
  counts as ordinals;
- reflective memory (`reflective_variant: paper`, default): one reflection call after every event;
  the first asks for a summary, later ones for an updated summary, and the memory becomes the new
  summary alone. `code` reproduces the original code: one reflection counter shared by all agents
  (only the simulation's first reflection uses the first wording), later reflections see the
  just-added event in the summary slot as a message repr, and every reflection is appended.

Context growth: memory events beyond `memory_max_tokens` (estimated as characters / 4) are left out
of a prompt, oldest first (a reflective summary is always kept); the number left out is recorded per
step (`truncated_events`) and summed in the metrics. Controls (paper 4.3) are episodes of reports
only: one agent per step (the schedule's reviewer) reports its belief; with `memory: none` each
report is a fresh context (independent reports), otherwise the agent remembers its own reports.
Steps within a simulation are sequential; simulations run concurrently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from socsim.llm import LLMClient, Request
from socsim.opinion_dynamics.materials import ordinal
from socsim.seeds import derive_seed
from socsim.sim import policies, runner, stop, views
from socsim.sim.episode import Episode, Speaker, Turn, play

CHARS_PER_TOKEN = 4  # the truncation policy's token estimate


@dataclass
class Agent:
    index: int
    name: str
    persona: str
    memory: views.Memory = field(default_factory=lambda: views.Memory())
    prev: str = "none"  # none | write | review: selects the prompt and the memory event case
    tweets: int = 0
    reports: int = 0
    events: int = 0


class Simulation:
    """One setups row played on the engine; `rows()` gives its EVENTS rows afterwards."""

    def __init__(self, setup: dict[str, Any], prompts: dict[str, Any], od: dict[str, Any], client: LLMClient):
        self.s, self.p, self.od, self.client = setup, prompts, od, client
        self.control = setup["condition"] != "main"
        self.agents = [
            Agent(i, name, persona, views.Memory(summary_head=prompts["reflection_head"]))
            for i, (name, persona) in enumerate(zip(setup["agent_names"], setup["personas"]))
        ]
        self.sampling = client.sampling(max_tokens=od["max_tokens"])
        self.steps: dict[int, dict[str, Any]] = {}  # t -> the EVENTS row being filled
        self.reflections = 0  # reflective_variant code: the counter all agents share
        self.episode = Episode(
            setup["sim_id"],
            setup["model"],
            setup["seed"],
            tuple(Speaker(str(i), a.name, sp) for i, (a, sp) in enumerate(zip(self.agents, setup["system_prompts"]))),
            seed_ids=("opinion_dynamics", setup["sim_id"]),
        )

    # -- the schedule -------------------------------------------------------------------
    def turns_per_step(self) -> int:
        return 1 if self.control else 2

    def policy(self) -> policies.Schedule:
        pairs = []
        for w, r in zip(self.s["writers"], self.s["reviewers"]):
            pairs += [(str(r), str(r))] if self.control else [(str(w), str(r)), (str(r), str(w))]
        return policies.Schedule(pairs)

    def step_of(self, turn: int) -> tuple[int, str]:
        """(t, what the turn is: write | review | report) of a turn index."""
        t, k = divmod(turn, self.turns_per_step())
        return t + 1, "report" if self.control else ("write", "review")[k]

    def step(self, t: int) -> dict[str, Any]:
        if t not in self.steps:
            i = t - 1
            self.steps[t] = {
                "sim_id": self.s["sim_id"],
                "t": t,
                "model": self.s["model"],
                "topic": self.s["topic"],
                "condition": self.s["condition"],
                "writer": self.s["writers"][i],
                "reviewer": self.s["reviewers"][i],
                "writer_prev": "none",
                "reviewer_prev": "none",
                "tweet": None,
                "report": "",
                "writer_reflection": None,
                "reviewer_reflection": None,
                "completion_tokens": 0,
                "truncated_events": 0,
            }
        return self.steps[t]

    # -- what an agent sees ----------------------------------------------------------------
    def context(self, agent: Agent, prompt: str, t: int, with_memory: bool = True) -> list[dict[str, Any]]:
        system = self.episode.speakers[agent.index].system_prompt
        msgs = [{"role": "system", "content": system}] if system else []
        memory = self.fit(agent, t) if with_memory else []
        parts = ([agent.persona] if agent.persona else []) + [m["content"] for m in memory] + [prompt]
        if self.od["history_layout"] == "merged":  # for chat templates that refuse consecutive user turns
            return msgs + [{"role": "user", "content": "\n\n".join(parts)}]
        return msgs + [{"role": "user", "content": c} for c in parts]

    def fit(self, agent: Agent, t: int) -> list[dict[str, Any]]:
        """The memory messages within `memory_max_tokens`, oldest events left out first."""
        msgs = agent.memory.messages()
        head = 1 if agent.memory.summary is not None else 0
        budget = self.od["memory_max_tokens"] * CHARS_PER_TOKEN
        dropped = 0
        while len(msgs) > head and sum(len(m["content"]) for m in msgs) > budget:
            del msgs[head]
            dropped += 1
        self.step(t)["truncated_events"] += dropped
        return msgs

    def task(self, text: str, cue: str) -> str:
        return "\n".join(x for x in (text.strip(), self.s["reminder"], cue) if x)

    def messages(self, speaker: Speaker, turns: list[Turn]) -> list[dict[str, Any]]:
        agent, claim = self.agents[int(speaker.id)], self.s["claim"]
        t, kind = self.step_of(len(turns))
        row = self.step(t)
        fill = dict(name=agent.name, claim=claim, k=ordinal(agent.tweets), k_prev=ordinal(max(agent.tweets, 1)))
        if kind == "write":
            row["writer_prev"] = agent.prev
            return self.context(agent, self.task(self.p["write"][agent.prev].format(**fill), self.p["write_cue"]), t)
        if kind == "review":
            row["reviewer_prev"] = agent.prev
            prompt = self.p["review"][agent.prev].format(tweet=turns[-1]["text"], **fill)
            return self.context(agent, self.task(prompt, self.p["review_cue"].format(name=agent.name)), t)
        row["reviewer_prev"] = agent.prev
        templates = self.p["control_report" if agent.persona else "control_report_bare"]
        independent = self.s["memory"] == "none"
        prompt = templates["later" if agent.reports and not independent else "first"].format(
            name=agent.name, claim=claim, k_prev=ordinal(max(agent.reports, 1))
        )
        return self.context(agent, self.task(prompt, self.p["control_cue"]), t, with_memory=not independent)

    # -- after each turn: the memory event (and a reflection) ------------------------------------
    async def observe(self, speaker: Speaker, turn: Turn) -> None:
        agent, claim = self.agents[int(speaker.id)], self.s["claim"]
        t, kind = self.step_of(turn["turn"])
        row = self.step(t)
        row["completion_tokens"] += turn["completion_tokens"]
        if kind == "write":
            agent.tweets += 1
            row["tweet"] = turn["text"]
            event = self.p["events"][f"{agent.prev}_write"].format(
                k=ordinal(agent.tweets), k_prev=ordinal(max(agent.tweets - 1, 1)), tweet=turn["text"], claim=claim
            )
        elif kind == "review":
            row["report"] = turn["text"]
            event = self.p["events"][f"{agent.prev}_review"].format(
                k=ordinal(agent.tweets), tweet=row["tweet"], reasoning=f"Reasoning: {turn['text']}"
            )
        else:
            agent.reports += 1
            row["report"] = turn["text"]
            event = self.p["control_event"].format(k=ordinal(agent.reports), claim=claim, reasoning=turn["text"])
        agent.prev = "write" if kind == "write" else "review"
        memory = self.s["memory"]
        if memory == "cumulative":
            agent.memory.append({"text": event})
        elif memory == "reflective":
            reflection = await self.reflect(agent, event, turn["turn"], t)
            row["writer_reflection" if kind == "write" else "reviewer_reflection"] = reflection
        agent.events += 1

    async def reflect(self, agent: Agent, event: str, turn: int, t: int) -> str:
        paper = self.od["reflective_variant"] == "paper"
        if paper:
            summary = agent.memory.summary
            prompt = (
                self.p["reflect_first"].format(event=event)
                if summary is None
                else self.p["reflect_update"].format(summary=summary, event=event)
            )
            msgs = self.context(agent, prompt, t, with_memory=False)
        else:  # the original code's semantics (spec 1.2 (i)-(iii))
            first = self.reflections == 0
            self.reflections += agent.events == 0
            agent.memory.append({"text": event})
            if first:  # the event is in memory: the prompt asks to reflect on "the experience above"
                prompt = self.p["reflect_code_first"]
            else:  # the just-added event leaves memory and fills the summary slot as a message repr
                popped = agent.memory.entries.pop()["text"]
                prompt = self.p["reflect_code_update"].format(summary=f"HumanMessage(content={popped!r})")
            msgs = self.context(agent, prompt, t)
        seed = derive_seed(self.s["seed"], "opinion_dynamics", self.s["sim_id"], turn, "reflect")
        label = f"{self.s['sim_id']} turn {turn} reflection"
        resp = await self.client.generate(Request.chat(msgs, seed, self.sampling, label=label))
        self.step(t)["completion_tokens"] += resp.completion_tokens
        text = resp.text.strip()
        if paper:
            agent.memory.summarise(text)
        else:
            agent.memory.append({"text": text})
        return text

    async def run(self) -> list[dict[str, Any]]:
        budget = self.turns_per_step() * self.s["steps"]
        await play(
            self.episode,
            self.policy(),
            stop.TurnBudget(budget),
            self.client,
            self.sampling,
            self.messages,
            observe=self.observe,
        )
        return [self.steps[t] for t in sorted(self.steps)]


async def run_simulations(
    setups: list[dict[str, Any]], prompts: dict[str, Any], od: dict[str, Any], clients: dict[str, LLMClient]
) -> list[dict[str, Any]]:
    return await runner.run_all(
        clients, (Simulation(s, prompts, od, clients[s["model"]]).run() for s in setups), "simulations", unit="sim"
    )
