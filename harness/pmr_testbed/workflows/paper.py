"""`pmrtb paper`'s run: every campaign of a plan (config/paper.py) not
finished yet, continued or moved aside as its resume rules say, then each
campaign's report and the combined one (report/paper_report.py).

Every campaign runs at the dilation the first one recorded (its
`time_scale` and flash throttle), even when the host's stored one is
measured again meanwhile: the regime weighs the floor's demand against
main's reclaim on one clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config.paper import SCENARIO, CampaignSpec, PaperPlan, recorded_runs, statuses
from ..guest import dilation as dilation_mod
from ..guest import kernel
from ..guest.dilation import Dilation
from ..report import paper_report
from . import campaign, max_rate

Progress = Callable[[str, bool], None]
RunCampaign = Callable[[campaign.CampaignRequest, Progress], dict]


def request(
    spec: CampaignSpec,
    out: Path,
    seed: int,
    resume: bool = False,
    dilation: Dilation | None = None,
) -> campaign.CampaignRequest:
    """What `pmrtb run` would be asked for campaign `spec` of the plan, at
    `dilation` when given."""
    return campaign.CampaignRequest(
        SCENARIO,
        spec.profile,
        ",".join(spec.schemes),
        spec.reps,
        seed,
        out / spec.name,
        rounds=spec.rounds,
        swap_bandwidth=spec.swap_bandwidth,
        max_rate=spec.max_rate,
        resume=resume,
        dilation=dilation,
    )


# a new checkout's setup on this project's 2-core TCG hosts, outside a
# mode's budget (campaign.json's setup_s; docs/regime.md, 2026-12-01):
# the kernel build from a cold compiler cache, and the host's memory speed
# and reclaim ceiling (a boot for the one, three for the other)
KERNEL_BUILD_TEXT = "9-15 min"
HOST_MEASUREMENTS_TEXT = "~3 min"


def setup_line() -> str | None:
    """What the first campaign must do before its runs, and about how long
    it takes, where this checkout has not built its kernel or build/ holds
    no stored dilation or reclaim ceiling; None where neither is due. The
    stores are only looked for: one holding another kernel's or host's
    entries (whose keys need the accelerator's probe) is not told apart."""
    steps = []
    if not kernel.is_built("testbed"):
        steps.append(f"the kernel build ({KERNEL_BUILD_TEXT} from a cold compiler cache)")
    if not (dilation_mod.CACHE.exists() and max_rate.CACHE.exists()):
        steps.append(f"measuring the host ({HOST_MEASUREMENTS_TEXT})")
    if not steps:
        return None
    return f"first {' and '.join(steps)}: once per checkout and host, outside the budget"


def shared_dilation(p: PaperPlan) -> Dilation | None:
    """The dilation of the plan's first campaign that recorded one, which
    the others run at; None before any did."""
    for spec in p.campaigns:
        recorded = campaign.recorded_dilation(p.out / spec.name)
        if recorded is not None:
            return recorded
    return None


def move_aside(d: Path) -> Path:
    """Rename a cut-off campaign directory to `<name>.incomplete-<n>`."""
    n = 1
    while (target := d.with_name(f"{d.name}.incomplete-{n}")).exists():
        n += 1
    d.rename(target)
    return target


def run_campaign(req: campaign.CampaignRequest, progress: Progress) -> dict:
    """campaign.plan + campaign.run: what `pmrtb run` does for one campaign."""
    return campaign.run(campaign.plan(req), progress)


@dataclass
class PaperResult:
    markdown: Path
    ran: list[str]
    skipped: list[str]
    moved: dict[str, Path]
    failed_runs: int


def run(
    p: PaperPlan,
    progress: Progress,
    *,
    runner: RunCampaign | None = None,
    say: Callable[[str], None] = print,
) -> PaperResult:
    """Run every campaign not finished yet, then (re)write each campaign's
    report and the combined one. `runner` runs one campaign (default
    run_campaign; tests fake it)."""
    runner = runner or run_campaign
    state = statuses(p)
    p.out.mkdir(parents=True, exist_ok=True)
    ran, skipped, moved = [], [], {}
    for spec in p.campaigns:
        d = p.out / spec.name
        if state[spec.name] == "finished":
            skipped.append(spec.name)
            say(f"{spec.name}: finished earlier, skipped")
            continue
        say(f"{spec.name}: {spec.profile}, {', '.join(spec.schemes)}")
        dil = shared_dilation(p)
        if state[spec.name] == "partial":
            say(
                f"{spec.name}: cut off earlier, continued "
                f"({recorded_runs(p, spec)} of {spec.runs} runs done)"
            )
            try:
                runner(request(spec, p.out, p.seed, True, dil), progress)
                ran.append(spec.name)
                continue
            except campaign.SetupChanged as exc:
                moved[spec.name] = move_aside(d)
                say(f"{spec.name}: {exc}; moved to {moved[spec.name]} and run again")
        runner(request(spec, p.out, p.seed, dilation=dil), progress)
        ran.append(spec.name)
    collected = paper_report.collect(p)
    md = paper_report.write(p, collected)
    failed = sum(len(c.summary["failed_runs"]) for c in collected.values() if c.summary)
    return PaperResult(md, ran, skipped, moved, failed)
