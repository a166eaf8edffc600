"""report/compare.py and `pmrtb compare`: columns, paired ratios, p-values,
and one clear line for bad input."""

import pytest

from fakerun import kills_campaign
from pmr_testbed.errors import UserError
from pmr_testbed.report import compare


def test_one_campaign_compares_its_schemes_paired_by_rep(tmp_path):
    d = kills_campaign(tmp_path / "c", {"original": [10, 20, 40], "pmr": [5, 20, 10]})
    cols = compare.columns([d])
    assert [c.label for c in cols] == ["original", "pmr"]
    table = compare.compare(cols, ["kills", "allocstall"])
    base, pmr = table["kills"]
    assert (base.median, base.low, base.high, base.reps) == (20, 10, 40, 3)
    assert base.ratio is None and base.p_value is None
    assert pmr.median == 10 and pmr.ratio == pytest.approx(0.5)
    # rep by rep: 5/10, 20/20, 10/40 -> median 0.5; the medians' ratio is 0.5 too
    assert pmr.paired == pytest.approx(0.5) and pmr.pairs == 3
    # 3 against 3: the smallest two-sided p a permutation test gives is 0.1
    assert pmr.p_value is not None and 0.1 <= pmr.p_value <= 1.0
    assert table["allocstall"][1].ratio == pytest.approx(0.5)


def test_paired_differs_from_the_ratio_of_medians(tmp_path):
    d = kills_campaign(tmp_path / "c", {"original": [10, 20, 40], "pmr": [20, 10, 30]})
    _, pmr = compare.compare(compare.columns([d]), ["kills"])["kills"]
    assert pmr.ratio == pytest.approx(1.0)  # 20 / 20
    assert pmr.paired == pytest.approx(0.75)  # median of 2.0, 0.5, 0.75


def test_two_directories_and_a_base_by_label(tmp_path):
    a = kills_campaign(tmp_path / "a", {"original": [10, 10, 10], "pmr": [5, 5, 5]})
    b = kills_campaign(tmp_path / "b", {"pmr": [4, 4, 4]})
    cols = compare.columns([a, b], ["pmr"])
    assert [c.label for c in cols] == ["a:pmr", "b:pmr"]
    base = compare.pick_base(cols, "b:pmr")
    assert base == 1
    table = compare.compare(cols, ["kills"], base)
    assert table["kills"][0].ratio == pytest.approx(5 / 4)
    text = "\n".join(compare.markdown(cols, table, base))
    assert "| figure | a:pmr | b:pmr (base) |" in text
    assert "| 5 [5, 5] (×1.25, paired ×1.25, p=0.10) | 4 [4, 4] |" in text


def test_directories_of_the_same_name_are_told_apart(tmp_path):
    a = kills_campaign(tmp_path / "x" / "main", {"original": [1]})
    b = kills_campaign(tmp_path / "y" / "main", {"original": [2]})
    assert [c.label for c in compare.columns([a, b])] == ["x/main:original", "y/main:original"]


def test_one_rep_gives_no_spread_no_pairs_note_and_no_p(tmp_path):
    d = kills_campaign(tmp_path / "c", {"original": [10], "pmr": [5]})
    cols = compare.columns([d])
    table = compare.compare(cols, ["kills"])
    assert table["kills"][1].p_value is None
    row = next(line for line in compare.markdown(cols, table) if "`kills`" in line)
    assert row == "| `kills` | 10 | 5 (×0.50) |"


def test_a_figure_only_some_runs_have_is_a_dash_where_missing(tmp_path):
    d = kills_campaign(tmp_path / "c", {"original": [10], "pmr": [5]})
    cols = compare.columns([d])
    cols[0].runs[0].metrics.response_by_app.clear()
    cols[1].runs[0].metrics.response_by_app["maps"] = 120.0
    compare.check_figures(cols, ["response_by_app.maps"])
    base, other = compare.compare(cols, ["response_by_app.maps"])["response_by_app.maps"]
    assert base.median is None and other.median == 120.0 and other.ratio is None


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("none", {}, "no such directory"),
        ("empty", {}, "is not a results directory (no campaign.json)"),
        ("paper", {}, "its campaigns: "),
        ("one", {}, "1 column to compare"),
        ("two", {"schemes": ["ice"]}, "scheme ice is in none of the directories"),
    ],
)
def test_bad_input_is_one_clear_error(tmp_path, setup, args, message):
    d = tmp_path / "d"
    if setup == "empty":
        d.mkdir()
    elif setup == "paper":
        kills_campaign(d / "main", {"original": [1]})
    elif setup == "one":
        kills_campaign(d, {"original": [1]})
    elif setup == "two":
        kills_campaign(d, {"original": [1], "pmr": [1]})
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compare.columns([d], **args)


def test_unknown_base_and_unknown_figure_are_refused(tmp_path):
    d = kills_campaign(tmp_path / "c", {"original": [1], "pmr": [1]})
    cols = compare.columns([d])
    with pytest.raises(UserError, match="--base mglru: no such column; columns: original, pmr"):
        compare.pick_base(cols, "mglru")
    with pytest.raises(UserError, match="figure kils: no run has it"):
        compare.check_figures(cols, ["kills", "kils"])
