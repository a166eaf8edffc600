//! `pmr-guest reliability`: data integrity and kernel reliability under
//! heavy swapping, in one guest boot.
//!
//! Setup, shared with `run` (setup.rs): swap on the swap disk, the memory
//! sysctls, the scheme's knobs. Then the load phase, until pswpout reaches
//! `swap_factor` x MemTotal and each of the first checkers has swept its
//! memory twice (or the deadline, or a checker failure); "the way" below is
//! the lesser of the two shares done:
//!
//! - stress-ng's vm stressor with `--verify` (stress_ng.rs), in `pmr/stress-ng`;
//! - checker processes (checker.rs), each in `pmr/reliability/<n>`, holding
//!   together `checker.ram_ratio` x MemTotal of self-checking pages that
//!   they verify and rewrite over and over;
//! - with a toggle, a thread writing the knob's values in turn (knob_toggler.rs);
//! - from 40% of the way, the memcg lifetime check (memcg_lifetime.rs): once
//!   the last checker has swept its memory and at least 10% of it is swapped
//!   out (at 80% of the way regardless), its cgroup is killed with
//!   `cgroup.kill`, on a PMR kernel after waiting up to 5 s for pages on the
//!   victim list, and removed; a new checker takes its place in a new cgroup.
//!
//! Then the final checks (reliability/checks.rs): stress-ng stopped and
//! judged; every checker's pages verified once more; the knob back at its
//! first value and the victim lists empty; each checker cgroup's accounting
//! (memcg_stat.rs); the dying memcgs once every cgroup is removed; the swap
//! still in use once every process has exited. reliability.json
//! (reliability/report.rs) gets every check.
//!
//! With `swap_full` in the spec the swap holds the checkers but not
//! stress-ng too, so it runs full and the OOM killer acts. A thread samples
//! SwapFree throughout (swap_watch.rs; the `swap_full` check passes only if
//! it fell to about 0). The checkers become OOM-killable, newest first
//! (checker_fate.rs): one killed by the OOM killer is reported, not a
//! failure, as long as one checker survives to verify its pages at the
//! end. The way is then counted in sweeps only: the slowest surviving first
//! checker's sweeps since the swap first ran full, towards MIN_SWEEPS
//! (pswpout cannot reach a multiple of RAM at a set pace when the swap is
//! full); the load also ends if the swap has not run full after
//! SWAP_FULL_WAIT, or when no first checker is left.
//!
//! Exit status: 2 with one line `pmr-guest: error: ...` if setup fails;
//! otherwise reliability.json is written and the status is 0 only if no
//! check failed.

pub mod checked_page;
pub mod checker;
pub mod checker_fate;
pub mod checker_handle;
pub mod checks;
pub mod knob_effect;
pub mod knob_toggler;
pub mod memcg_lifetime;
pub mod report;
pub mod spec;
pub mod stress_ng;
pub mod swap_watch;
pub mod toggle_plan;

use crate::control::Control;
use crate::pattern::{self, PAGE_SIZE};
use crate::reliability::checker_fate::Fate;
use crate::reliability::checker_handle::Checker;
use crate::reliability::knob_toggler::{Progress, Toggler};
use crate::reliability::memcg_lifetime::VictimWait;
use crate::reliability::report::{Check, Report};
use crate::reliability::spec::ReliabilitySpec;
use crate::reliability::stress_ng::StressNg;
use crate::reliability::swap_watch::SwapWatch;
use crate::setup;
use crate::sys::cgroup::Cgroups;
use crate::sys::kthread_sched;
use crate::sys::memcg_stat;
use crate::sys::proc_files::parse_key_values;
use crate::sys::{self, Exit};
use anyhow::{anyhow, bail, ensure, Context, Result};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

