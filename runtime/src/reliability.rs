//! `pmr-guest reliability`: data integrity and kernel reliability under
//! heavy swapping, in one guest boot.
//!
//! Setup, shared with `run` (setup.rs): swap on the swap disk, the memory
//! sysctls, the scheme's knobs. Then the load phase, until pswpout reaches
//! `swap_factor` x MemTotal (or the deadline, or a checker failure):
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
//! Then the final checks: stress-ng stopped and judged; every checker's
//! pages verified once more; the knob back at its first value and the
//! victim lists empty; each checker cgroup's accounting (memcg_stat.rs); the
//! dying memcgs once every cgroup is removed; the swap still in use once
//! every process has exited. reliability.json (reliability_report.rs)
//! gets every check.
//!
//! Exit status: 2 with one line `pmr-guest: error: ...` if setup fails;
//! otherwise reliability.json is written and the status is 0 only if no
//! check failed.

use crate::cgroup::Cgroups;
use crate::checker_handle::Checker;
use crate::control::Control;
use crate::knob_toggler::{Progress, ToggleRecord, Toggler};
use crate::memcg_lifetime::{self, VictimWait};
use crate::memcg_stat::{self, Accounting};
use crate::pattern::{self, PAGE_SIZE};
use crate::proc_files::{parse_key_values, parse_status_kb};
use crate::reliability_report::{self, Check, Report};
use crate::reliability_spec::ReliabilitySpec;
use crate::setup;
use crate::stress_ng::{self, StressNg};
use crate::sys::{self, Exit};
use anyhow::{anyhow, bail, ensure, Context, Result};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

const GROUP: &str = "reliability";
const STRESS_CGROUP: &str = "stress-ng";
const MIB: f64 = 1048576.0;
const TICK: Duration = Duration::from_millis(200);
const REPORT_EVERY: Duration = Duration::from_secs(30);
/// The memcg kill: not before this share of the run, and at the latest at KILL_BY.
const KILL_FROM: f64 = 0.4;
const KILL_BY: f64 = 0.8;
const KILL_MIN_SWAPPED: f64 = 0.1;
const VICTIM_WAIT: Duration = Duration::from_secs(5);
/// How long after a removal the dying memcgs are counted.
const SETTLE: Duration = Duration::from_secs(5);
const EMPTY_WAIT: Duration = Duration::from_secs(120);
const STRESS_GRACE: Duration = Duration::from_secs(180);
const FINAL_VERIFY_WAIT: Duration = Duration::from_secs(1200);
const EXIT_WAIT: Duration = Duration::from_secs(120);
/// Swap still in use after everything exited, beyond what live processes hold.
const SWAP_LEAK_LIMIT_KB: i64 = 4 * 1024;
/// The share of MemTotal the workload can count on for anonymous memory;
/// the swap must hold the rest (checked at setup).
const ANON_SHARE_OF_RAM: f64 = 0.6;
/// The order of the checks in reliability.json.
const CHECK_ORDER: [&str; 10] = [
    "stress_ng",
    "data_integrity",
    "swap_volume",
    "knob_toggle",
    "memcg_kill",
    "memcg_kill_victims",
    "dying_memcgs",
    "victims_drained",
    "memcg_accounting",
    "swap_leak",
];

