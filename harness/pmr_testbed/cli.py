"""pmrtb: build the kernel, run scenarios on the emulated phone, report.

pmrtb build-kernel [--flavour testbed|debug]
pmrtb run --scenario paper --profile pixel6pro --schemes original,mglru --reps 3
          [--kernel NAME=BZIMAGE]...
pmrtb report results/<dir>
pmrtb regime DIR
pmrtb compare DIR... [--figure PATH]... [--schemes A,B] [--base LABEL]
pmrtb paper --out DIR [--quick | --thorough] [--reps N] [--seed S] [--peers]
pmrtb reliability --profile pixel5 --scheme original [--toggle PATH=V1,V2,...]
                  [--swap-full] [--swap-write-errors]
pmrtb probe NAME [ARGS...] [--flavour testbed|debug] [--kernel BZIMAGE] [--out DIR]
pmrtb shell [--profile pixel6pro]
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path

import rich.markup
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import paths
from .analysis import reliability_checks
from .config import paper as paper_mod
from .config import profiles
from .errors import GuestError, UserError
from .guest import kernel, vm
from .report import regime as regime_mod
from .workflows import campaign
from .workflows import probe as probe_mod
from .workflows import reliability as reliability_mod

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="PMR testbed: an emulated phone under memory pressure.",
)
err = Console(stderr=True)


@app.command("build-kernel")
def build_kernel(flavour: str = typer.Option("testbed", help="testbed or debug")) -> None:
    """Build the kernel (linux-source-6.1 + kernel/patches) if anything changed."""
    with err.status(f"building the {flavour} kernel (log in build/kernel/obj-{flavour}/build.log)"):
        image = kernel.build(flavour)
    typer.echo(f"{image.bzimage} ({image.version}, {len(image.series)} patches)")


@app.command()
def run(
    scenario: str = typer.Option(..., help="scenarios/<name>.toml"),
    profile: str = typer.Option(..., help="profiles/<name>.toml"),
    schemes: str = typer.Option(..., help="comma-separated, e.g. original,mglru or pmr+ice"),
    reps: int = typer.Option(1, help="repetitions per scheme"),
    seed: int = typer.Option(1, help="seed of app order and dwell times, same for all schemes"),
    out: Path = typer.Option(
        None, help="results directory (default results/<scenario>-<profile>-<time>)"
    ),
    flavour: str = typer.Option("testbed", help="kernel flavour: testbed or debug"),
    rounds: int = typer.Option(None, help="override the scenario's rounds (quick runs, sweeps)"),
    perf_hz: int = typer.Option(
        0,
        help="profile the guest with perf at this rate (Hz) into "
        "each run's perf-reclaim.txt; 0: off. Slows the guest: "
        "explains a comparison, does not belong in one",
    ),
    resume: bool = typer.Option(
        False,
        help="continue a cut-off campaign in --out: keep the runs "
        "its campaign.json recorded, run the rest (same "
        "options, same machine setup)",
    ),
    kernel_image: list[str] = typer.Option(
        [],
        "--kernel",
        help="NAME=PATH: run the schemes on this bzImage too, as columns `scheme:NAME`, "
        "interleaved with the other kernels' (instead of the testbed kernel); repeatable. "
        "Compare them with `pmrtb compare`",
    ),
    trace_event: list[str] = typer.Option(
        [],
        help="also record this tracepoint (GROUP/NAME, e.g. "
        "vmscan/mm_vmscan_lru_isolate) in each run's "
        "trace.txt; repeatable. Busy events slow the "
        "guest: they explain a comparison, they do not "
        "belong in one",
    ),
) -> None:
    """Run a scenario on a profile for each scheme, then write summary.json and the report."""
    if resume and out is None:
        raise UserError("--resume needs --out: the results directory of the campaign to continue")
    out = out or paths.RESULTS_DIR / f"{scenario}-{profile}-{time.strftime('%Y%m%d-%H%M%S')}"
    req = campaign.CampaignRequest(
        scenario,
        profile,
        schemes,
        reps,
        seed,
        out,
        flavour,
        rounds,
        perf_hz=perf_hz,
        resume=resume,
        trace_events=tuple(trace_event),
        kernels=campaign.parse_kernels(kernel_image),
    )
    plan = campaign.plan(req)
    with _runs_progress(reps * len(plan.variants)) as (progress, _):
        result = campaign.run(plan, progress)
    _finish(out, result)


@contextmanager
def _runs_progress(n_runs: int):
    """A progress bar over guest runs: yields progress(msg, run_finished),
    the callback campaign.run() and paper_run.run() take, and a log(msg)."""
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} runs"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as bar:
        task = bar.add_task("preparing", total=n_runs)

        def log(msg: str) -> None:
            bar.console.log(msg, markup=False, highlight=False)

        def progress(msg: str, run_finished: bool) -> None:
            bar.update(task, description=msg)
            if run_finished:
                bar.advance(task)
                log(msg)

        yield progress, log


@contextmanager
def _spinner():
    """A spinner with the elapsed time: yields say(msg), which shows msg."""
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as bar:
        task = bar.add_task("preparing", total=None)
        yield lambda msg: bar.update(task, description=msg)


def _write_report(results: Path) -> Path:
    # matplotlib and scipy take 1.5 s to import: only a report needs them
    from .report import campaign_report

    return campaign_report.write_report(results)


def _finish(out: Path, result: dict) -> None:
    ok = [r for r in result["runs"] if r["status"] == "ok"]
    failed = [r for r in result["runs"] if r["status"] != "ok"]
    if ok:
        path = _write_report(out)
        typer.echo(f"report: {path}")
    if failed:
        for r in failed:
            err.print(
                f"[red]run {r['scheme']} rep {r['rep']} failed:[/red] "
                f"{rich.markup.escape(str(r['error']))}"
            )
        raise typer.Exit(3)


@app.command("report")
def report_cmd(results: Path = typer.Argument(..., help="a results directory")) -> None:
    """(Re)write summary.json, report.md and the plots of a results directory."""
    if not (results / "campaign.json").exists():
        raise UserError(f"{results} is not a results directory (no campaign.json)")
    typer.echo(f"report: {_write_report(results)}")


@app.command("compare")
def compare_cmd(
    results: list[Path] = typer.Argument(
        ..., help="results directories (`pmrtb run` outputs or campaigns of a `pmrtb paper` one)"
    ),
    figure: list[str] = typer.Option(
        [],
        help="a figure, as a dotted path of a run's figures (response_ms.p95, "
        "reclaim_cpu_s.kswapd, ...); repeatable; default: the summary's ratio figures",
    ),
    schemes: str = typer.Option(None, help="only these schemes, comma-separated"),
    base: str = typer.Option(
        None, help="the column the others are set against (default: the first)"
    ),
) -> None:
    """Figures of campaigns side by side: medians, ratios, paired ratios and p-values."""
    from .report import compare  # scipy and matplotlib: only when comparing

    cols = compare.columns(results, schemes.split(",") if schemes else None)
    base_index = compare.pick_base(cols, base)
    compare.check_figures(cols, figure)
    figures = figure or list(compare.DEFAULT_FIGURES)
    table = compare.compare(cols, figures, base_index)
    typer.echo("\n".join(compare.markdown(cols, table, base_index)))


@app.command("regime")
def regime_cmd(
    results: Path = typer.Argument(
        ..., help="a pmrtb paper output directory or a campaign's results directory"
    ),
) -> None:
    """Whether original's runs are in the paper's regime: DIR/regime.json and a table
    (exit 0 whether or not the checks pass: it is a report)."""
    result = regime_mod.regime(results)
    path = regime_mod.save(results, result)
    print_regime(result)
    typer.echo(f"regime.json: {path}")


def print_regime(result: dict) -> None:
    colour = {"✅ pass": "green", "❌ fail": "bold red"}
    table = Table(title=f"regime: original on {result['profile']}")
    for column in ("check", "ours", "range", "pass"):
        table.add_column(column)
    table.add_column("missing", overflow="fold")
    for c in result["checks"]:
        status = regime_mod.result_text(c)
        table.add_row(
            c["name"],
            rich.markup.escape(regime_mod.ours_text(c)),
            regime_mod.range_text(c["lo"], c["hi"]),
            f"[{colour.get(status, 'yellow')}]{status}[/]",
            rich.markup.escape(c["missing"] or ""),
        )
    for r in result["reported"]:
        table.add_row(
            r["name"],
            regime_mod.fmt(r["value"]),
            "–",
            "reported",
            rich.markup.escape(r.get("missing") or ""),
        )
    Console().print(table)


@app.command()
def paper(
    out: Path = typer.Option(
        ..., help="output directory; run again with the same one to continue a cut-off evaluation"
    ),
    quick: bool = typer.Option(
        False,
        "--quick",
        help=f"within {paper_mod.duration_text(paper_mod.QUICK_BUDGET_S)}: 1 rep; main "
        f"({', '.join(paper_mod.QUICK_MAIN_SCHEMES)}) at "
        f"{paper_mod.QUICK_MAIN_ROUNDS} rounds, "
        "the rest at 1; no sweeps",
    ),
    thorough: bool = typer.Option(
        False,
        "--thorough",
        help="~4.5 h: every campaign at --reps, every sweep point, both profiles",
    ),
    reps: int = typer.Option(
        None,
        help="repetitions of main's schemes (full and thorough: 3 "
        "or more, default 3; quick: default 1)",
    ),
    seed: int = typer.Option(1, help="seed of app order and dwell times, same for every run"),
    peers: bool = typer.Option(
        False,
        "--peers",
        help="main also runs what users deploy instead of PMR "
        f"({', '.join(paper_mod.PEER_SCHEMES)}): `reps` more runs per peer",
    ),
) -> None:
    """The PMR paper's evaluation (§3.2, §5): every campaign, then DIR/paper.md."""
    if quick and thorough:
        raise UserError(
            "--quick and --thorough exclude each other: give one, or neither for "
            f"the full run (within {paper_mod.duration_text(paper_mod.FULL_BUDGET_S)})"
        )
    mode = "quick" if quick else "thorough" if thorough else "full"
    plan = paper_mod.plan(out, mode=mode, reps=reps, seed=seed, peers=peers)
    state = paper_mod.statuses(plan)
    for line in paper_mod.estimate_lines(plan, state):
        typer.echo(line)
    from .workflows import paper

    if any(status != "finished" for status in state.values()) and (setup := paper.setup_line()):
        typer.echo(setup)

    with _runs_progress(paper_mod.runs_to_go(plan, state)) as (progress, log):
        result = paper.run(plan, progress, say=log)
    typer.echo(f"paper: {result.markdown}")
    if result.failed_runs:
        err.print(f"{result.failed_runs} runs failed: see the campaigns' reports", markup=False)
        raise typer.Exit(3)


