"""Setups: one self-contained row per simulation (paper 002, Algorithm 1 and section 4).

Factors: model x topic x framing x confirmation bias x memory x initial distribution x topology x
repetition (the main grid), the Fig. 5 runs (non-uniform starts) and the two controls per model x
topic x framing x repetition. A row holds the N agents with their persona texts, initial opinions
and system prompts, and the full precomputed pair schedule.

Seeds (never a global RNG): the pair schedule, the graph and the opinion assignment derive from
(run seed, topic, initial distribution, topology, repetition), so by default every condition of a
(topic, repetition) plays the same pair sequence (common random numbers: sharper contrasts);
`schedule: independent` adds the model, framing, bias and memory to the schedule's ids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from socsim import seeds
from socsim.opinion_dynamics import materials, network

# The paper's initial distributions (code names), as shares of N at each value.
DISTRIBUTIONS = {
    "uniform": {-2: 0.2, -1: 0.2, 0: 0.2, 1: 0.2, 2: 0.2},
    "skewed_positive": {2: 0.8, -2: 0.2},
    "skewed_negative": {-2: 0.8, 2: 0.2},
    "positive": {2: 1.0},
    "negative": {-2: 1.0},
}


def multiset(init: str, n: int) -> list[int]:
    """The initial opinions of a distribution for N agents, sorted (an error when N does not split)."""
    if init not in DISTRIBUTIONS:
        raise ValueError(f"unknown initial distribution {init!r} (known: {', '.join(DISTRIBUTIONS)})")
    out = []
    for value, share in sorted(DISTRIBUTIONS[init].items()):
        count = share * n
        if abs(count - round(count)) > 1e-9:
            raise ValueError(
                f"initial distribution {init!r} needs N divisible by "
                f"{round(1 / min(DISTRIBUTIONS[init].values()))}, got N = {n}"
            )
        out += [value] * round(count)
    return out


def assign(init: str, personas: list[dict[str, Any]], seed: int, *ids: object) -> list[int]:
    """Initial opinion per agent: the uniform start with the 10 listed personas keeps their listed
    opinions (App. B is a uniform draw); otherwise a seeded permutation of the distribution."""
    values = multiset(init, len(personas))
    if init == "uniform" and sorted(p["initial"] for p in personas) == values:
        return [p["initial"] for p in personas]
    rng = seeds.rng(seed, "opinion_dynamics", *ids, "opinions")
    rng.shuffle(values)
    return values


def topology_label(topology: dict[str, Any]) -> str:
    rest = "".join(f"-{k}{topology[k]}" for k in sorted(topology) if k != "kind")
    return f"{topology['kind']}{rest}"


def system_prompt(
    prompts: dict[str, Any], persona: str, claim: str, world: str, bias: str, control: bool = False
) -> str:
    text = prompts["control_system" if control else "system"].format(persona=persona, claim=claim).strip()
    return " ".join([text, *reminder_parts(prompts, world, bias)])


def reminder_parts(prompts: dict[str, Any], world: str, bias: str) -> list[str]:
    parts = [prompts["closed_world"].strip()] if world == "closed" else []
    return parts + ([prompts["bias"][bias].strip()] if bias != "none" else [])


def build(
    od: dict[str, Any], seed: int, personas: list[dict[str, Any]], topics: list[dict[str, Any]], prompts: dict[str, Any]
) -> list[dict[str, Any]]:
    """One row per simulation: the main runs (every factor level), Fig. 5's runs the main ones do not
    cover, and the two controls, per agent model in that order."""
    d = _Design(od, seed, personas, topics, prompts)
    framings = ["true" if f else "false" for f in od["framings"]]
    for model in od["agent_models"]:
        for topic in od["topics"]:
            for rep in range(od["repetitions"]):
                for framing in framings:
                    for bias in od["confirmation_bias"]:
                        for memory in od["memory"]:
                            for init in od["initial_distributions"]:
                                for topo in od["topologies"]:
                                    for world in d.worlds:
                                        d.main_run(model, topic, framing, bias, memory, init, topo, rep, world)
        _fig5_runs(d, model, framings)
        if od["controls"]["enabled"]:
            for topic in od["topics"]:
                for rep in range(od["repetitions"]):
                    for framing in framings:
                        for world in d.worlds:
                            d.rows += controls(
                                od, seed, d.agents, prompts, d.by_id[topic], framing, model, rep, d.row, world
                            )
    ids = [r["sim_id"] for r in d.rows]
    if len(set(ids)) != len(ids):
        raise ValueError("two simulations share an id: list each factor level once")
    return d.rows


def _fig5_runs(d: _Design, model: str, framings: list[str]) -> None:
    """Fig. 5's runs (no bias, its memory, its starts, complete graph) that the main runs do not cover."""
    od, fig5 = d.od, d.od["fig5"]
    for topic in fig5["topics"]:
        for rep in range(od["repetitions"]):
            for framing in framings:
                for init in fig5["distributions"]:
                    if not (
                        topic in od["topics"]
                        and "none" in od["confirmation_bias"]
                        and fig5["memory"] in od["memory"]
                        and init in od["initial_distributions"]
                        and {"kind": "complete"} in od["topologies"]
                    ):
                        for world in d.worlds:
                            d.main_run(
                                model, topic, framing, "none", fig5["memory"], init, {"kind": "complete"}, rep, world
                            )