/// The guest after setup.
struct Machine {
    kernel: String,
    knobs: BTreeMap<String, String>,
    swap_dev: String,
    cgroups: Cgroups,
    stress_cgroup: PathBuf,
    mem_total_kb: i64,
    swap_total_kb: i64,
    exe: PathBuf,
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
    let ok = reliability_report::passed(&checks, error.as_deref());
    let report = Report {
        status: if ok { "ok" } else { "failed" },
        error: error.clone(),
        kernel: &machine.kernel,
        scheme: &spec.scheme.name,
        knobs: &machine.knobs,
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
    if let Some(t) = &spec.toggle {
        ensure!(
            t.path.exists(),
            "the toggled knob {} does not exist in this kernel: check the path, the kernel's patches and config",
            t.path.display()
        );
    }
    setup::create_out_dir(&spec.out_dir)?;
    let cgroups = Cgroups::setup(GROUP, &[])?;
    let stress_cgroup = cgroups.sibling(STRESS_CGROUP)?;
    cgroups.join_system()?;
    setup::protect_from_oom_killer()?;
    setup::apply_memory(&spec.memory)?;
    setup::setup_swap(&swap_dev, &spec.swap)?;
    let knobs = setup::apply_knobs(&spec.scheme.knobs)?;
    let mem = setup::read_meminfo()?;
    let anon_kb = (spec.checker.ram_ratio + spec.stress_ng.ram_ratio) * mem.mem_total as f64;
    let swap_needed_kb = (anon_kb - ANON_SHARE_OF_RAM * mem.mem_total as f64) as i64;
    ensure!(
        mem.swap_total >= swap_needed_kb,
        "swap is {} MiB but the workload ({:.1} x MemTotal) needs about {} MiB: give the guest a larger swap disk",
        mem.swap_total >> 10,
        spec.checker.ram_ratio + spec.stress_ng.ram_ratio,
        swap_needed_kb >> 10
    );
    sys::mlockall().context("mlockall(MCL_CURRENT | MCL_FUTURE) failed: run as root")?;
    Ok(Machine {
        kernel: setup::kernel_release()?,
        knobs,
        swap_dev,
        cgroups,
        stress_cgroup,
        mem_total_kb: mem.mem_total,
        swap_total_kb: mem.swap_total,
        exe: std::env::current_exe().context("cannot find the pmr-guest binary")?,
    })
}

#[derive(Debug, Clone, Copy, Default)]
struct VmCounters {
    pswpout: i64,
    pswpin: i64,
    nr_victim: Option<i64>,
}

fn read_vmstat() -> Result<VmCounters> {
    let mut v = VmCounters::default();
    for (k, n) in parse_key_values(&std::fs::read_to_string("/proc/vmstat")?)? {
        match k.as_str() {
            "pswpout" => v.pswpout = n,
            "pswpin" => v.pswpin = n,
            "nr_victim" => v.nr_victim = Some(n),
            _ => {}
        }
    }
    Ok(v)
}

/// What happened at the memcg kill.
struct KillRecord {
    at: Instant,
    progress: f64,
    cgroup: String,
    memory_bytes: u64,
    swap_bytes: u64,
    checker_bytes: u64,
    victims: VictimWait,
    result: Result<f64, String>,
    exit: Option<Exit>,
}

/// How the load phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoadEnd {
    Reached,
    Deadline,
    CheckerFailed,
}