@app.command()
def reliability(
    profile: str = typer.Option(..., help="profiles/<name>.toml"),
    scheme: str = typer.Option(..., help="one scheme, e.g. original, mglru or pmr+ice"),
    flavour: str = typer.Option("testbed", help="kernel flavour: testbed or debug"),
    toggle: str = typer.Option(
        None,
        help="PATH=V1,V2,...: write these values to the knob in turn under load (it ends at V1)",
    ),
    toggles: int = typer.Option(100, help="how many --toggle writes, spread over the run"),
    toggle_refused: str = typer.Option(
        None, help="comma-separated --toggle values the kernel must refuse"
    ),
    swap_factor: float = typer.Option(4.0, help="load until pswpout reaches this many times RAM"),
    out: Path = typer.Option(
        None, help="results directory (default results/reliability-<profile>-<scheme>-<time>)"
    ),
    swap_full: bool = typer.Option(
        False, "--swap-full", help="a swap disk that runs full (OOM kills allowed)"
    ),
    swap_write_errors: bool = typer.Option(
        False, "--swap-write-errors", help="writes to part of the swap disk fail (EIO)"
    ),
) -> None:
    """Data integrity and kernel reliability under heavy swapping: exit 0 if every check passed."""
    out = (
        out
        or paths.RESULTS_DIR / f"reliability-{profile}-{scheme}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    req = reliability_mod.ReliabilityRequest(
        profile,
        scheme,
        out,
        flavour,
        toggle,
        toggles,
        toggle_refused,
        swap_factor,
        swap_full=swap_full,
        swap_write_errors=swap_write_errors,
    )
    plan = reliability_mod.plan(req)
    with _spinner() as say:
        result = reliability_mod.run(plan, say)
    print_checks(result)
    typer.echo(f"reliability.json: {out / 'reliability.json'}")
    raise typer.Exit(reliability_checks.exit_status(result))