class _Design:
    """The run's design being laid out: its params, agents and topics, and the rows built so far."""

    def __init__(
        self,
        od: dict[str, Any],
        seed: int,
        personas: list[dict[str, Any]],
        topics: list[dict[str, Any]],
        prompts: dict[str, Any],
    ) -> None:
        n = od["n_agents"]
        if n > len(personas):
            raise ValueError(f"opinion_dynamics.n_agents = {n}, but the personas file holds only {len(personas)}")
        if n < 2:
            raise ValueError("opinion_dynamics.n_agents must be at least 2 (a writer and a reviewer)")
        self.by_id = {t["topic"]: t for t in topics}
        unknown = [t for t in [*od["topics"], *od["fig5"]["topics"]] if t not in self.by_id]
        if unknown:
            known = ", ".join(self.by_id)
            raise ValueError(f"opinion_dynamics.topics: unknown topic(s) {', '.join(unknown)} (known: {known})")
        self.od, self.seed, self.prompts, self.n, self.steps = od, seed, prompts, n, od["steps"]
        self.agents = personas[:n]
        self.inject = od["injection"] == "every_prompt"
        # one world or a list
        self.worlds = [od["world"]] if isinstance(od["world"], str) else list(dict.fromkeys(od["world"]))
        self.rows: list[dict[str, Any]] = []

    def schedule(
        self, topic: str, init: str, topo: dict[str, Any], rep: int, extra: tuple[object, ...] = ()
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[int]]:
        n, seed = self.n, self.seed
        ids = (topic, init, topology_label(topo), rep)
        edges = network.edges_of(network.graph(topo, n, seeds.derive_seed(seed, "opinion_dynamics", *ids, "graph")))
        rng = seeds.rng(seed, "opinion_dynamics", *ids, *extra, "schedule")
        pairs = network.schedule(n, self.steps, rng, None if topo["kind"] == "complete" else edges)
        return edges, pairs, assign(init, self.agents, seed, topic, init, rep)

    def row(self, **kw: Any) -> dict[str, Any]:
        keys = ("model", "topic", "framing", "bias", "memory", "world", "init", "topology", "condition")
        sim_id = ".".join(str(kw[k]) for k in keys) + f".r{kw['rep']}"
        topic = self.by_id[kw["topic"]]
        return {
            "sim_id": sim_id,
            "category": topic["category"],
            "claim": topic[f"claim_{kw['framing']}"],
            "seed": self.seed,
            **kw,
        }

    def main_run(
        self,
        model: str,
        topic: str,
        framing: str,
        bias: str,
        memory: str,
        init: str,
        topo: dict[str, Any],
        rep: int,
        world: str,
    ) -> None:
        extra = () if self.od["schedule"] == "shared" else (model, framing, bias, memory)
        edges, pairs, initial = self.schedule(topic, init, topo, rep, extra)
        claim = self.by_id[topic][f"claim_{framing}"]
        prompts = self.prompts
        texts = [materials.persona_text(prompts, p, o) for p, o in zip(self.agents, initial)]
        self.rows.append(
            self.row(
                model=model,
                topic=topic,
                framing=framing,
                bias=bias,
                memory=memory,
                world=world,
                init=init,
                topology=topology_label(topo),
                condition="main",
                rep=rep,
                n_agents=self.n,
                steps=self.steps,
                agent_names=[p["name"] for p in self.agents],
                initial=initial,
                personas=texts,
                system_prompts=[system_prompt(prompts, t, claim, world, bias) for t in texts],
                reminder=" ".join(reminder_parts(prompts, world, bias)) if self.inject else "",
                writers=[w for w, _ in pairs],
                reviewers=[r for _, r in pairs],
                edges=[list(e) for e in edges],
            )
        )


def controls(
    od: dict[str, Any],
    seed: int,
    agents: list[dict[str, Any]],
    prompts: dict[str, Any],
    topic: dict[str, Any],
    framing: str,
    model: str,
    rep: int,
    row: Callable[..., dict[str, Any]],
    world: str = "closed",
) -> list[dict[str, Any]]:
    """Paper 4.3: (a) no interaction, with role play: every agent reports its belief; (b) no
    interaction, no role play: one bare agent. `independent` (the paper's text, default): `reports`
    fresh reports per agent, each its own context; otherwise (the original code) T steps, one
    uniformly random agent reporting with the memory of its own earlier reports."""
    c = od["controls"]
    claim = topic[f"claim_{framing}"]
    initial = assign("uniform", agents, seed, topic["topic"], "uniform", rep)
    texts = [materials.persona_text(prompts, p, o) for p, o in zip(agents, initial)]
    memory = "none" if c["independent"] else c["memory"]
    reminder = " ".join(reminder_parts(prompts, world, "none")) if od["injection"] == "every_prompt" else ""
    n = len(agents)
    if c["independent"]:
        roleplay = [i for _ in range(c["reports"]) for i in range(n)]
        bare = [0] * c["reports"]
    else:
        rng = seeds.rng(seed, "opinion_dynamics", topic["topic"], rep, "control_schedule")
        roleplay = [rng.randrange(n) for _ in range(od["steps"])]
        bare = [0] * od["steps"]
    common = dict(
        model=model,
        topic=topic["topic"],
        framing=framing,
        bias="none",
        memory=memory,
        world=world,
        init="uniform",
        topology="none",
        rep=rep,
    )
    return [
        row(
            **common,
            condition="control_roleplay",
            n_agents=n,
            steps=len(roleplay),
            agent_names=[p["name"] for p in agents],
            initial=initial,
            personas=texts,
            system_prompts=[system_prompt(prompts, t, claim, world, "none", control=True) for t in texts],
            reminder=reminder,
            writers=[-1] * len(roleplay),
            reviewers=roleplay,
            edges=[],
        ),
        row(
            **common,
            condition="control_bare",
            n_agents=1,
            steps=len(bare),
            agent_names=["(no role)"],
            initial=[None],
            personas=[""],
            system_prompts=[None],
            reminder="",
            writers=[-1] * len(bare),
            reviewers=bare,
            edges=[],
        ),
    ]
