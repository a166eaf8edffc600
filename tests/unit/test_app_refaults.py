"""app_refaults.py: the apps' refaults split between their time in front and behind."""

import pytest

from fakerun import APP_MEMCG_HEADER, app_memcg_row, switch, write_campaign, write_run
from pmr_testbed.analysis.app_refaults import AppMemcgError, app_refaults, front_spans
from pmr_testbed.analysis.metrics import RunError, load_run
from pmr_testbed.report.campaign_report import write_report
from pmr_testbed.report.summary import validate_summary, write_summary


def _table(rows: list[str]) -> tuple[list[str], list[list[str]]]:
    return APP_MEMCG_HEADER.split(","), [r.split(",") for r in rows]


def _launch(app: str, t_ms: int, response_ms: float, role: str) -> dict:
    return {
        "t_ms": t_ms,
        "type": "launch",
        "app": app,
        "kind": "cold",
        "response_ms": response_ms,
        "role": role,
    }


def _switch(app: str, t_ms: int, response_ms: float, kind: str = "hot") -> dict:
    return switch(app, kind, response_ms, t_ms=t_ms)


def test_an_app_is_in_front_from_its_launch_to_the_next_one():
    events = [
        {"t_ms": 0, "type": "phase", "phase": "background_launch"},
        _launch("firefox", 1500, 1000.0, "background"),
        {"t_ms": 2000, "type": "phase", "phase": "switching"},
        _switch("chrome", 3000, 500.0),
        _launch("whatsapp", 4200, 200.0, "background_use"),
        _switch("youtube", 6500, 500.0),
        {"t_ms": 7000, "type": "kill", "app": "firefox", "reason": "low_swap_and_thrashing"},
    ]
    assert front_spans(events) == [
        # a background app launched at the start is in front only while it launches
        (0.5, 1.5, "firefox"),
        (2.5, 4.0, "chrome"),
        (4.0, 6.0, "whatsapp"),
        (6.0, float("inf"), "youtube"),
    ]


def test_an_interval_in_which_the_front_changed_is_split_by_time_in_front():
    events = [_switch("chrome", 2500, 500.0), _switch("youtube", 4600, 100.0)]
    rows = [
        # chrome in front from 2.0 s to 4.5 s: (2, 3] and (3, 4] in front,
        # (4, 5] half: its 40 file refaults split 20 / 20
        app_memcg_row(2.0, "chrome", refault_file=0),
        app_memcg_row(3.0, "chrome", refault_file=10, pgmajfault=3),
        app_memcg_row(4.0, "chrome", refault_file=30, pgmajfault=3),
        app_memcg_row(5.0, "chrome", refault_file=70, pgmajfault=7),
        # youtube in front from 4.5 s: half of (4, 5]
        app_memcg_row(4.0, "youtube", refault_anon=0, pgsteal=100),
        app_memcg_row(5.0, "youtube", refault_anon=8, pgsteal=100),
    ]
    r = app_refaults(_table(rows), events)
    assert r["foreground"] == {"refault_anon": 4, "refault_file": 50, "pgmajfault": 5, "pgsteal": 0}
    # youtube's 100 pages reclaimed before its first row count from 0, behind
    # (a first row covers the second before it: (3, 4], chrome in front)
    assert r["background"] == {
        "refault_anon": 4,
        "refault_file": 20,
        "pgmajfault": 2,
        "pgsteal": 100,
    }
    assert r["background_share"] == pytest.approx(24 / 78)
    assert r["resets"] == 0


def test_a_counter_that_went_down_restarted_from_zero():
    events = [_switch("chrome", 4800, 800.0, kind="cold")]
    rows = [
        # firefox is never in front; its cgroup made anew after the second row
        app_memcg_row(1.0, "firefox", refault_anon=5),
        app_memcg_row(2.0, "firefox", refault_anon=12),
        app_memcg_row(3.0, "firefox", refault_anon=3),
        app_memcg_row(4.0, "firefox", refault_anon=4),
        # chrome: behind, killed after 2 s (no rows while dead), relaunched
        # cold in front from 4.0 s: its counts since then are the foreground's
        app_memcg_row(1.0, "chrome", refault_file=50),
        app_memcg_row(2.0, "chrome", refault_file=60),
        app_memcg_row(5.0, "chrome", refault_file=6),
    ]
    r = app_refaults(_table(rows), events)
    assert r["background"]["refault_anon"] == 5 + 7 + 3 + 1
    assert r["foreground"]["refault_anon"] == 0
    assert r["background"]["refault_file"] == 60 and r["foreground"]["refault_file"] == 6
    assert r["resets"] == 2


