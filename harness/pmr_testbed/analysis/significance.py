"""How likely a difference between two schemes' repetitions is chance.

A two-sided permutation test on the difference of the means: the
repetitions of both schemes are pooled and split again in every way (or,
past PERMUTATIONS ways, in that many seeded random ways), and the p-value
is the share of splits whose difference is at least as large as the one
measured. It assumes nothing about the distribution, and ties (kill counts)
are no problem. With 5 repetitions each the smallest p it can give is
2/252 = 0.008; with 3 each 2/20 = 0.1, so 3 repetitions never show a
difference at the 5% level.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

# splits sampled when there are more (5 against 5 has 252: all are used)
PERMUTATIONS = 9999
# fewest repetitions per scheme for which a p-value is given
MIN_REPS = 3
SEED = 0


def _mean_difference(x, y, axis):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def permutation_p(values: list[float], base: list[float]) -> float | None:
    """Two-sided p-value for the means of `values` and `base` differing;
    None with fewer than MIN_REPS values on either side."""
    if min(len(values), len(base)) < MIN_REPS:
        return None
    if len(set(values) | set(base)) == 1:
        return 1.0
    res = stats.permutation_test(
        (values, base),
        _mean_difference,
        vectorized=True,
        permutation_type="independent",
        alternative="two-sided",
        n_resamples=PERMUTATIONS,
        rng=np.random.default_rng(SEED),
    )
    return float(res.pvalue)
