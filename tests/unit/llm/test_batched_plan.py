"""Batched decoding's rules without the model: its configuration, and how a prompt is cut into pieces to read
(the real model's batched answers: tests/real/llm/test_batched.py)."""

import pytest

from socsim.llm import LLMConfigError
from socsim.llm.embedded import EmbeddedBackend


def test_parallel_needs_flash_attention_off():
    with pytest.raises(LLMConfigError, match="flash_attn: false"):
        EmbeddedBackend(parallel=2)
    with pytest.raises(LLMConfigError, match="from 1 to 64"):
        EmbeddedBackend(parallel=0, flash_attn=False)


@pytest.mark.parametrize("size", [3, 4, 512])
def test_read_plan_reads_no_single_token_the_one_at_a_time_path_does_not(size):
    from socsim.llm.batched import read_plan

    for n in range(1, 3 * size + 3):
        for cached in {0, 1, n // 2, n - 2, n - 1, n}:
            if not 0 <= cached <= n:
                continue
            keep, sizes = read_plan(n, cached, size)
            assert 0 <= keep <= cached and keep + sum(sizes) == n, (n, cached, keep, sizes)
            assert all(1 <= s <= size for s in sizes), (n, cached, sizes)
            alone_ends_in_one = n % size == 1  # the one-at-a-time path's last piece is one token
            assert (sizes[-1] == 1) == alone_ends_in_one, (n, cached, sizes)
            assert 1 not in sizes[:-1], (n, cached, sizes)
            assert keep >= min(cached, n - 4), (n, cached, keep)  # re-reads at most what the rule needs