def test_a_background_launch_counts_in_front_only_while_it_launches():
    events = [_launch("firefox", 1500, 1000.0, "background")]
    rows = [
        app_memcg_row(1.0, "firefox", refault_file=10),  # (0, 1]: half in front
        app_memcg_row(2.0, "firefox", refault_file=30),  # (1, 2]: half in front
        app_memcg_row(3.0, "firefox", refault_file=40),  # (2, 3]: behind
    ]
    r = app_refaults(_table(rows), events)
    assert (r["foreground"]["refault_file"], r["background"]["refault_file"]) == (15, 25)


def test_no_refaults_no_share_and_a_missing_column_is_refused():
    r = app_refaults(_table([app_memcg_row(1.0, "chrome")]), [])
    assert r["background_share"] is None and r["foreground"]["refault_file"] == 0
    header, rows = _table([app_memcg_row(1.0, "chrome")])
    with pytest.raises(AppMemcgError, match="workingset_refault_file"):
        app_refaults((header[:-1], [r[:-1] for r in rows]), [])


def test_runs_summary_and_report(tmp_path):
    # the fake runs' switches all end at 5 s: chrome 4.1-5 s, youtube from 4.7 s on
    switches = [switch("chrome", "cold", 900.0), switch("youtube", "hot", 300.0)]
    rows = [
        app_memcg_row(2.0, "youtube", refault_anon=0),
        app_memcg_row(3.0, "youtube", refault_anon=40),
        app_memcg_row(2.0, "chrome", refault_file=0),
        app_memcg_row(3.0, "chrome", refault_file=10),
    ]
    runs = []
    for scheme, rep in (("original", 1), ("acclaim", 1)):
        write_run(
            tmp_path / "runs" / f"{scheme}-r{rep}",
            switches=switches,
            app_memcg_rows=rows if scheme == "acclaim" else None,
        )
        runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    write_campaign(tmp_path, ["original", "acclaim"], runs, reps=1)
    # a run before app_memcg.csv has no split
    assert load_run(tmp_path / "runs" / "original-r1").refaults is None
    m = load_run(tmp_path / "runs" / "acclaim-r1")
    assert m.refaults["background"]["refault_anon"] == 40
    assert m.refaults["background_share"] == 1.0
    s = write_summary(tmp_path)
    assert validate_summary(s) == []
    assert s["schemes"]["original"]["refaults"] is None
    assert s["schemes"]["acclaim"]["refaults"]["background"]["refault_file"] == 10
    md = write_report(tmp_path).read_text()
    table = md.split("## Refaults, foreground and background")[1].split("\n## ")[0]
    assert "| acclaim | 0 | 0 | 40 | 10 | 1.00 |" in table
    assert "| original |" not in table
    # a file without a needed column makes the run unusable
    bad = tmp_path / "runs" / "acclaim-r1" / "app_memcg.csv"
    bad.write_text("t_s,app,anon\n1.0,chrome,0\n")
    with pytest.raises(RunError, match=r"app_memcg\.csv has no column"):
        load_run(tmp_path / "runs" / "acclaim-r1")


def test_a_counter_the_kernel_lacks_has_no_figure():
    rows = [app_memcg_row(1.0, "chrome", refault_file=5), app_memcg_row(2.0, "chrome", 0, 9)]
    header, cells = _table(rows)
    anon = header.index("workingset_refault_anon")
    for r in cells:
        r[anon] = ""  # as the guest writes a key memory.stat lacks
    r = app_refaults((header, cells), [])
    assert r["background"]["refault_anon"] is None and r["foreground"]["refault_anon"] is None
    assert r["background"]["refault_file"] == 9 and r["background_share"] is None
