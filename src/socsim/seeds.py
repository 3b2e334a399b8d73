"""Seeds derived from the run seed and the ids of what they belong to.

Every source of randomness in socsim takes its seed from here: LLM request seeds (through
socsim.llm) and the non-LLM randomness of the studies (setups, shuffles, pairing, bootstrap).
A seed depends only on (run seed, ids), never on call order, so concurrency, scheduling and
sharding cannot change results.
"""

from __future__ import annotations

import hashlib
import random
from typing import cast

SEED_BITS = 31  # llama.cpp, TGI and OpenAI-compatible servers all accept a non-negative int32


def derive_seed(run_seed: int, *ids: object) -> int:
    material = "\x1f".join([str(int(run_seed))] + [str(i) for i in ids])
    digest = hashlib.blake2b(material.encode("utf-8"), digest_size=8).digest()
    # cast: typeshed types int ** int as Any (a negative exponent gives a float); SEED_BITS is positive
    return cast(int, int.from_bytes(digest, "big") % (2**SEED_BITS))


def rng(run_seed: int, *ids: object) -> random.Random:
    """A `random.Random` seeded from the run seed and ids (setups, shuffles, pairing)."""
    return random.Random(derive_seed(run_seed, *ids))
