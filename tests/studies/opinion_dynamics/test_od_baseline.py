"""Opinion dynamics: pair schedule, interaction graphs and the numeric ABM baselines (hand-computed expectations)."""

from __future__ import annotations

import random
from collections import Counter

import networkx
import numpy as np
import pytest

from socsim.opinion_dynamics import baseline, network
from socsim.seeds import derive_seed, rng

N = 10


# --- schedule ---------------------------------------------------------------------------------------------------


def test_fully_mixed_schedule_is_uniform_over_ordered_pairs():
    draws = 100_000
    pairs = network.schedule(N, draws, rng(7, "schedule-test"))
    assert len(pairs) == draws
    assert all(w != r for w, r in pairs)
    counts = Counter(pairs)
    assert set(counts) == {(w, r) for w in range(N) for r in range(N) if w != r}  # all 90 ordered pairs occur
    for pair, c in counts.items():
        assert abs(c / draws - 1 / 90) <= 0.0015, (pair, c / draws)
    writers = Counter(w for w, _ in pairs)
    reviewers = Counter(r for _, r in pairs)
    for i in range(N):
        assert abs(writers[i] / draws - 0.1) <= 0.005, (i, writers[i])
        assert abs(reviewers[i] / draws - 0.1) <= 0.005, (i, reviewers[i])


def test_fully_mixed_schedule_is_the_original_draw():
    # spec §1 step 2: first index uniform over N, second uniform over the other N - 1, in that order
    expected_rng = random.Random(derive_seed(3, "pairs"))
    expected = []
    for _ in range(500):
        w = expected_rng.randrange(N)
        r = expected_rng.randrange(N - 1)
        expected.append((w, r + (r >= w)))
    assert network.schedule(N, 500, rng(3, "pairs")) == expected


def test_schedule_seeded_and_reproducible():
    a = network.schedule(N, 200, rng(11, "topic", 0))
    b = network.schedule(N, 200, rng(11, "topic", 0))
    c = network.schedule(N, 200, rng(11, "topic", 1))
    assert a == b
    assert a != c


def test_complete_graph_edges_give_the_fully_mixed_pairs():
    edges = network.edges_of(network.graph({"kind": "complete"}, N, seed=5))
    assert len(edges) == 45
    assert network.schedule(N, 2000, rng(5, "s"), edges=edges) == network.schedule(N, 2000, rng(5, "s"))
    # edge order and orientation do not matter
    shuffled = [(v, u) for u, v in reversed(edges)]
    assert network.schedule(N, 2000, rng(5, "s"), edges=shuffled) == network.schedule(N, 2000, rng(5, "s"))


def test_schedule_zero_steps_and_bad_input():
    assert network.schedule(N, 0, rng(1)) == []
    with pytest.raises(ValueError, match="n must"):
        network.schedule(1, 5, rng(1))
    with pytest.raises(ValueError, match="steps"):
        network.schedule(N, -1, rng(1))
    with pytest.raises(ValueError, match="no neighbour"):
        network.schedule(3, 5, rng(1), edges=[(0, 1)])
    with pytest.raises(ValueError, match="self-loop"):
        network.schedule(3, 5, rng(1), edges=[(0, 1), (1, 2), (2, 2)])
    with pytest.raises(ValueError, match="outside"):
        network.schedule(3, 5, rng(1), edges=[(0, 1), (1, 3)])


def test_schedule_on_a_path_graph():
    # path 0-1-2: agent 0 and 2 can only be reviewed by 1, and 1 reviews 0 or 2 at random
    pairs = network.schedule(3, 3000, rng(2, "path"), edges=[(0, 1), (1, 2)])
    assert set(pairs) == {(0, 1), (2, 1), (1, 0), (1, 2)}
    counts = Counter(pairs)
    # writer uniform (1/3 each); writer 1 splits between 0 and 2 (1/6 each)
    assert abs(counts[(0, 1)] / 3000 - 1 / 3) < 0.04
    assert abs(counts[(1, 0)] / 3000 - 1 / 6) < 0.04


# --- graphs -----------------------------------------------------------------------------------------------------

RANDOM_TOPOLOGIES = [{"kind": "erdos_renyi", "p": 0.3}, {"kind": "watts_strogatz", "k": 4, "beta": 0.1}]