def print_checks(result: dict) -> None:
    colour = {"pass": "green", "fail": "bold red", "skipped": "yellow"}
    table = Table(
        title=f"reliability: {result.get('scheme')} on {result.get('kernel')}, "
        f"{result.get('duration_s')} s in the guest"
    )
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    for name, status, detail in reliability_checks.rows(result):
        table.add_row(name, f"[{colour[status]}]{status}[/]", detail)
    out = Console()
    out.print(table)
    out.print(reliability_checks.summary(result), highlight=False)


# `pmrtb probe`'s exit status per probe status (UserError is 2, GuestError 3)
PROBE_EXIT = {"passed": 0, "failed": 1, "inconclusive": 4}


@app.command()
def probe(
    name: str = typer.Argument(..., help="a probe: probes/<name>.sh"),
    args: list[str] = typer.Argument(None, help="the probe's own arguments (e.g. pmr/enabled)"),
    flavour: str = typer.Option("testbed", help="kernel flavour: testbed or debug"),
    out: Path = typer.Option(None, help="results directory (default results/probe-<name>-<time>)"),
    kernel_image: Path = typer.Option(
        None,
        "--kernel",
        help="boot this bzImage instead of the series' kernel (e.g. one without a patch)",
    ),
) -> None:
    """One kernel behaviour in a small guest: exit 0 passed, 1 failed, 4 inconclusive."""
    probe_mod.check(name, flavour, kernel_image)  # refuse bad input before building anything
    out = out or paths.RESULTS_DIR / f"probe-{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    with _spinner() as say:
        result = probe_mod.run(name, list(args or []), out, flavour, say, kernel_image)
    typer.echo(f"{name}: {result.status}: {result.verdict}")
    typer.echo(f"probe.json: {out / 'probe.json'}")
    raise typer.Exit(PROBE_EXIT[result.status])


