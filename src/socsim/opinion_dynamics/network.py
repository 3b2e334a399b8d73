"""Interaction topologies and the (writer, reviewer) pair schedule.

The paper's population is fully mixed: at every step t = 1..T an ordered pair (w, r), w != r, is drawn uniformly
from the N(N-1) ordered pairs. The original code draws the writer uniformly from the N agents and then the reviewer
uniformly from the other N-1; `schedule` reproduces exactly that draw (one `randrange(n)`, one `randrange(n - 1)`).

Beyond the paper (spec §7, feature 3) the reviewer can be restricted to the writer's neighbours on a graph:
the writer is still uniform over all N agents and the reviewer is uniform over the writer's sorted neighbour
list. On the complete graph this consumes the same random numbers and yields the identical pairs as the fully
mixed draw, so "complete" is the paper's setting whichever way it is run.

Random graphs (Erdős-Rényi, Watts-Strogatz) are seeded through `socsim.seeds.derive_seed` and must be connected,
so every agent has someone to review it and someone to review: attempt k uses seed
derive_seed(seed, "graph", k), k = 0..99, and the first connected graph is taken.
"""

from __future__ import annotations

import numbers
import random
from typing import Any, cast

import networkx

from socsim.seeds import derive_seed

TOPOLOGIES = ("complete", "erdos_renyi", "watts_strogatz")

MAX_GRAPH_ATTEMPTS = 100

_PARAMS = {"complete": (), "erdos_renyi": ("p",), "watts_strogatz": ("k", "beta")}


def _real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_n(n: int) -> None:
    if not _int(n) or n < 2:
        raise ValueError(f"n must be an integer >= 2 (got {n!r})")


def _validate(topology: dict[str, Any], n: int) -> str:
    if not isinstance(topology, dict):
        raise ValueError(f"topology must be a dict with a 'kind' key (got {topology!r})")
    kind = cast(str, topology.get("kind"))  # checked against TOPOLOGIES next
    if kind not in TOPOLOGIES:
        raise ValueError(f"unknown topology kind {kind!r}; expected one of {', '.join(TOPOLOGIES)}")
    allowed = {"kind", *_PARAMS[kind]}
    extra = sorted(set(topology) - allowed)
    if extra:
        raise ValueError(
            f"topology {kind!r} does not take parameter(s) {', '.join(map(str, extra))}; "
            f"it takes: {', '.join(_PARAMS[kind]) or 'none'}"
        )
    missing = [p for p in _PARAMS[kind] if p not in topology]
    if missing:
        raise ValueError(f"topology {kind!r} needs parameter(s) {', '.join(missing)}")
    if kind == "erdos_renyi":
        p = topology["p"]
        if not _real(p) or not 0 < p <= 1:
            raise ValueError(f"erdos_renyi parameter p must be a number in (0, 1] (got {p!r})")
    elif kind == "watts_strogatz":
        k, beta = topology["k"], topology["beta"]
        if not _int(k) or k < 2 or k % 2 or k >= n:
            raise ValueError(
                f"watts_strogatz parameter k must be an even integer with 2 <= k < n = {n} "
                f"(got {k!r}); each node joins its k nearest ring neighbours, k/2 on each side"
            )
        if not _real(beta) or not 0 <= beta <= 1:
            raise ValueError(f"watts_strogatz parameter beta must be a number in [0, 1] (got {beta!r})")
    return kind


def graph(topology: dict[str, Any], n: int, seed: int) -> networkx.Graph:
    """The interaction graph on agents 0..n-1.

    topology: {"kind": "complete"} (the paper: fully mixed), {"kind": "erdos_renyi", "p": 0.3} or
    {"kind": "watts_strogatz", "k": 4, "beta": 0.1}. Random graphs are redrawn with seeds
    derive_seed(seed, "graph", attempt), attempt = 0..99, until connected; ValueError if none is.
    """
    _check_n(n)
    kind = _validate(topology, n)
    if kind == "complete":
        return networkx.complete_graph(n)
    for attempt in range(MAX_GRAPH_ATTEMPTS):
        s = derive_seed(seed, "graph", attempt)
        if kind == "erdos_renyi":
            g = networkx.erdos_renyi_graph(n, float(topology["p"]), seed=s)
        else:
            g = networkx.watts_strogatz_graph(n, int(topology["k"]), float(topology["beta"]), seed=s)
        if networkx.is_connected(g):
            return g
    hint = "raise p" if kind == "erdos_renyi" else "raise k (or lower beta)"
    raise ValueError(
        f"{kind} graph with n={n} and { ({k: v for k, v in topology.items() if k != 'kind'}) } was not "
        f"connected in {MAX_GRAPH_ATTEMPTS} seeded attempts; {hint}"
    )