@pytest.mark.parametrize("topology", RANDOM_TOPOLOGIES, ids=lambda t: t["kind"])
def test_random_graphs_connected_and_seeded(topology):
    seen = set()
    for seed in range(20):
        g = network.graph(topology, N, seed)
        assert sorted(g.nodes) == list(range(N))
        assert networkx.is_connected(g)
        e = network.edges_of(g)
        assert e == network.edges_of(network.graph(topology, N, seed))  # same seed -> same graph
        seen.add(tuple(e))
    assert len(seen) > 1  # other seeds -> other graphs
    assert network.edges_of(network.graph(topology, N, 0)) != network.edges_of(network.graph(topology, N, 1))


def test_first_connected_attempt_is_taken():
    # attempt 0 uses derive_seed(seed, "graph", 0); if networkx's graph for it is connected it is the answer
    for seed in range(10):
        g0 = networkx.erdos_renyi_graph(N, 0.3, seed=derive_seed(seed, "graph", 0))
        if networkx.is_connected(g0):
            got = network.graph({"kind": "erdos_renyi", "p": 0.3}, N, seed)
            assert network.edges_of(got) == sorted((min(u, v), max(u, v)) for u, v in g0.edges)
            return
    pytest.fail("no seed in 0..9 had a connected first attempt")


@pytest.mark.parametrize("topology", RANDOM_TOPOLOGIES, ids=lambda t: t["kind"])
def test_schedule_on_graph_uses_only_edges(topology):
    g = network.graph(topology, N, seed=4)
    edges = network.edges_of(g)
    assert all(u < v for u, v in edges)
    assert edges == sorted(edges)
    undirected = set(edges)
    pairs = network.schedule(N, 5000, rng(4, "pairs"), edges=edges)
    assert all((min(w, r), max(w, r)) in undirected for w, r in pairs)
    assert all(w != r for w, r in pairs)
    assert {w for w, _ in pairs} == set(range(N))  # every agent writes (uniform writer)
    if len(edges) < 45:
        assert len(set(pairs)) < 90


def test_edges_of_sorted_u_less_than_v():
    g = networkx.Graph([(3, 1), (2, 0), (1, 0)])
    assert network.edges_of(g) == [(0, 1), (0, 2), (1, 3)]


@pytest.mark.parametrize(
    "topology, word",
    [
        ({"kind": "erdos_renyi"}, "p"),
        ({"kind": "erdos_renyi", "p": 0}, "p"),
        ({"kind": "erdos_renyi", "p": 1.5}, "p"),
        ({"kind": "erdos_renyi", "p": -0.1}, "p"),
        ({"kind": "erdos_renyi", "p": "0.3"}, "p"),
        ({"kind": "watts_strogatz", "beta": 0.1}, "k"),
        ({"kind": "watts_strogatz", "k": 4}, "beta"),
        ({"kind": "watts_strogatz", "k": 3, "beta": 0.1}, "k"),
        ({"kind": "watts_strogatz", "k": 10, "beta": 0.1}, "k"),
        ({"kind": "watts_strogatz", "k": 12, "beta": 0.1}, "k"),
        ({"kind": "watts_strogatz", "k": 0, "beta": 0.1}, "k"),
        ({"kind": "watts_strogatz", "k": 4, "beta": -0.1}, "beta"),
        ({"kind": "watts_strogatz", "k": 4, "beta": 1.5}, "beta"),
        ({"kind": "barabasi"}, "kind"),
        ({}, "kind"),
        ({"kind": "complete", "p": 0.5}, "p"),
    ],
)
def test_bad_topology_parameters(topology, word):
    with pytest.raises(ValueError, match=rf"\b{word}\b"):
        network.graph(topology, N, seed=0)


def test_unconnectable_graph_says_raise_p():
    # with p = 0.01 a 10-node graph has about 0.45 edges; it is never connected in 100 attempts
    with pytest.raises(ValueError, match=r"erdos_renyi.*raise p"):
        network.graph({"kind": "erdos_renyi", "p": 0.01}, N, seed=0)


def test_a_dense_random_graph_is_complete():
    assert network.graph({"kind": "erdos_renyi", "p": 1.0}, 5, seed=0).number_of_edges() == 10


# --- baselines ----------------------------------------------------------------------------------------------------


