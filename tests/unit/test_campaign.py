"""campaign.py: continuing a cut-off campaign (CampaignRequest.resume), with
the machine and the guest runs faked (no kernel, no guest)."""

import json
from types import SimpleNamespace

import pytest

from fakerun import fake_bzimage
from pmr_testbed.errors import UserError
from pmr_testbed.workflows import campaign, guest_setup


class CutOff(Exception):
    """The host stopped while a run was going on."""


def _machine(factor: float = 9.0):
    return SimpleNamespace(
        image=SimpleNamespace(
            as_dict=lambda: {"flavour": "testbed", "version": "6.1", "series": "abc"}
        ),
        accel="tcg",
        dilation=SimpleNamespace(as_dict=lambda: {"factor": factor}, guest_ns_per_page=320.0),
        limits={"swap_bps_write": 1, "swap_iops_write": 2},
        flash_calibration=lambda profile: {"reclaim_ceiling_mbps": 100.0},
        setup_s={"kernel": 600.0, "dilation": 150.0, "reclaim_ceiling": 0.5},
    )


@pytest.fixture
def fake_guest(monkeypatch):
    """Fake runs: each makes its directory; `cut_at` names the run the host
    stops in, after its directory was made."""
    state = SimpleNamespace(machine=_machine(), ran=[], cut_at=None, fail_at=None, images={})
    monkeypatch.setattr(guest_setup, "check_host", lambda profile: None)
    monkeypatch.setattr(guest_setup, "prepare", lambda *a, **k: state.machine)

    def one_run(req, run_id, scenario, profile, column, machine):
        state.images[run_id] = column.bzimage
        (req.out / "runs" / run_id).mkdir(parents=True)
        if run_id == state.cut_at:
            raise CutOff(run_id)
        if run_id == state.fail_at:
            (req.out / "runs" / run_id / "console.log").write_text("guest died\n")
            raise campaign.GuestError("guest run exited with status 241", "guest died")
        (req.out / "runs" / run_id / "run.json").write_text('{"status": "ok"}')
        state.ran.append(run_id)

    monkeypatch.setattr(campaign, "_one_run", one_run)
    return state


def _request(out, resume=False, trace_events=(), kernels=(), perf_hz=0):
    return campaign.CampaignRequest(
        "smoke",
        "pixel5",
        "original,pmr",
        2,
        1,
        out,
        swap_bandwidth=False,
        max_rate=False,
        resume=resume,
        trace_events=trace_events,
        kernels=kernels,
        perf_hz=perf_hz,
    )


def _run(out, resume=False, trace_events=(), kernels=()):
    return campaign.run(
        campaign.plan(_request(out, resume, trace_events, kernels)), lambda msg, done: None
    )


def test_a_cut_off_campaign_keeps_its_runs_and_runs_the_others(tmp_path, fake_guest):
    out = tmp_path / "c"
    fake_guest.cut_at = "original-r2"
    with pytest.raises(CutOff):
        _run(out)
    assert fake_guest.ran == ["original-r1", "pmr-r1"]
    assert (out / "runs" / "original-r2").exists()  # what the cut-off run left
    with pytest.raises(UserError, match="is not empty"):
        campaign.plan(_request(out))
    fake_guest.cut_at = None
    result = _run(out, resume=True)
    # the cut-off run again, then the one it never reached; the others kept
    assert fake_guest.ran == ["original-r1", "pmr-r1", "original-r2", "pmr-r2"]
    assert [(r["scheme"], r["rep"], r["status"]) for r in result["runs"]] == [
        ("original", 1, "ok"),
        ("pmr", 1, "ok"),
        ("original", 2, "ok"),
        ("pmr", 2, "ok"),
    ]
    assert json.loads((out / "campaign.json").read_text()) == result
    assert (out / "runs" / "original-r2" / "run.json").exists()