@app.command()
def shell(
    profile: str = typer.Option("pixel6pro", help="profile for guest RAM and CPUs"),
    flavour: str = typer.Option("testbed"),
) -> None:
    """An interactive shell in the guest (host root read-only, project tree visible)."""
    import os

    prof = profiles.load(profile)
    vm.check_host_tools()
    image = kernel.build(flavour)
    accel = vm.detect_accel(image.bzimage)
    cmd = vm.vng_command(
        image.bzimage,
        exec_cmd=None,
        ram_mb=prof.guest_ram_mb,
        cpus=prof.cpus,
        accel=accel,
        rwdirs=[],
        disks=[],
    )
    cmd.remove("--verbose")
    os.execvpe(cmd[0], cmd, vm.vng_env())


def main() -> None:
    try:
        # not standalone, so that our errors reach the handlers below; click
        # then returns a command's typer.Exit code instead of exiting with it
        status = app(standalone_mode=False)
        sys.exit(status if isinstance(status, int) else 0)
    except UserError as exc:
        err.print(f"pmrtb: error: {exc}", highlight=False, soft_wrap=True, markup=False)
        sys.exit(exc.exit_code)
    except GuestError as exc:
        err.print(f"pmrtb: guest failed: {exc}", highlight=False, soft_wrap=True, markup=False)
        if exc.console_tail:
            err.print("--- console tail ---\n" + exc.console_tail, highlight=False, markup=False)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("pmrtb: interrupted")
        sys.exit(130)
    except typer.TyperException as exc:
        # Usage errors (typer's own click's ClickException) arrive here in
        # non-standalone mode
        if not hasattr(exc, "show"):
            raise
        exc.show()
        sys.exit(getattr(exc, "exit_code", 2))


if __name__ == "__main__":
    main()