pub(crate) const GROUP: &str = "reliability";
const STRESS_CGROUP: &str = "stress-ng";
pub(crate) const MIB: f64 = 1048576.0;
pub(crate) const TICK: Duration = Duration::from_millis(200);
const REPORT_EVERY: Duration = Duration::from_secs(30);
/// The memcg kill: not before this share of the run, and at the latest at KILL_BY.
pub(crate) const KILL_FROM: f64 = 0.4;
/// The load phase also lasts until each of the first checkers has swept
/// its memory this many times (under TCG, stress-ng alone can reach the
/// swap-out target while the checkers are still filling).
pub(crate) const MIN_SWEEPS: u32 = 2;
const KILL_BY: f64 = 0.8;
const KILL_MIN_SWAPPED: f64 = 0.1;
pub(crate) const VICTIM_WAIT: Duration = Duration::from_secs(5);
/// How long after a removal the dying memcgs are counted.
pub(crate) const SETTLE: Duration = Duration::from_secs(5);
pub(crate) const EMPTY_WAIT: Duration = Duration::from_secs(120);
const STRESS_GRACE: Duration = Duration::from_secs(180);
/// The share of MemTotal the workload can count on for anonymous memory;
/// the swap must hold the rest (checked at setup).
const ANON_SHARE_OF_RAM: f64 = 0.6;
/// The most of MemTotal anonymous memory could take: with `swap_full` the
/// swap must be smaller than the workload beyond that, or it may not fill.
const FULL_ANON_SHARE_OF_RAM: f64 = 0.95;
/// With `swap_full`: the load phase gives up if the swap has not run full by then.
pub(crate) const SWAP_FULL_WAIT: Duration = Duration::from_secs(1200);
/// The order of the checks in reliability.json.
const CHECK_ORDER: [&str; 12] = [
    "stress_ng",
    "data_integrity",
    "swap_volume",
    "swap_full",
    "swap_tiers",
    "knob_toggle",
    "memcg_kill",
    "memcg_kill_victims",
    "dying_memcgs",
    "victims_drained",
    "memcg_accounting",
    "swap_leak",
];

/// The guest after setup.
pub(crate) struct Machine {
    pub(crate) kernel: String,
    pub(crate) knobs: BTreeMap<String, String>,
    pub(crate) kthreads: Vec<kthread_sched::Applied>,
    pub(crate) swap_dev: String,
    pub(crate) cgroups: Cgroups,
    pub(crate) stress_cgroup: PathBuf,
    pub(crate) mem_total_kb: i64,
    pub(crate) swap_total_kb: i64,
    pub(crate) exe: PathBuf,
}