def test_deffuant_hand_case_out_of_confidence():
    # step 1 (0 -> 2): |2 - 0| = 2 <= 2.5, x2 = 0 + 0.5 * (2 - 0) = 1.0 -> 1
    # step 2 (1 -> 2): |-2 - 1| = 3 > 2.5, no change
    # step 3 (0 -> 1): |2 - (-2)| = 4 > 2.5, no change
    m = baseline.run("deffuant", [2, -2, 0], [(0, 2), (1, 2), (0, 1)], mu=0.5, epsilon=2.5)
    expected = np.array(
        [
            [2, -2, 0],
            [2, -2, 1],
            [2, -2, 1],
            [2, -2, 1],
        ]
    )
    assert m.shape == (4, 3)
    np.testing.assert_array_equal(m, expected)


def test_deffuant_boundary_and_continuous_state():
    # initial x = [1, -1, 0], mu = 0.5, epsilon = 2
    # step 1 (0 -> 1): |1 - (-1)| = 2 <= 2 (boundary updates): x1 = -1 + 0.5 * 2 = 0.0 -> 0
    # step 2 (1 -> 0): |0 - 1| = 1: x0 = 1 + 0.5 * (0 - 1) = 0.5 -> reported 1 (half away from zero)
    # step 3 (2 -> 0): |0 - 0.5| = 0.5: x0 = 0.5 + 0.5 * (0 - 0.5) = 0.25 -> 0
    #   (had the reported 1 been the state: 1 + 0.5 * (0 - 1) = 0.5 -> 1, so this step tells them apart)
    # step 4 (0 -> 2): x2 = 0 + 0.5 * 0.25 = 0.125 -> 0
    m = baseline.run("deffuant", [1, -1, 0], [(0, 1), (1, 0), (2, 0), (0, 2)], mu=0.5, epsilon=2)
    expected = np.array(
        [
            [1, -1, 0],
            [1, 0, 0],
            [1, 0, 0],
            [0, 0, 0],
            [0, 0, 0],
        ]
    )
    np.testing.assert_array_equal(m, expected)


def test_deffuant_just_outside_bound_no_change():
    m = baseline.run("deffuant", [1, -1], [(0, 1), (1, 0)], mu=1.0, epsilon=1.999)
    np.testing.assert_array_equal(m, [[1, -1], [1, -1], [1, -1]])


def test_degroot_hand_case_with_half_rounding():
    # initial x = [1, 0, -1, 2], mu = 0.5: x_r <- 0.5 * x_r + 0.5 * x_w
    # step 1 (0 -> 1): x1 = 0.5*0 + 0.5*1 = 0.5        -> 1   (0.5 rounds away from zero)
    # step 2 (2 -> 1): x1 = 0.5*0.5 + 0.5*(-1) = -0.25 -> 0
    # step 3 (2 -> 0): x0 = 0.5*1 + 0.5*(-1) = 0.0     -> 0
    # step 4 (2 -> 0): x0 = 0.5*0 + 0.5*(-1) = -0.5    -> -1  (-0.5 rounds away from zero)
    # step 5 (3 -> 2): x2 = 0.5*(-1) + 0.5*2 = 0.5     -> 1
    # step 6 (3 -> 2): x2 = 0.5*0.5 + 0.5*2 = 1.25     -> 1
    # step 7 (0 -> 3): x3 = 0.5*2 + 0.5*(-0.5) = 0.75  -> 1
    # step 8 (1 -> 3): x3 = 0.5*0.75 + 0.5*(-0.25) = 0.25 -> 0
    pairs = [(0, 1), (2, 1), (2, 0), (2, 0), (3, 2), (3, 2), (0, 3), (1, 3)]
    m = baseline.run("degroot", [1, 0, -1, 2], pairs, mu=0.5)
    expected = np.array(
        [
            [1, 0, -1, 2],
            [1, 1, -1, 2],
            [1, 0, -1, 2],
            [0, 0, -1, 2],
            [-1, 0, -1, 2],
            [-1, 0, 1, 2],
            [-1, 0, 1, 2],
            [-1, 0, 1, 1],
            [-1, 0, 1, 0],
        ]
    )
    np.testing.assert_array_equal(m, expected)


