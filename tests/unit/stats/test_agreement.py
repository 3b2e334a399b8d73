"""Cohen's kappa against scikit-learn's, computed from the raw labels."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from socsim.stats.agreement import cohen_kappa


@pytest.mark.parametrize("k", [2, 5])
def test_kappa_matches_sklearn(k):
    rng = np.random.default_rng(k)
    for _ in range(20):
        a = rng.integers(0, k, 60)
        b = np.where(rng.random(60) < 0.6, a, rng.integers(0, k, 60))
        confusion = [[int(np.sum((a == r) & (b == c))) for c in range(k)] for r in range(k)]
        assert cohen_kappa(confusion) == pytest.approx(cohen_kappa_score(a, b))


def test_kappa_undefined_and_hand_worked():
    assert cohen_kappa([[7, 0], [0, 0]]) is None  # one label from both raters
    assert cohen_kappa([[0, 0], [0, 0]]) is None
    # p_o = 0.7, p_e = 0.5 * 0.5 + 0.5 * 0.5 = 0.5: kappa = 0.4
    assert cohen_kappa([[35, 15], [15, 35]]) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="square"):
        cohen_kappa([[1, 2, 3]])