def edges_of(g: networkx.Graph) -> list[tuple[int, int]]:
    """Sorted edge list with u < v in each pair (self-loops dropped)."""
    return sorted({(min(u, v), max(u, v)) for u, v in g.edges() if u != v})


def schedule(
    n: int, steps: int, rng: random.Random, edges: list[tuple[int, int]] | None = None
) -> list[tuple[int, int]]:
    """The ordered (writer, reviewer) pairs of `steps` steps among agents 0..n-1.

    edges None (fully mixed, the paper): writer = rng.randrange(n), reviewer uniform among the other n-1 agents.
    With edges: writer uniform among all n agents, reviewer uniform among the writer's sorted neighbours; every
    agent must have a neighbour. The complete graph's edges give the same pairs as edges=None.
    """
    _check_n(n)
    if not _int(steps) or steps < 0:
        raise ValueError(f"steps must be an integer >= 0 (got {steps!r})")
    if not isinstance(rng, random.Random):
        raise ValueError("rng must be a random.Random (use socsim.seeds.rng); the global RNG is not allowed")
    pairs: list[tuple[int, int]] = []
    if edges is None:
        for _ in range(steps):
            w = rng.randrange(n)
            r = rng.randrange(n - 1)
            r += r >= w
            pairs.append((w, r))
        return pairs
    neighbours: list[set[int]] = [set() for _ in range(n)]
    for edge in edges:
        try:
            u, v = edge
        except (TypeError, ValueError):
            raise ValueError(f"edge {edge!r} is not a pair (u, v)") from None
        if not (_int(u) and _int(v) and 0 <= u < n and 0 <= v < n):
            raise ValueError(f"edge {edge!r} has an agent index outside 0..{n - 1}")
        if u == v:
            raise ValueError(f"edge {edge!r} is a self-loop; an agent cannot review its own tweet")
        neighbours[u].add(int(v))
        neighbours[v].add(int(u))
    isolated = [i for i in range(n) if not neighbours[i]]
    if isolated:
        raise ValueError(f"agents {isolated} have no neighbour in the edge list; use a connected graph")
    ordered = [sorted(s) for s in neighbours]
    for _ in range(steps):
        w = rng.randrange(n)
        nb = ordered[w]
        pairs.append((w, nb[rng.randrange(len(nb))]))
    return pairs


def review_probabilities(n: int, edges: list[tuple[int, int]] | None = None) -> list[float]:
    """P(agent i is the reviewer at one step) under `schedule`: the writer is uniform over the n agents
    and the reviewer uniform over the writer's neighbours, so p_i = (1/n) sum over neighbours w of i of
    1/deg(w); fully mixed (edges None): 1/n for every agent."""
    _check_n(n)
    if edges is None:
        return [1.0 / n] * n
    neighbours: list[set[int]] = [set() for _ in range(n)]
    for u, v in edges:
        neighbours[u].add(v)
        neighbours[v].add(u)
    return [sum(1.0 / (n * len(neighbours[w])) for w in neighbours[i]) for i in range(n)]


def expected_reviewed_share(n: int, steps: int, edges: list[tuple[int, int]] | None = None) -> float:
    """The expected share of the n agents reviewed (so measured: the writer never is) at least once in
    `steps` steps of `schedule`. Steps are independent draws, so agent i is never reviewed with
    probability (1 - p_i)^steps (`review_probabilities`); fully mixed: 1 - (1 - 1/n)^steps."""
    return 1.0 - sum((1.0 - p) ** steps for p in review_probabilities(n, edges)) / n