struct Session<'a> {
    spec: &'a ReliabilitySpec,
    m: &'a Machine,
    start: Instant,
    control: Arc<Control>,
    progress: Arc<Progress>,
    checkers: Vec<Checker>,
    /// Checkers killed with their cgroup.
    retired: Vec<Checker>,
    next_index: u32,
    pages_per_checker: usize,
    /// Data integrity failures: mismatches, checkers that died or hung.
    problems: Vec<String>,
    noted: Vec<u32>,
    vm_start: VmCounters,
    kill: Option<KillRecord>,
    dying_baseline: u64,
    dying_after_kill: Option<u64>,
    removed_cgroups: u64,
    removal_failures: Vec<String>,
    figures: Map<String, Value>,
    checks: Vec<Check>,
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

    fn root(&self) -> &Path {
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

        let end = self.load_phase(&mut stress)?;
        let vm_end = read_vmstat()?;
        self.swap_volume_check(end, vm_end);
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
        eprintln!(
            "pmr-guest reliability: checker {index} (pid {}): {} MiB",
            c.pid(),
            c.bytes() >> 20
        );
        self.checkers.push(c);
        Ok(())
    }

    fn swap_progress(&self, vm: &VmCounters) -> f64 {
        (vm.pswpout - self.vm_start.pswpout) as f64 / self.target_pages()
    }

    /// Record what the checkers reported that fails the run (once each).
    fn note_checker_problems(&mut self) {
        for c in &self.checkers {
            if self.noted.contains(&c.index) {
                continue;
            }
            let problem = match (&c.mismatch, c.exit) {
                (Some(text), _) => Some(format!("mismatch: {text}")),
                (None, Some(exit)) => Some(format!(
                    "{} (pid {}) ended during the run: {} (the OOM killer?)",
                    Checker::label(c.index),
                    c.pid(),
                    describe(exit)
                )),
                (None, None) => None,
            };
            if let Some(p) = problem {
                eprintln!("pmr-guest reliability: FAILURE: {p}");
                self.problems.push(p);
                self.noted.push(c.index);
            }
        }
    }

    fn load_phase(&mut self, stress: &mut StressNg) -> Result<LoadEnd> {
        let deadline = self.start + Duration::from_secs_f64(self.spec.deadline_s);
        let mut next_report = Instant::now() + REPORT_EVERY;
        let mut stress_ended = false;
        loop {
            let vm = read_vmstat()?;
            let progress = self.swap_progress(&vm);
            self.progress.set(progress.min(1.0));
            for c in &mut self.checkers {
                c.poll(Duration::ZERO)?;
            }
            self.note_checker_problems();
            if !self.problems.is_empty() {
                return Ok(LoadEnd::CheckerFailed);
            }
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
                let sweeps: Vec<u32> = self.checkers.iter().map(|c| c.sweeps).collect();
                eprintln!(
                    "pmr-guest reliability: {:.0} s, pswpout {:.0} MiB ({:.0}% of the target), sweeps {sweeps:?}",
                    self.start.elapsed().as_secs_f64(),
                    (vm.pswpout - self.vm_start.pswpout) as f64 * PAGE_SIZE as f64 / MIB,
                    progress * 100.0
                );
            }
            std::thread::sleep(TICK);
        }
    }

    fn kill_due(&self, progress: f64) -> Result<bool> {
        if progress < KILL_FROM {
            return Ok(false);
        }
        if progress >= KILL_BY {
            return Ok(true);
        }
        let Some(doomed) = self.checkers.last() else {
            return Ok(false);
        };
        let swapped = memcg_lifetime::read_number(&doomed.cgroup, "memory.swap.current")?;
        Ok(doomed.sweeps >= 1 && swapped as f64 >= KILL_MIN_SWAPPED * doomed.bytes() as f64)
    }

    fn kill_and_replace(&mut self, progress: f64) -> Result<()> {
        let mut doomed = self.checkers.pop().context("no checker to kill")?;
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

    fn swap_volume_check(&mut self, end: LoadEnd, vm: VmCounters) {
        let page_mb = PAGE_SIZE as f64 / MIB;
        let out_mb = (vm.pswpout - self.vm_start.pswpout) as f64 * page_mb;
        let in_mb = (vm.pswpin - self.vm_start.pswpin) as f64 * page_mb;
        let ram_mb = self.m.mem_total_kb as f64 / 1024.0;
        let ratio = out_mb / ram_mb;
        let load_s = self.start.elapsed().as_secs_f64();
        let why = match end {
            LoadEnd::Reached => "target reached",
            LoadEnd::Deadline => "deadline reached first",
            LoadEnd::CheckerFailed => "stopped by a checker failure",
        };
        self.figures
            .insert("pswpout_mb".into(), json!(out_mb.round()));
        self.figures
            .insert("pswpout_ratio_to_ram".into(), json!(round2(ratio)));
        self.figures
            .insert("load_phase_s".into(), json!(load_s.round()));
        self.checks.push(Check::verdict(
            "swap_volume",
            end == LoadEnd::Reached,
            format!(
                "pswpout {out_mb:.0} MiB = {ratio:.2} x RAM (target {}) and pswpin {in_mb:.0} MiB in {load_s:.0} s: {why}",
                self.spec.swap_factor
            ),
            json!({"pswpout_mb": out_mb.round(), "pswpin_mb": in_mb.round(),
                   "ratio_to_ram": round2(ratio), "target_ratio": self.spec.swap_factor,
                   "mem_total_mb": ram_mb.round(), "load_phase_s": load_s.round(), "ended": why}),
        ));
    }

    fn stress_check(&mut self, v: stress_ng::Verdict, bytes: u64) {
        let detail = if v.ok {
            format!(
                "exit 0, no verify failure ({} vm workers, {} MiB, {:.0} s, {} OOM restarts)",
                self.spec.stress_ng.workers,
                bytes >> 20,
                v.ran_s,
                v.oom_restarts
            )
        } else if let Some(first) = v.failure_lines.first() {
            format!("exit {}: {first}", v.exit)
        } else if !v.completed {
            format!(
                "exit {}, no `successful run completed` (stress-ng.log)",
                v.exit
            )
        } else {
            format!("exit {} (stress-ng.log)", v.exit)
        };
        self.figures.insert(
            "stress_ng".into(),
            json!(if v.ok {
                "pass".to_string()
            } else {
                format!("exit {}", v.exit)
            }),
        );
        let mut figures = serde_json::to_value(&v).unwrap_or(Value::Null);
        figures["vm_bytes_mb"] = json!(bytes >> 20);
        self.checks
            .push(Check::verdict("stress_ng", v.ok, detail, figures));
    }

    /// Ask every checker for its final verification and wait for it.
    fn final_verification(&mut self) -> Result<()> {
        for c in &mut self.checkers {
            if c.exit.is_none() {
                c.stop();
            }
        }
        let end = Instant::now() + FINAL_VERIFY_WAIT;
        loop {
            for c in &mut self.checkers {
                c.poll(Duration::from_millis(20))?;
            }
            self.note_checker_problems();
            let pending: Vec<u32> = self
                .checkers
                .iter()
                .filter(|c| c.verified.is_none() && c.exit.is_none())
                .map(|c| c.index)
                .collect();
            if pending.is_empty() {
                return Ok(());
            }
            if Instant::now() >= end {
                for i in pending {
                    self.problems.push(format!(
                        "{} did not finish its final verification within {} s",
                        Checker::label(i),
                        FINAL_VERIFY_WAIT.as_secs()
                    ));
                }
                return Ok(());
            }
            std::thread::sleep(TICK);
        }
    }

    fn knob_checks(&mut self, toggles: Option<ToggleRecord>) -> Result<()> {
        let (Some(t), Some(rec)) = (&self.spec.toggle, toggles) else {
            self.figures.insert("toggles_done".into(), json!(0));
            self.checks
                .push(Check::skipped("knob_toggle", "no --toggle given"));
            self.checks.push(Check::skipped(
                "victims_drained",
                "the knob was not toggled",
            ));
            return Ok(());
        };
        let path = t.path.display().to_string();
        let restore = std::fs::write(&t.path, t.first())
            .map_err(|e| format!("cannot write {:?} back: {e}", t.first()));
        let read_back = std::fs::read_to_string(&t.path)
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let reached = self.progress.get() >= 1.0;
        let ok =
            rec.failures.is_empty() && restore.is_ok() && (rec.done == rec.planned || !reached);
        let detail = match (&restore, rec.failures.first()) {
            (Err(e), _) => e.clone(),
            (Ok(()), Some(f)) => format!(
                "{} of {} writes to {path} failed; first: write {} of {:?} at {:.0} s: {}",
                rec.failures.len(),
                rec.done,
                f.n,
                f.value,
                f.t_s,
                f.what
            ),
            (Ok(()), None) => format!(
                "{}/{} writes to {path} ({}){}; back to {:?} (reads {read_back:?})",
                rec.done,
                rec.planned,
                t.values.join(","),
                if rec.refused_as_expected > 0 {
                    format!(", {} refused as expected", rec.refused_as_expected)
                } else {
                    String::new()
                },
                t.first()
            ),
        };
        self.figures.insert("toggles_done".into(), json!(rec.done));
        self.checks.push(Check::verdict(
            "knob_toggle",
            ok,
            detail,
            json!({"path": path, "values": t.values, "refused": t.refused, "planned": rec.planned,
                   "done": rec.done, "refused_as_expected": rec.refused_as_expected,
                   "failures": rec.failures, "restored": t.first(), "read_back": read_back}),
        ));
        self.victims_check()
    }

    /// After the knob is back at its first value: no page left on any
    /// victim list (waiting up to VICTIM_WAIT for PMR to drain them).
    fn victims_check(&mut self) -> Result<()> {
        let has_list = read_vmstat()?.nr_victim.is_some()
            || self.checkers.iter().filter(|c| c.exit.is_none()).any(|c| {
                memcg_lifetime::memory_stat(&c.cgroup)
                    .is_ok_and(|s| memcg_stat::victim(&s).is_some())
            });
        if !has_list {
            self.figures.insert("nr_victim_after".into(), Value::Null);
            self.checks.push(Check::skipped(
                "victims_drained",
                "the kernel has no victim list (no nr_victim in /proc/vmstat, no `victim` in memory.stat)",
            ));
            return Ok(());
        }
        let end = Instant::now() + VICTIM_WAIT;
        loop {
            let nr = read_vmstat()?.nr_victim.unwrap_or(0);
            let cgroups = memcg_lifetime::cgroups_with_victims(self.root())?;
            let done = nr == 0 && cgroups.is_empty();
            if done || Instant::now() >= end {
                self.figures.insert("nr_victim_after".into(), json!(nr));
                let listed: Vec<String> = cgroups
                    .iter()
                    .map(|(p, b)| format!("{}: {b} B", p.display()))
                    .collect();
                let detail = if done {
                    "nr_victim 0 and no cgroup has victim pages after the knob went back"
                        .to_string()
                } else {
                    format!("nr_victim {nr}, victim pages in {}", listed.join(", "))
                };
                self.checks.push(Check::verdict(
                    "victims_drained",
                    done,
                    detail,
                    json!({"nr_victim": nr, "cgroups_with_victims": listed}),
                ));
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Each live checker cgroup's accounting, while the checkers hold
    /// their memory and do nothing; returns (swap in use, swap charged to
    /// the checkers) in kB at that moment.
    fn accounting_check(&mut self) -> Result<(i64, i64)> {
        let mut figures = Map::new();
        let mut bad = Vec::new();
        let mut worst: Option<Accounting> = None;
        let mut checkers_swap = 0u64;
        for c in self.checkers.iter().filter(|c| c.exit.is_none()) {
            let name = c.index.to_string();
            let acc = Accounting::of(&memcg_lifetime::memory_stat(&c.cgroup)?)?;
            checkers_swap += memcg_lifetime::read_number(&c.cgroup, "memory.swap.current")?;
            if !acc.ok {
                bad.push(format!(
                    "{GROUP}/{name}: lru {:.1} MiB vs anon+file {:.1} MiB (swapcached {:.1} MiB)",
                    acc.lru as f64 / MIB,
                    (acc.anon + acc.file) as f64 / MIB,
                    acc.swapcached as f64 / MIB
                ));
            }
            if worst
                .as_ref()
                .is_none_or(|w| acc.difference.abs() > w.difference.abs())
            {
                worst = Some(acc.clone());
            }
            figures.insert(name, serde_json::to_value(&acc)?);
        }
        let mem = setup::read_meminfo()?;
        let used_kb = mem.swap_total - mem.swap_free;
        let checkers_swap_kb = (checkers_swap / 1024) as i64;
        let detail = match (&worst, bad.first()) {
            (None, _) => "no live checker cgroup to look at".to_string(),
            (Some(_), Some(first)) => format!("{} cgroups do not add up; {first}", bad.len()),
            (Some(w), None) => format!(
                "{} cgroups: anon + file = LRU lists within tolerance (largest difference {:+.1} MiB, tolerance {:.1} MiB)",
                figures.len(),
                w.difference as f64 / MIB,
                w.tolerance as f64 / MIB
            ),
        };
        let ok = worst.is_some() && bad.is_empty();
        self.checks.push(Check::verdict(
            "memcg_accounting",
            ok,
            detail,
            Value::Object(figures),
        ));
        Ok((used_kb, checkers_swap_kb))
    }

    /// Let every checker exit, then remove every cgroup of the workload.
    fn release_all(&mut self) -> Result<()> {
        for c in &mut self.checkers {
            c.release();
        }
        for i in 0..self.checkers.len() {
            let c = &mut self.checkers[i];
            let exit = c.wait_exit(EXIT_WAIT)?;
            let problem = match exit {
                Some(Exit::Code(0)) => None,
                _ if self.noted.contains(&c.index) => None,
                Some(other) => Some(format!(
                    "{} exited with {}",
                    Checker::label(c.index),
                    describe(other)
                )),
                None => {
                    c.kill();
                    Some(format!(
                        "{} did not exit within {} s",
                        Checker::label(c.index),
                        EXIT_WAIT.as_secs()
                    ))
                }
            };
            if let Some(p) = problem {
                self.problems.push(p);
            }
        }
        let mut cgroups: Vec<PathBuf> = self.checkers.iter().map(|c| c.cgroup.clone()).collect();
        cgroups.push(self.m.stress_cgroup.clone());
        for cg in cgroups {
            let removed = memcg_lifetime::wait_empty(&cg, Duration::from_secs(10))
                .or_else(|_| memcg_lifetime::kill_all(&cg, EMPTY_WAIT))
                .and_then(|_| memcg_lifetime::remove(&cg));
            match removed {
                Ok(()) => self.removed_cgroups += 1,
                Err(e) => self.removal_failures.push(format!("{e:#}")),
            }
        }
        Ok(())
    }

    fn data_integrity_check(&mut self) {
        let all: Vec<&Checker> = self.retired.iter().chain(&self.checkers).collect();
        let page_checks: u64 = all.iter().map(|c| c.page_checks()).sum();
        let sweeps: Map<String, Value> = all
            .iter()
            .map(|c| (c.index.to_string(), json!(c.sweeps)))
            .collect();
        let mb = |c: &&Checker| c.bytes() as f64 / MIB;
        let total_mb: f64 = self.checkers.iter().map(|c| c.bytes() as f64 / MIB).sum();
        let detail = match self.problems.first() {
            Some(first) => format!("{} problems; first: {first}", self.problems.len()),
            None => format!(
                "{page_checks} page verifications in {} processes ({:.0} MiB each, {total_mb:.0} MiB at once), sweeps {}: no mismatch",
                all.len(),
                all.first().map(mb).unwrap_or(0.0),
                all.iter().map(|c| c.sweeps.to_string()).collect::<Vec<_>>().join("/")
            ),
        };
        self.checks.push(Check::verdict(
            "data_integrity",
            self.problems.is_empty(),
            detail,
            json!({"processes": all.len(), "checker_mb": total_mb.round(), "sweeps": sweeps,
                   "page_verifications": page_checks, "problems": self.problems}),
        ));
    }

    fn kill_checks(&mut self) -> Result<()> {
        let Some(k) = &self.kill else {
            let why = format!(
                "the run ended at {:.0}% of the way, before the kill (from {:.0}%)",
                self.progress.get() * 100.0,
                KILL_FROM * 100.0
            );
            self.checks.push(Check::skipped("memcg_kill", why.clone()));
            self.checks.push(Check::skipped("memcg_kill_victims", why));
            return Ok(());
        };
        let swapped = k.swap_bytes as f64 / k.checker_bytes as f64;
        let killed = k.exit == Some(Exit::Signal(libc::SIGKILL));
        let detail = match &k.result {
            Err(e) => e.clone(),
            Ok(s) => format!(
                "{} killed at {:.0}% of the way with {} MiB in memory and {} MiB ({:.0}%) swapped: emptied in {s:.1} s, removed{}",
                k.cgroup,
                k.progress * 100.0,
                k.memory_bytes >> 20,
                k.swap_bytes >> 20,
                swapped * 100.0,
                if killed { String::new() } else { format!("; but the checker ended with {:?}", k.exit) }
            ),
        };
        self.checks.push(Check::verdict(
            "memcg_kill",
            k.result.is_ok() && killed && k.swap_bytes > 0,
            if k.swap_bytes == 0 {
                format!("{detail} (nothing was swapped out)")
            } else {
                detail
            },
            json!({"cgroup": k.cgroup, "at_progress": round2(k.progress),
                   "memory_mb": k.memory_bytes >> 20, "swap_mb": k.swap_bytes >> 20,
                   "swapped_fraction": round2(swapped), "empty_s": k.result.as_ref().ok(),
                   "error": k.result.as_ref().err(), "exit": k.exit.map(describe)}),
        ));
        let victims = match k.victims {
            VictimWait::NoVictimList => Check::skipped(
                "memcg_kill_victims",
                "the kernel has no victim list (no `victim` in memory.stat)",
            ),
            VictimWait::NotSeen => Check::skipped(
                "memcg_kill_victims",
                format!(
                    "no page on the victim list within {} s: PMR not reclaiming in this cgroup",
                    VICTIM_WAIT.as_secs()
                ),
            ),
            VictimWait::Seen(bytes) => Check::verdict(
                "memcg_kill_victims",
                k.result.is_ok(),
                format!(
                    "killed and removed with {:.1} MiB on the victim list",
                    bytes as f64 / MIB
                ),
                json!({"victim_mb": round2(bytes as f64 / MIB)}),
            ),
        };
        self.checks.push(victims);
        Ok(())
    }

    fn dying_check(&mut self) -> Result<()> {
        std::thread::sleep(SETTLE);
        let end = memcg_lifetime::dying_descendants(self.root())?;
        if self.kill.is_some() && self.dying_after_kill.is_none() {
            self.dying_after_kill = Some(end);
        }
        let base = self.dying_baseline;
        let after_kill_ok = self.dying_after_kill.is_none_or(|d| d <= base + 1);
        let end_ok = end <= base + self.removed_cgroups;
        let ok = after_kill_ok && end_ok && self.removal_failures.is_empty();
        self.figures.insert("dying_memcgs".into(), json!(end));
        let detail = match self.removal_failures.first() {
            Some(e) => e.clone(),
            None => format!(
                "nr_dying_descendants {base} before, {} {} s after the kill, {end} {} s after removing all {} cgroups",
                self.dying_after_kill.map_or("-".into(), |d| d.to_string()),
                SETTLE.as_secs(),
                SETTLE.as_secs(),
                self.removed_cgroups
            ),
        };
        self.checks.push(Check::verdict(
            "dying_memcgs",
            ok,
            detail,
            json!({"baseline": base, "after_kill": self.dying_after_kill, "at_end": end,
                   "removed_cgroups": self.removed_cgroups, "removal_failures": self.removal_failures}),
        ));
        Ok(())
    }

    /// Swap still in use once the workload is gone, beyond what the
    /// remaining processes hold. Swap cache pages whose slot outlived their
    /// process are not leaked but only freed by reclaim: if the first look
    /// finds too much, the root cgroup is asked to reclaim and the second
    /// look decides.
    fn swap_leak_check(&mut self, (used_quiet_kb, checkers_kb): (i64, i64)) -> Result<()> {
        let look = || -> Result<(i64, i64)> {
            let mem = setup::read_meminfo()?;
            Ok((mem.swap_total - mem.swap_free, processes_swap_kb()))
        };
        let (used_kb, others_kb) = look()?;
        let mut after_reclaim_kb = None;
        let mut unexplained = used_kb - others_kb;
        if unexplained > SWAP_LEAK_LIMIT_KB {
            let ask = (used_kb * 1024 * 4).to_string();
            let _ = std::fs::write(self.root().join("memory.reclaim"), ask);
            std::thread::sleep(Duration::from_secs(1));
            let (used2, others2) = look()?;
            after_reclaim_kb = Some(used2);
            unexplained = used2 - others2;
        }
        // Swap charged to the checkers must be swap in use.
        let charged_ok = checkers_kb <= used_quiet_kb + SWAP_LEAK_LIMIT_KB;
        let ok = unexplained <= SWAP_LEAK_LIMIT_KB && charged_ok;
        let kb_mb = |kb: i64| kb as f64 / 1024.0;
        self.figures
            .insert("swap_in_use_after_mb".into(), json!(round2(kb_mb(used_kb))));
        let detail = format!(
            "{:.1} MiB of swap in use after every checker and stress-ng exited ({:.1} MiB held by live processes{}), limit {} MiB; \
             {:.0} MiB in use with the checkers idle, {:.0} MiB of it charged to them",
            kb_mb(used_kb),
            kb_mb(others_kb),
            after_reclaim_kb.map_or(String::new(), |kb| format!(", {:.1} MiB after reclaim", kb_mb(kb))),
            SWAP_LEAK_LIMIT_KB / 1024,
            kb_mb(used_quiet_kb),
            kb_mb(checkers_kb)
        );
        self.checks.push(Check::verdict(
            "swap_leak",
            ok,
            detail,
            json!({"swap_in_use_after_mb": round2(kb_mb(used_kb)), "held_by_processes_mb": round2(kb_mb(others_kb)),
                   "after_reclaim_mb": after_reclaim_kb.map(|kb| round2(kb_mb(kb))),
                   "in_use_with_checkers_idle_mb": round2(kb_mb(used_quiet_kb)),
                   "charged_to_checkers_mb": round2(kb_mb(checkers_kb)),
                   "limit_mb": SWAP_LEAK_LIMIT_KB / 1024}),
        ));
        Ok(())
    }
}

/// VmSwap of every process, in kB.
fn processes_swap_kb() -> i64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter_map(|s| parse_status_kb(&s, "VmSwap:"))
        .sum()
}

fn describe(exit: Exit) -> String {
    match exit {
        Exit::Code(c) => format!("exit status {c}"),
        Exit::Signal(s) => format!("signal {s}"),
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
