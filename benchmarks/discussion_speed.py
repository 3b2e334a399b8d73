"""Speed of one discussion shaped like the paper's, through socsim on the embedded model.

7 users + a facilitator (No Instructions), 14 user turns, h = 3, 64 new tokens per comment,
respond turn taking; personas and topic from data/facilitation. Prints generated words per
second (user and facilitator comments). Reference: SynDisco 1.0.2 ran such a discussion on
SmolLM2-135M-Instruct (HF transformers, the same 2 cores) at 11.4 words/s; target >= 5x that.

    python benchmarks/discussion_speed.py [--repeats 1] [--no-prefix-cache]
    python benchmarks/discussion_speed.py --users 2 --turns 2 --max-tokens 8 --threads 1   # a tiny run

--users, --turns and --max-tokens change the discussion's shape: the SynDisco reference is for the default.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from socsim import config, models
from socsim.config import read_yaml
from socsim.facilitation import materials, setups, simulate

DATA = Path(__file__).resolve().parents[1] / "data" / "facilitation"
SYNDISCO_WORDS_PER_S = 11.4


def discussion_setup(seed: int, users: int = 7, turns: int = 14) -> dict:
    fp = config.validate(
        {
            "facilitation": {
                "models": ["smollm2-135m"],  # one model's discussions (the default adds the two controls)
                "strategies": ["No Instructions"],
                "user_turns": turns,
                "context_h": 3,
                "users_per_discussion": users,
                "ablations": {"discussions": 0},
            }
        }
    )["facilitation"]
    roles = materials.read_roles(DATA / "roles.yaml")
    personas = materials.personas_from_file(DATA / "personas.jsonl", roles, 30)
    topics = materials.topics_from_file(DATA / "topics.jsonl", 7)
    rows = setups.build_setups(
        fp, seed, personas, topics, read_yaml(DATA / "instructions.yaml"), read_yaml(DATA / "strategies.yaml")
    )
    assert len(rows) == 1
    return rows[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=1, help="discussions (different seeds), timed one after another")
    ap.add_argument("--no-prefix-cache", action="store_true")
    ap.add_argument("--users", type=int, default=7, help="users per discussion (the paper's shape: 7)")
    ap.add_argument("--turns", type=int, default=14, help="user turns per discussion (the paper's shape: 14)")
    ap.add_argument("--max-tokens", type=int, default=64, help="new tokens per comment (the paper's shape: 64)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (llm.n_threads; default: all cores)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        params = config.validate(
            {
                "llm": {
                    "cache_path": str(Path(tmp) / "c.sqlite"),
                    "prefix_cache": not args.no_prefix_cache,
                    "n_threads": args.threads,
                }
            }
        )
        client = models.named_client(params)
        asyncio.run(client.probe())  # load the model outside the timing
        words = turns = 0
        start = time.perf_counter()
        for r in range(args.repeats):
            setup = discussion_setup(1000 + r, args.users, args.turns)
            rows = asyncio.run(simulate.run_discussion(setup, client, client.sampling(max_tokens=args.max_tokens)))
            generated = [row for row in rows if not row["is_seed"]]
            words += sum(len(row["text"].split()) for row in generated)
            turns += len(generated)
        wall = time.perf_counter() - start
    m = client.accounting.as_metrics()
    rate = words / wall
    print(f"discussions: {args.repeats}, generated turns: {turns}, words: {words}, wall: {wall:.1f} s")
    print(f"prompt tokens: {m['prompt_tokens']}, completion tokens: {m['completion_tokens']}")
    print(
        f"socsim: {rate:.1f} words/s; SynDisco 1.0.2 reference: {SYNDISCO_WORDS_PER_S} words/s; "
        f"speed-up {rate / SYNDISCO_WORDS_PER_S:.2f}x (target >= 5x)"
    )


if __name__ == "__main__":
    main()
