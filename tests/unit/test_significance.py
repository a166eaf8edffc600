"""The permutation test behind the ratios' p-values."""

import pytest

from pmr_testbed.analysis.significance import permutation_p


def test_fully_separated_five_against_five_gives_the_smallest_exact_p():
    # 2 of the 252 splits (this one and its mirror) are as extreme
    assert permutation_p([10, 11, 12, 13, 14], [20, 21, 22, 23, 24]) == pytest.approx(2 / 252)


def test_interleaved_repetitions_are_not_significant():
    assert permutation_p([10, 20, 30, 40, 50], [15, 25, 35, 45, 55]) > 0.5


def test_ties_and_identical_samples():
    assert permutation_p([8, 8, 8], [8, 8, 8]) == 1.0
    assert permutation_p([8, 8, 9, 8, 8], [9, 10, 9, 9, 10]) < 0.05


def test_too_few_repetitions_give_no_p_value():
    assert permutation_p([1, 2], [3, 4, 5]) is None


def test_many_repetitions_are_sampled_reproducibly():
    a, b = list(range(14)), [x + 3 for x in range(14)]
    assert permutation_p(a, b) == permutation_p(a, b)
    assert 0.05 < permutation_p(a, b) < 0.12  # about 0.08