def test_a_continued_campaign_adds_its_sittings_times(tmp_path, fake_guest):
    out = tmp_path / "c"
    fake_guest.cut_at = "original-r2"
    with pytest.raises(CutOff):
        _run(out)
    recorded = json.loads((out / "campaign.json").read_text())
    assert 0 <= recorded["wall_s"] < 60
    # say the first sitting took 1,000 s up to its last recorded run
    recorded["wall_s"] = 1000.0
    (out / "campaign.json").write_text(json.dumps(recorded))
    assert recorded["setup_s"] == {"kernel": 600.0, "dilation": 150.0, "reclaim_ceiling": 0.5}
    fake_guest.cut_at = None
    # the second sitting found the kernel built and the host measured
    fake_guest.machine.setup_s = {"kernel": 1.0, "dilation": 0.0, "reclaim_ceiling": 0.0}
    result = _run(out, resume=True)
    assert 1000 <= result["wall_s"] < 1060
    assert result["setup_s"] == {"kernel": 601.0, "dilation": 150.0, "reclaim_ceiling": 0.5}
    assert campaign.recorded_wall_s(tmp_path / "none") == 0.0
    assert campaign.recorded_setup_s(tmp_path / "none") == {}


def test_a_finished_campaign_resumed_runs_nothing(tmp_path, fake_guest):
    out = tmp_path / "c"
    first = _run(out)
    fake_guest.ran.clear()
    assert _run(out, resume=True)["runs"] == first["runs"] and fake_guest.ran == []


def test_runs_on_another_setup_are_not_continued(tmp_path, fake_guest):
    out = tmp_path / "c"
    fake_guest.cut_at = "pmr-r1"
    with pytest.raises(CutOff):
        _run(out)
    fake_guest.machine = _machine(factor=8.5)  # dilation measured again: another disk limit
    fake_guest.cut_at = None
    with pytest.raises(campaign.SetupChanged, match="another dilation than"):
        _run(out, resume=True)
    # nothing was run or rewritten
    assert fake_guest.ran == ["original-r1"]
    assert json.loads((out / "campaign.json").read_text())["dilation"] == {"factor": 9.0}


def test_a_failed_run_is_run_again_and_its_attempt_kept(tmp_path, fake_guest):
    out = tmp_path / "c"
    fake_guest.fail_at = "pmr-r1"
    first = _run(out)
    assert [r["status"] for r in first["runs"]] == ["ok", "failed", "ok", "ok"]
    fake_guest.fail_at = None
    fake_guest.ran.clear()
    result = _run(out, resume=True)
    assert fake_guest.ran == ["pmr-r1"]
    assert [r["status"] for r in result["runs"]] == ["ok"] * 4
    assert (out / "runs" / "pmr-r1" / "run.json").exists()
    assert (out / "runs" / "pmr-r1.failed-1" / "console.log").read_text() == "guest died\n"
    # a second failure is kept beside the first
    fake_guest.fail_at = "original-r1"
    (out / "campaign.json").write_text(
        json.dumps(
            {**result, "runs": [{**result["runs"][0], "status": "failed"}, *result["runs"][1:]]}
        )
    )
    _run(out, resume=True)
    assert (out / "runs" / "original-r1.failed-1").exists()
    fake_guest.fail_at = None
    _run(out, resume=True)
    assert (out / "runs" / "original-r1.failed-2" / "console.log").exists()


def test_extra_trace_events_are_recorded_and_part_of_the_setup(tmp_path, fake_guest):
    out = tmp_path / "c"
    assert "extra_trace_events" not in _run(tmp_path / "plain")
    fake_guest.cut_at = "pmr-r1"
    with pytest.raises(CutOff):
        _run(out, trace_events=("vmscan/mm_vmscan_lru_isolate",))
    recorded = json.loads((out / "campaign.json").read_text())
    assert recorded["extra_trace_events"] == ["vmscan/mm_vmscan_lru_isolate"]
    fake_guest.cut_at = None
    # runs traced otherwise are not continued: their trace.txt would differ
    with pytest.raises(campaign.SetupChanged, match="another set of --trace-event events than"):
        _run(out, resume=True)
    # the same set, however given: a default event and a duplicate change nothing
    result = _run(
        out,
        resume=True,
        trace_events=(
            "vmscan/mm_vmscan_lru_isolate",
            "vmscan/mm_vmscan_kswapd_round",
            "vmscan/mm_vmscan_lru_isolate",
        ),
    )
    assert [r["status"] for r in result["runs"]] == ["ok"] * 4
    assert result["extra_trace_events"] == ["vmscan/mm_vmscan_lru_isolate"]


