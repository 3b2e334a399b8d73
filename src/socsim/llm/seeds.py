"""Request seeds derived from the run seed and the ids of what a request belongs to.

A seed depends only on (run seed, ids), never on call order, so concurrency and
scheduling cannot change results.
"""

from __future__ import annotations

import hashlib

SEED_BITS = 31  # llama.cpp, TGI and OpenAI-compatible servers all accept a non-negative int32


def derive_seed(run_seed: int, *ids: object) -> int:
    material = "\x1f".join([str(int(run_seed))] + [str(i) for i in ids])
    digest = hashlib.blake2b(material.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % (2**SEED_BITS)