def test_degroot_one_and_a_half_rounds_to_two_and_ignores_distance():
    # x = [1, 2, -2], mu = 0.5
    # step 1 (1 -> 0): x0 = 0.5*1 + 0.5*2 = 1.5 -> 2
    # step 2 (2 -> 0): x0 = 0.5*1.5 + 0.5*(-2) = -0.25 -> 0   (distance 3.5: DeGroot has no bound)
    # step 3 (2 -> 1): x1 = 0.5*2 + 0.5*(-2) = 0 -> 0
    # step 4 (2 -> 1): x1 = 0.5*0 + 0.5*(-2) = -1 -> -1
    # step 5 (2 -> 1): x1 = 0.5*(-1) + 0.5*(-2) = -1.5 -> -2
    pairs = [(1, 0), (2, 0), (2, 1), (2, 1), (2, 1)]
    m = baseline.run("degroot", [1, 2, -2], pairs, mu=0.5)
    expected = np.array(
        [
            [1, 2, -2],
            [2, 2, -2],
            [0, 2, -2],
            [0, 0, -2],
            [0, -1, -2],
            [0, -2, -2],
        ]
    )
    np.testing.assert_array_equal(m, expected)


def test_degroot_mu_one_copies_writer_and_quarter_weight():
    # mu = 1: the reviewer adopts the writer's opinion
    np.testing.assert_array_equal(baseline.run("degroot", [2, -2], [(0, 1)], mu=1.0), [[2, -2], [2, 2]])
    # mu = 0.25, (0 -> 1): x1 = 0.75*(-2) + 0.25*2 = -1.0 -> -1; again: 0.75*(-1) + 0.5 = -0.25 -> 0
    m = baseline.run("degroot", [2, -2], [(0, 1), (0, 1)], mu=0.25)
    np.testing.assert_array_equal(m, [[2, -2], [2, -1], [2, 0]])


def test_only_reviewer_changes_and_shape():
    initial = [-2, -2, -1, -1, 0, 0, 1, 1, 2, 2]
    pairs = network.schedule(10, 100, rng(0, "baseline"))
    for kind, eps in (("deffuant", 1.5), ("degroot", None)):
        m = baseline.run(kind, initial, pairs, mu=0.5, epsilon=eps)
        assert m.shape == (101, 10)
        assert list(m[0]) == initial
        assert m.min() >= -2 and m.max() <= 2
        for t, (_, r) in enumerate(pairs, start=1):
            others = [i for i in range(10) if i != r]
            assert list(m[t, others]) == list(m[t - 1, others])


def test_report_rounding():
    cases = {
        0.5: 1,
        -0.5: -1,
        1.5: 2,
        -1.5: -2,
        0.49: 0,
        -0.49: 0,
        1.25: 1,
        -1.75: -2,
        0.0: 0,
        2.0: 2,
        -2.0: -2,
        2.4: 2,
        -3.0: -2,
    }
    for x, expected in cases.items():
        assert baseline.report(x) == expected, x


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(kind="bounded", mu=0.5, epsilon=1.0), "kind"),
        (dict(kind="deffuant", mu=0.0, epsilon=1.0), "mu"),
        (dict(kind="deffuant", mu=1.5, epsilon=1.0), "mu"),
        (dict(kind="degroot", mu=-0.1), "mu"),
        (dict(kind="deffuant", mu=0.5), "epsilon"),
        (dict(kind="deffuant", mu=0.5, epsilon=0.0), "epsilon"),
        (dict(kind="deffuant", mu=0.5, epsilon=-1.0), "epsilon"),
        (dict(kind="degroot", mu=0.5, epsilon=1.0), "epsilon"),
    ],
)
def test_run_bad_parameters(kwargs, word):
    with pytest.raises(ValueError, match=rf"\b{word}\b"):
        baseline.run(initial=[0, 1, 2], pairs=[(0, 1)], **kwargs)


@pytest.mark.parametrize(
    "initial, pairs, word",
    [
        ([0, 3, 1], [(0, 1)], "initial"),
        ([0, -3, 1], [(0, 1)], "initial"),
        ([0, 0.5, 1], [(0, 1)], "initial"),
        ([0, 1, 2], [(0, 3)], "outside"),
        ([0, 1, 2], [(-1, 0)], "outside"),
        ([0, 1, 2], [(0, 1), (2, 2)], "writer == reviewer"),
        ([0, 1, 2], [(0, 1, 2)], "pair"),
    ],
)
def test_run_bad_inputs(initial, pairs, word):
    with pytest.raises(ValueError, match=word):
        baseline.run("degroot", initial, pairs, mu=0.5)