pub fn main(spec_path: &Path) -> ExitCode {
    let prepared = ReliabilitySpec::load(spec_path).and_then(|spec| {
        let machine = prepare(&spec)?;
        Ok((spec, machine))
    });
    let (spec, machine) = match prepared {
        Ok(p) => p,
        Err(e) => {
            eprintln!("pmr-guest: error: {}", format!("{e:#}").replace('\n', "; "));
            return ExitCode::from(2);
        }
    };
    let started_at = SystemTime::now();
    let mut session = Session::new(&spec, &machine);
    let outcome =
        std::panic::catch_unwind(AssertUnwindSafe(|| session.run())).unwrap_or_else(|_| {
            Err(anyhow!(
                "the reliability runtime panicked (message in console.log)"
            ))
        });
    let mut error = outcome.err().map(|e| format!("{e:#}"));
    if let Some(failure) = session.control.failure() {
        error.get_or_insert(failure);
    }
    let mut checks = std::mem::take(&mut session.checks);
    checks.sort_by_key(|c| CHECK_ORDER.iter().position(|&n| n == c.name));
    let ok = report::passed(&checks, error.as_deref());
    let report = Report {
        status: if ok { "ok" } else { "failed" },
        error: error.clone(),
        kernel: &machine.kernel,
        scheme: &spec.scheme.name,
        knobs: &machine.knobs,
        kthreads: &machine.kthreads,
        mem_total_kb: machine.mem_total_kb,
        swap_total_kb: machine.swap_total_kb,
        swap_dev: &machine.swap_dev,
        started_at: humantime::format_rfc3339_seconds(started_at).to_string(),
        duration_s: (session.start.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        figures: Value::Object(std::mem::take(&mut session.figures)),
        checks: &checks,
    };
    let path = spec.out_dir.join("reliability.json");
    let written = serde_json::to_string_pretty(&report)
        .map_err(anyhow::Error::from)
        .and_then(|t| {
            std::fs::write(&path, t + "\n")
                .with_context(|| format!("cannot write {}", path.display()))
        });
    if let Err(e) = written {
        eprintln!("pmr-guest: error: {e:#}");
        return ExitCode::from(1);
    }
    for c in &checks {
        eprintln!(
            "pmr-guest reliability: {} {}: {}",
            c.status.label(),
            c.name,
            c.detail
        );
    }
    if let Some(e) = error {
        eprintln!("pmr-guest reliability: error: {e}");
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn prepare(spec: &ReliabilitySpec) -> Result<Machine> {
    setup::require_root("pmr-guest reliability")?;
    let swap_dev = setup::require_disk("swap", &spec.swap.serial)?;
    setup::require_no_swap()?;
    ensure!(
        spec.stress_ng.path.is_file(),
        "stress-ng not found at {}: install it on the host (apt-get install stress-ng)",
        spec.stress_ng.path.display()
    );
    setup::create_out_dir(&spec.out_dir)?;
    let cgroups = Cgroups::setup(GROUP, &[])?;
    // After the cgroups: a toggled knob may be a file of the workload's
    // cgroup (Acclaim's memory.acclaim_bg on pmr/reliability).
    if let Some(t) = &spec.toggle {
        ensure!(
            t.path.exists(),
            "the toggled knob {} does not exist in this kernel: check the path, the kernel's patches and config",
            t.path.display()
        );
    }
    let stress_cgroup = cgroups.sibling(STRESS_CGROUP)?;
    cgroups.join_system()?;
    setup::protect_from_oom_killer()?;
    setup::apply_memory(&spec.memory)?;
    setup::setup_swap(&swap_dev, &spec.swap, None)?;
    let knobs = setup::apply_knobs(&spec.scheme.knobs)?;
    let kthreads = kthread_sched::apply(&spec.scheme.kthreads)?;
    let mem = setup::read_meminfo()?;
    if let Some(problem) = swap_size_problem(
        spec.swap_full,
        mem.mem_total,
        mem.swap_total,
        spec.checker.ram_ratio,
        spec.stress_ng.ram_ratio,
    ) {
        bail!(problem);
    }
    sys::mlockall().context("mlockall(MCL_CURRENT | MCL_FUTURE) failed: run as root")?;
    Ok(Machine {
        kernel: setup::kernel_release()?,
        knobs,
        kthreads,
        swap_dev,
        cgroups,
        stress_cgroup,
        mem_total_kb: mem.mem_total,
        swap_total_kb: mem.swap_total,
        exe: std::env::current_exe().context("cannot find the pmr-guest binary")?,
    })
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct VmCounters {
    pub(crate) pswpout: i64,
    pub(crate) pswpin: i64,
    pub(crate) nr_victim: Option<i64>,
    pub(crate) oom_kill: i64,
}

pub(crate) fn read_vmstat() -> Result<VmCounters> {
    let stat: memcg_stat::MemoryStat = parse_key_values(&std::fs::read_to_string("/proc/vmstat")?)?
        .into_iter()
        .collect();
    let get = |k: &str| stat.get(k).copied().unwrap_or(0);
    Ok(VmCounters {
        pswpout: get("pswpout"),
        pswpin: get("pswpin"),
        // one list before v1's patch 26 of the series, one per type since
        nr_victim: memcg_stat::victim_total(
            &stat,
            "nr_victim",
            ["nr_victim_anon", "nr_victim_file"],
        ),
        oom_kill: get("oom_kill"),
    })
}

/// Why the swap does not suit the run, if it does not: it must hold the
/// workload beyond ANON_SHARE_OF_RAM of MemTotal; with `swap_full`, hold
/// the checkers beyond that but not the whole workload beyond
/// FULL_ANON_SHARE_OF_RAM of MemTotal, so that it runs full.
pub(crate) fn swap_size_problem(
    swap_full: bool,
    mem_total_kb: i64,
    swap_total_kb: i64,
    checker_ratio: f64,
    stress_ratio: f64,
) -> Option<String> {
    let mem = mem_total_kb as f64;
    let swap = swap_total_kb as f64;
    let workload = checker_ratio + stress_ratio;
    let mib = |kb: f64| (kb as i64) >> 10;
    if !swap_full {
        let needed = (workload - ANON_SHARE_OF_RAM) * mem;
        return (swap < needed).then(|| format!(
            "swap is {} MiB but the workload ({workload:.1} x MemTotal) needs about {} MiB: give the guest a larger swap disk",
            swap_total_kb >> 10,
            mib(needed)
        ));
    }
    let checkers = (checker_ratio - ANON_SHARE_OF_RAM) * mem;
    let fills = (workload - FULL_ANON_SHARE_OF_RAM) * mem;
    if swap < checkers {
        Some(format!(
            "swap is {} MiB, too small even for the checkers ({checker_ratio:.1} x MemTotal need about {} MiB): \
             the OOM killer would take them all; give the guest a larger swap disk",
            swap_total_kb >> 10,
            mib(checkers)
        ))
    } else if swap > fills {
        Some(format!(
            "swap is {} MiB but the workload ({workload:.1} x MemTotal) holds at most {} MiB beyond RAM: \
             it would not run full; give the guest a smaller swap disk",
            swap_total_kb >> 10,
            mib(fills)
        ))
    } else {
        None
    }
}

/// With `swap_full`: the share of the way done, from the first checkers as
/// (index, sweep progress, alive): the slowest live one's sweeps since the
/// swap first ran full (`base`, each checker's sweep progress then; 0
/// before) over MIN_SWEEPS. None when no first checker is alive.
pub(crate) fn sweeps_since_full(
    base: Option<&BTreeMap<u32, f64>>,
    first_checkers: &[(u32, f64, bool)],
) -> Option<f64> {
    let live: Vec<&(u32, f64, bool)> = first_checkers.iter().filter(|c| c.2).collect();
    if live.is_empty() {
        return None;
    }
    let Some(base) = base else {
        return Some(0.0);
    };
    Some(
        live.iter()
            .map(|&&(i, sweeps, _)| (sweeps - base.get(&i).copied().unwrap_or(0.0)).max(0.0))
            .fold(f64::INFINITY, f64::min)
            / f64::from(MIN_SWEEPS),
    )
}

/// What happened at the memcg kill.
pub(crate) struct KillRecord {
    pub(crate) at: Instant,
    pub(crate) progress: f64,
    pub(crate) cgroup: String,
    pub(crate) memory_bytes: u64,
    pub(crate) swap_bytes: u64,
    pub(crate) checker_bytes: u64,
    pub(crate) victims: VictimWait,
    pub(crate) result: Result<f64, String>,
    pub(crate) exit: Option<Exit>,
}

/// How the load phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoadEnd {
    Reached,
    Deadline,
    CheckerFailed,
    /// `swap_full`: the swap had not run full after SWAP_FULL_WAIT.
    NeverFull,
    /// `swap_full`: the OOM killer took every first checker.
    AllKilled,
}

pub(crate) struct Session<'a> {
    pub(crate) spec: &'a ReliabilitySpec,
    pub(crate) m: &'a Machine,
    pub(crate) start: Instant,
    pub(crate) control: Arc<Control>,
    pub(crate) progress: Arc<Progress>,
    pub(crate) checkers: Vec<Checker>,
    /// Checkers killed with their cgroup.
    pub(crate) retired: Vec<Checker>,
    pub(crate) next_index: u32,
    pub(crate) pages_per_checker: usize,
    /// Data integrity failures: mismatches, checkers that died or hung.
    pub(crate) problems: Vec<String>,
    pub(crate) noted: Vec<u32>,
    /// Checkers the OOM killer took (`swap_full`), as "checker 3 (pid 412) at 530 s".
    pub(crate) oom_killed: Vec<(u32, String)>,
    /// `swap_full`: each checker's sweep progress when the swap first ran full.
    pub(crate) full_base: Option<BTreeMap<u32, f64>>,
    pub(crate) vm_start: VmCounters,
    pub(crate) kill: Option<KillRecord>,
    pub(crate) dying_baseline: u64,
    pub(crate) dying_after_kill: Option<u64>,
    pub(crate) removed_cgroups: u64,
    pub(crate) removal_failures: Vec<String>,
    pub(crate) figures: Map<String, Value>,
    pub(crate) checks: Vec<Check>,
}

impl<'a> Session<'a> {
    fn new(spec: &'a ReliabilitySpec, m: &'a Machine) -> Session<'a> {
        let total = spec.checker.ram_ratio * m.mem_total_kb as f64 * 1024.0;
        let pages = (total / f64::from(spec.checker.processes) / PAGE_SIZE as f64) as usize;
        Session {
            spec,
            m,
            start: Instant::now(),
            control: Arc::new(Control::default()),
            progress: Arc::new(Progress::default()),
            checkers: Vec::new(),
            retired: Vec::new(),
            next_index: 0,
            pages_per_checker: pages.max(1),
            problems: Vec::new(),
            noted: Vec::new(),
            oom_killed: Vec::new(),
            full_base: None,
            vm_start: VmCounters::default(),
            kill: None,
            dying_baseline: 0,
            dying_after_kill: None,
            removed_cgroups: 0,
            removal_failures: Vec::new(),
            figures: Map::new(),
            checks: Vec::new(),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        self.m.cgroups.root()
    }

    fn target_pages(&self) -> f64 {
        self.spec.swap_factor * self.m.mem_total_kb as f64 * 1024.0 / PAGE_SIZE as f64
    }

    fn run(&mut self) -> Result<()> {
        self.dying_baseline = memcg_lifetime::dying_descendants(self.root())?;
        self.vm_start = read_vmstat()?;
        let stress_bytes =
            (self.spec.stress_ng.ram_ratio * self.m.mem_total_kb as f64 * 1024.0) as u64;
        let backstop = Duration::from_secs_f64(self.spec.deadline_s) + STRESS_GRACE;
        let mut stress = stress_ng::start(
            &self.spec.stress_ng,
            stress_bytes,
            backstop,
            &self.m.stress_cgroup,
            &self.spec.out_dir.join("stress-ng.log"),
        )?;
        eprintln!("pmr-guest reliability: stress-ng {}", stress.args.join(" "));
        for _ in 0..self.spec.checker.processes {
            self.spawn_checker()?;
        }
        let toggler = match &self.spec.toggle {
            Some(t) => Some(Toggler::spawn(
                t.clone(),
                Arc::clone(&self.progress),
                &self.control,
                self.start,
            )?),
            None => None,
        };

        let watch = SwapWatch::spawn(self.m.swap_total_kb, &self.control, self.start)?;
        let end = self.load_phase(&mut stress, &watch);
        let level = watch.finish();
        let end = end?;
        let vm_end = read_vmstat()?;
        self.swap_volume_check(end, vm_end);
        self.swap_full_check(&level, vm_end);
        self.swap_tiers_check(&level);
        let toggles = toggler.map(Toggler::finish);
        let verdict = stress.stop(STRESS_GRACE)?;
        self.stress_check(verdict, stress_bytes);
        self.final_verification()?;
        self.knob_checks(toggles)?;
        let quiescent = self.accounting_check()?;
        self.release_all()?;
        self.data_integrity_check();
        self.kill_checks()?;
        self.dying_check()?;
        self.swap_leak_check(quiescent)?;
        Ok(())
    }

    fn spawn_checker(&mut self) -> Result<()> {
        let index = self.next_index;
        self.next_index += 1;
        let cgroup = self.m.cgroups.group_dir().join(index.to_string());
        std::fs::create_dir_all(&cgroup)
            .with_context(|| format!("cannot create cgroup {}", cgroup.display()))?;
        let seed = pattern::salt("checker", index) ^ self.spec.checker.seed;
        let c = Checker::spawn(&self.m.exe, index, seed, self.pages_per_checker, cgroup)?;
        // The runtime's -1000 is inherited; with a swap that runs full the
        // checkers must be killable (or the kernel panics when nothing is).
        let adj = if self.spec.swap_full {
            let adj = checker_fate::oom_score_adj(index);
            let path = format!("/proc/{}/oom_score_adj", c.pid());
            std::fs::write(&path, adj.to_string())
                .with_context(|| format!("cannot write {adj} to {path}"))?;
            format!(", oom_score_adj {adj}")
        } else {
            String::new()
        };
        eprintln!(
            "pmr-guest reliability: checker {index} (pid {}): {} MiB{adj}",
            c.pid(),
            c.bytes() >> 20
        );
        self.checkers.push(c);
        Ok(())
    }

    fn swap_progress(&self, vm: &VmCounters) -> f64 {
        (vm.pswpout - self.vm_start.pswpout) as f64 / self.target_pages()
    }

    /// How far the slowest of the first checkers (not the replacement,
    /// which starts late) is towards MIN_SWEEPS sweeps.
    fn sweep_progress(&self) -> f64 {
        self.checkers
            .iter()
            .filter(|c| c.index < self.spec.checker.processes)
            .map(|c| c.sweep_progress() / f64::from(MIN_SWEEPS))
            .fold(f64::INFINITY, f64::min)
    }

    /// Record what the checkers reported that fails the run, and the
    /// checkers the OOM killer took (once each; checker_fate.rs).
    pub(crate) fn note_checker_problems(&mut self) {
        for c in &self.checkers {
            if self.noted.contains(&c.index) {
                continue;
            }
            let oom_kills = match c.exit {
                Some(_) => memcg_lifetime::oom_kills(&c.cgroup).unwrap_or(0),
                None => 0,
            };
            let label = Checker::label(c.index);
            match checker_fate::fate(
                &label,
                c.pid(),
                c.mismatch.as_deref(),
                c.exit,
                oom_kills,
                self.spec.swap_full,
            ) {
                Fate::Running => {}
                Fate::OomKilled => {
                    let what = format!(
                        "{label} (pid {}) at {:.0} s",
                        c.pid(),
                        self.start.elapsed().as_secs_f64()
                    );
                    eprintln!("pmr-guest reliability: the OOM killer took {what}");
                    self.oom_killed.push((c.index, what));
                    self.noted.push(c.index);
                }
                Fate::Problem(p) => {
                    eprintln!("pmr-guest reliability: FAILURE: {p}");
                    self.problems.push(p);
                    self.noted.push(c.index);
                }
            }
        }
    }

    /// With `swap_full`: the way done (sweeps_since_full), None when no
    /// first checker is alive.
    pub(crate) fn full_progress(&self) -> Option<f64> {
        let first: Vec<(u32, f64, bool)> = self
            .checkers
            .iter()
            .filter(|c| c.index < self.spec.checker.processes)
            .map(|c| (c.index, c.sweep_progress(), c.exit.is_none()))
            .collect();
        sweeps_since_full(self.full_base.as_ref(), &first)
    }

    fn load_phase(&mut self, stress: &mut StressNg, watch: &SwapWatch) -> Result<LoadEnd> {
        let deadline = self.start + Duration::from_secs_f64(self.spec.deadline_s);
        let mut next_report = Instant::now() + REPORT_EVERY;
        let mut stress_ended = false;
        loop {
            for c in &mut self.checkers {
                c.poll(Duration::ZERO)?;
            }
            let vm = read_vmstat()?;
            self.note_checker_problems();
            if !self.problems.is_empty() {
                return Ok(LoadEnd::CheckerFailed);
            }
            let progress = if self.spec.swap_full {
                let level = watch.level();
                if self.full_base.is_none() && level.ran_full() {
                    eprintln!(
                        "pmr-guest reliability: the swap ran full at {:.0} s",
                        level.first_full_s.unwrap_or(0.0)
                    );
                    self.full_base = Some(
                        self.checkers
                            .iter()
                            .map(|c| (c.index, c.sweep_progress()))
                            .collect(),
                    );
                }
                if self.full_base.is_none() && self.start.elapsed() >= SWAP_FULL_WAIT {
                    return Ok(LoadEnd::NeverFull);
                }
                match self.full_progress() {
                    Some(p) => p,
                    None => return Ok(LoadEnd::AllKilled),
                }
            } else {
                self.swap_progress(&vm).min(self.sweep_progress())
            };
            self.progress.set(progress.min(1.0));
            if !stress_ended {
                if let Some(status) = stress.try_exit()? {
                    stress_ended = true;
                    eprintln!("pmr-guest reliability: stress-ng ended early ({status})");
                }
            }
            if self.kill.is_none() && self.kill_due(progress)? {
                self.kill_and_replace(progress)?;
            }
            if let Some(k) = &self.kill {
                if self.dying_after_kill.is_none() && k.at.elapsed() >= SETTLE {
                    self.dying_after_kill = Some(memcg_lifetime::dying_descendants(self.root())?);
                }
            }
            if let Some(failure) = self.control.failure() {
                bail!(failure);
            }
            if progress >= 1.0 {
                return Ok(LoadEnd::Reached);
            }
            if Instant::now() >= deadline {
                return Ok(LoadEnd::Deadline);
            }
            if Instant::now() >= next_report {
                next_report += REPORT_EVERY;
                let sweeps: Vec<String> = self
                    .checkers
                    .iter()
                    .map(|c| format!("{:.2}", c.sweep_progress()))
                    .collect();
                let min_free = watch.level().min_free_kb.unwrap_or(0) as f64 / 1024.0;
                eprintln!(
                    "pmr-guest reliability: {:.0} s, {:.0}% of the way: pswpout {:.0} MiB ({:.0}% of the target), sweeps {}, \
                     SwapFree min {min_free:.0} MiB, {} OOM kills",
                    self.start.elapsed().as_secs_f64(),
                    progress * 100.0,
                    (vm.pswpout - self.vm_start.pswpout) as f64 * PAGE_SIZE as f64 / MIB,
                    self.swap_progress(&vm) * 100.0,
                    sweeps.join(" "),
                    vm.oom_kill - self.vm_start.oom_kill
                );
            }
            std::thread::sleep(TICK);
        }
    }

    /// The checker the memcg kill takes: the last one still alive.
    fn doomed(&self) -> Option<usize> {
        self.checkers.iter().rposition(|c| c.exit.is_none())
    }

    fn kill_due(&self, progress: f64) -> Result<bool> {
        if progress < KILL_FROM {
            return Ok(false);
        }
        let Some(doomed) = self.doomed().map(|i| &self.checkers[i]) else {
            return Ok(false);
        };
        if progress >= KILL_BY {
            return Ok(true);
        }
        let swapped = memcg_lifetime::read_number(&doomed.cgroup, "memory.swap.current")?;
        Ok(doomed.sweeps >= 1 && swapped as f64 >= KILL_MIN_SWAPPED * doomed.bytes() as f64)
    }

    fn kill_and_replace(&mut self, progress: f64) -> Result<()> {
        let i = self.doomed().context("no live checker to kill")?;
        let mut doomed = self.checkers.remove(i);
        let cg = doomed.cgroup.clone();
        let victims = memcg_lifetime::wait_for_victims(&cg, VICTIM_WAIT)?;
        let memory_bytes = memcg_lifetime::read_number(&cg, "memory.current")?;
        let swap_bytes = memcg_lifetime::read_number(&cg, "memory.swap.current")?;
        doomed.poll(Duration::ZERO)?;
        let result = memcg_lifetime::kill_all(&cg, EMPTY_WAIT)
            .and_then(|took| memcg_lifetime::remove(&cg).map(|()| took.as_secs_f64()))
            .map_err(|e| format!("{e:#}"));
        if result.is_ok() {
            self.removed_cgroups += 1;
        }
        let exit = doomed.wait_exit(Duration::from_secs(10))?;
        if let Some(text) = &doomed.mismatch {
            self.problems.push(format!("mismatch: {text}"));
        }
        eprintln!(
            "pmr-guest reliability: killed {} at {:.0}% ({} MiB in memory, {} MiB swapped, victims {victims:?}): {result:?}",
            cg.display(),
            progress * 100.0,
            memory_bytes >> 20,
            swap_bytes >> 20
        );
        self.kill = Some(KillRecord {
            at: Instant::now(),
            progress,
            cgroup: cg
                .strip_prefix(self.root())
                .unwrap_or(&cg)
                .display()
                .to_string(),
            memory_bytes,
            swap_bytes,
            checker_bytes: doomed.bytes(),
            victims,
            result,
            exit,
        });
        self.retired.push(doomed);
        self.spawn_checker()
    }
}

pub(crate) fn describe(exit: Exit) -> String {
    match exit {
        Exit::Code(c) => format!("exit status {c}"),
        Exit::Signal(s) => format!("signal {s}"),
    }
}

pub(crate) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    // pixel5: a 1365 MB guest has about 1300 MiB of MemTotal.
    const MEM_KB: i64 = 1300 * 1024;

    #[test]
    fn a_normal_run_wants_swap_for_the_whole_workload() {
        let problem = |swap_mb: i64| swap_size_problem(false, MEM_KB, swap_mb << 10, 1.5, 0.7);
        assert_eq!(problem(2320), None, "the host's 1.7 x RAM disk");
        let err = problem(1365).unwrap();
        assert!(
            err.contains("needs about 2080 MiB") && err.contains("larger swap disk"),
            "{err}"
        );
    }

    #[test]
    fn a_swap_full_run_wants_room_for_the_checkers_only() {
        let problem = |swap_mb: i64| swap_size_problem(true, MEM_KB, swap_mb << 10, 1.5, 0.7);
        assert_eq!(problem(1365), None, "the host's 1.0 x RAM disk");
        let small = problem(1000).unwrap();
        assert!(
            small.contains("too small even for the checkers") && small.contains("1170 MiB"),
            "{small}"
        );
        let large = problem(2320).unwrap();
        assert!(
            large.contains("would not run full") && large.contains("1625 MiB"),
            "{large}"
        );
    }

    #[test]
    fn swap_full_progress_counts_sweeps_after_the_swap_ran_full() {
        let checkers = [(0, 1.5, true), (1, 0.9, true), (2, 3.0, false)];
        assert_eq!(
            sweeps_since_full(None, &checkers),
            Some(0.0),
            "not full yet"
        );
        let base: BTreeMap<u32, f64> = [(0, 0.5), (1, 0.4), (2, 0.0)].into();
        // checker 0: 1.0 sweep since, checker 1: 0.5 (slowest), 2 is dead.
        assert_eq!(sweeps_since_full(Some(&base), &checkers), Some(0.25));
        let later = [(0, 2.5, true), (1, 2.4, true), (2, 3.0, false)];
        assert_eq!(sweeps_since_full(Some(&base), &later), Some(1.0));
        let dead = [(0, 2.5, false), (1, 2.4, false)];
        assert_eq!(sweeps_since_full(Some(&base), &dead), None);
        assert_eq!(sweeps_since_full(None, &dead), None);
    }
}