def test_events_given_in_another_order_are_the_same_setup(tmp_path, fake_guest):
    out = tmp_path / "c"
    fake_guest.cut_at = "pmr-r1"
    with pytest.raises(CutOff):
        _run(out, trace_events=("vmscan/b", "vmscan/a"))
    fake_guest.cut_at = None
    result = _run(out, resume=True, trace_events=("vmscan/a", "vmscan/b"))
    assert result["extra_trace_events"] == ["vmscan/a", "vmscan/b"]
    assert fake_guest.ran == ["original-r1", "pmr-r1", "original-r2", "pmr-r2"]


def test_a_bad_trace_event_is_refused_before_anything_runs(tmp_path, fake_guest):
    with pytest.raises(UserError, match="give a tracepoint as GROUP/NAME"):
        campaign.plan(_request(tmp_path / "c", trace_events=("mm_vmscan_lru_isolate",)))
    assert fake_guest.ran == [] and not (tmp_path / "c").exists()


def test_named_kernels_run_every_scheme_interleaved(tmp_path, fake_guest):
    base = fake_bzimage(tmp_path / "base" / "bzImage", b"base")
    v2 = fake_bzimage(tmp_path / "v2" / "bzImage", b"v2")
    kernels = campaign.parse_kernels([f"base={base}", f"v2={v2}"])
    result = _run(tmp_path / "c", kernels=kernels)
    assert result["schemes"] == ["original:base", "pmr:base", "original:v2", "pmr:v2"]
    assert fake_guest.ran == [
        "original_base-r1",
        "pmr_base-r1",
        "original_v2-r1",
        "pmr_v2-r1",
        "original_base-r2",
        "pmr_base-r2",
        "original_v2-r2",
        "pmr_v2-r2",
    ]
    assert fake_guest.images["pmr_v2-r2"] == v2.resolve()
    assert fake_guest.images["original_base-r1"] == base.resolve()
    first = result["runs"][0]
    assert (first["scheme"], first["kernel"], first["dir"]) == (
        "original:base",
        "base",
        "runs/original_base-r1",
    )
    assert set(result["kernels"]) == {"base", "v2"}
    assert result["kernels"]["v2"]["path"] == str(v2.resolve())
    assert len(result["kernels"]["v2"]["sha256"]) == 64


def test_without_named_kernels_the_testbed_kernel_runs(tmp_path, fake_guest):
    result = _run(tmp_path / "c")
    assert "kernels" not in result and "kernel" not in result["runs"][0]
    assert set(fake_guest.images.values()) == {None}  # campaign._one_run boots the testbed's


def test_a_named_kernel_rebuilt_since_is_not_continued(tmp_path, fake_guest):
    image = fake_bzimage(tmp_path / "v2" / "bzImage", b"one")
    kernels = campaign.parse_kernels([f"v2={image}"])
    fake_guest.cut_at = "pmr_v2-r1"
    with pytest.raises(CutOff):
        _run(tmp_path / "c", kernels=kernels)
    fake_bzimage(image, b"two")
    fake_guest.cut_at = None
    with pytest.raises(campaign.SetupChanged, match="another set of --kernel images"):
        _run(tmp_path / "c", resume=True, kernels=kernels)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["v2"], "give NAME=PATH"),
        (["=x"], "give NAME=PATH"),
        (["v 2=x"], "give NAME=PATH"),
        (["v2="], "give NAME=PATH"),
        (["v2=/nonexistent/bzImage"], "no such kernel image"),
        (["v2={readme}"], "not an x86 kernel image"),
        (["v2={image}", "v2={image}"], "--kernel v2: given twice"),
    ],
)
def test_bad_kernel_options_are_refused(tmp_path, given, message):
    image = fake_bzimage(tmp_path / "bzImage")
    readme = tmp_path / "README"
    readme.write_text("not a kernel\n" * 100)
    specs = [g.format(image=image, readme=readme) for g in given]
    with pytest.raises(UserError, match=message):
        campaign.parse_kernels(specs)


def test_perf_needs_the_testbed_kernel(tmp_path, fake_guest):
    kernels = campaign.parse_kernels([f"v2={fake_bzimage(tmp_path / 'bzImage')}"])
    with pytest.raises(UserError, match="--perf-hz reads the testbed kernel's vmlinux"):
        campaign.plan(_request(tmp_path / "c", kernels=kernels, perf_hz=99))
