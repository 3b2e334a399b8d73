"""Lexical similarity: ROUGE-L F1 (longest common subsequence of tokens)."""

from __future__ import annotations

import itertools
import re

_MENTION = re.compile(r"@\w+")
_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str, drop_mentions: bool = True) -> list[str]:
    """Lowercased alphanumeric tokens; @mentions removed first (they repeat usernames, not content)."""
    text = text.lower()
    if drop_mentions:
        text = _MENTION.sub(" ", text)
    return _TOKEN.findall(text)


def lcs_length(a: list[str], b: list[str]) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l_f1(a: list[str], b: list[str]) -> float:
    if not a or not b:
        return 0.0
    lcs = lcs_length(a, b)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(b), lcs / len(a)
    return 2 * precision * recall / (precision + recall)


def diversity(texts: list[str]) -> float:
    """1 - mean ROUGE-L F1 over all unordered pairs of the texts (NaN with fewer than two)."""
    toks = [tokens(t) for t in texts]
    pairs = list(itertools.combinations(range(len(toks)), 2))
    if not pairs:
        return float("nan")
    return 1.0 - sum(rouge_l_f1(toks[i], toks[j]) for i, j in pairs) / len(pairs)
