//! The final checks of `pmr-guest reliability` (reliability.rs runs the
//! load phase before them): the swap volume reached (with `swap_full`: the
//! sweeps after the swap ran full) and whether it ran full, stress-ng's verdict,
//! a last verification of every checker page, the toggled knob written back
//! and the victim lists drained, each checker cgroup's accounting while the
//! checkers sit idle, then the exits and cgroup removals, the memcg kill's
//! outcome, the dying memcgs and the swap left in use.

use crate::pattern::PAGE_SIZE;
use crate::reliability::checker_handle::Checker;
use crate::reliability::knob_effect;
use crate::reliability::knob_toggler::ToggleRecord;
use crate::reliability::memcg_lifetime::{self, VictimWait};
use crate::reliability::report::Check;
use crate::reliability::stress_ng;
use crate::reliability::swap_watch::{self, SwapLevel};
use crate::reliability::{
    describe, read_vmstat, round2, LoadEnd, Session, VmCounters, EMPTY_WAIT, GROUP, KILL_FROM, MIB,
    MIN_SWEEPS, SETTLE, SWAP_FULL_WAIT, TICK, VICTIM_WAIT,
};
use crate::setup;
use crate::sys::memcg_stat::{self, Accounting};
use crate::sys::proc_files::parse_status_kb;
use crate::sys::Exit;
use anyhow::Result;
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const FINAL_VERIFY_WAIT: Duration = Duration::from_secs(1200);
const EXIT_WAIT: Duration = Duration::from_secs(120);
/// Swap still in use after everything exited, beyond what live processes hold.
const SWAP_LEAK_LIMIT_KB: i64 = 4 * 1024;

impl Session<'_> {
    pub(crate) fn swap_volume_check(&mut self, end: LoadEnd, vm: VmCounters) {
        let page_mb = PAGE_SIZE as f64 / MIB;
        let out_mb = (vm.pswpout - self.vm_start.pswpout) as f64 * page_mb;
        let in_mb = (vm.pswpin - self.vm_start.pswpin) as f64 * page_mb;
        let ram_mb = self.m.mem_total_kb as f64 / 1024.0;
        let ratio = out_mb / ram_mb;
        let load_s = self.start.elapsed().as_secs_f64();
        let slowest = self
            .checkers
            .iter()
            .filter(|c| c.index < self.spec.checker.processes)
            .map(|c| c.sweep_progress())
            .fold(f64::INFINITY, f64::min);
        let why = match end {
            LoadEnd::Reached => "target reached".to_string(),
            LoadEnd::Deadline => "the deadline came first".to_string(),
            LoadEnd::CheckerFailed => "stopped by a checker failure".to_string(),
            LoadEnd::NeverFull => format!(
                "the swap had not run full after {} s",
                SWAP_FULL_WAIT.as_secs()
            ),
            LoadEnd::AllKilled => "the OOM killer took every first checker".to_string(),
        };
        self.figures
            .insert("pswpout_mb".into(), json!(out_mb.round()));
        self.figures
            .insert("pswpout_ratio_to_ram".into(), json!(round2(ratio)));
        self.figures
            .insert("load_phase_s".into(), json!(load_s.round()));
        if self.spec.swap_full {
            self.swap_volume_full_check(end, &why, out_mb, in_mb, ram_mb, load_s);
            return;
        }
        self.checks.push(Check::verdict(
            "swap_volume",
            end == LoadEnd::Reached,
            format!(
                "pswpout {out_mb:.0} MiB = {ratio:.2} x RAM (target {}) and pswpin {in_mb:.0} MiB in {load_s:.0} s, \
                 slowest first checker {slowest:.2} sweeps (target {MIN_SWEEPS}): {why}",
                self.spec.swap_factor
            ),
            json!({"pswpout_mb": out_mb.round(), "pswpin_mb": in_mb.round(),
                   "ratio_to_ram": round2(ratio), "target_ratio": self.spec.swap_factor,
                   "mem_total_mb": ram_mb.round(), "load_phase_s": load_s.round(), "ended": why,
                   "slowest_sweeps": round2(slowest), "min_sweeps": MIN_SWEEPS}),
        ));
    }

    /// swap_volume with `swap_full`: pswpout cannot reach a multiple of RAM
    /// at any set pace while the swap is full, so the goal is the load
    /// itself: every surviving first checker swept its memory MIN_SWEEPS
    /// times after the swap first ran full, within the deadline.
    fn swap_volume_full_check(
        &mut self,
        end: LoadEnd,
        why: &str,
        out_mb: f64,
        in_mb: f64,
        ram_mb: f64,
        load_s: f64,
    ) {
        let swap_mb = self.m.swap_total_kb as f64 / 1024.0;
        let since = match self.full_base {
            Some(_) => self.full_progress().map(|p| p * f64::from(MIN_SWEEPS)),
            None => None,
        };
        let sweeps = match (&self.full_base, since) {
            (None, _) => "the swap never ran full".to_string(),
            (Some(_), Some(s)) => format!(
                "slowest surviving first checker {s:.2} sweeps after the swap ran full (target {MIN_SWEEPS})"
            ),
            (Some(_), None) => "no first checker survived".to_string(),
        };
        self.checks.push(Check::verdict(
            "swap_volume",
            end == LoadEnd::Reached,
            format!(
                "{sweeps} in {load_s:.0} s: {why}; pswpout {out_mb:.0} MiB = {:.2} x RAM, {:.2} x the {swap_mb:.0} MiB swap, \
                 pswpin {in_mb:.0} MiB",
                out_mb / ram_mb,
                out_mb / swap_mb.max(1.0)
            ),
            json!({"mode": "swap_full", "pswpout_mb": out_mb.round(), "pswpin_mb": in_mb.round(),
                   "ratio_to_ram": round2(out_mb / ram_mb), "ratio_to_swap": round2(out_mb / swap_mb.max(1.0)),
                   "mem_total_mb": ram_mb.round(), "swap_total_mb": swap_mb.round(),
                   "load_phase_s": load_s.round(), "ended": why,
                   "slowest_sweeps_since_full": since.map(round2),
                   "min_sweeps": MIN_SWEEPS, "deadline_s": self.spec.deadline_s,
                   "swap_full_wait_s": SWAP_FULL_WAIT.as_secs()}),
        ));
    }

    /// How full the swap got during the load phase: a check with
    /// `swap_full` (passes only if it ran full), figures in every run.
    pub(crate) fn swap_full_check(&mut self, level: &SwapLevel, vm: VmCounters) {
        let oom_kills = vm.oom_kill - self.vm_start.oom_kill;
        let min_mb = level.min_free_kb.map(|kb| round2(kb as f64 / 1024.0));
        self.figures
            .insert("swap_free_min_mb".into(), json!(min_mb));
        self.figures.insert(
            "swap_full_at_s".into(),
            json!(level.first_full_s.map(|t| t.round())),
        );
        self.figures.insert("oom_kills".into(), json!(oom_kills));
        let peaks: Map<String, Value> = level
            .areas
            .iter()
            .map(|a| {
                (
                    a.name.clone(),
                    json!(round2(a.peak_used_kb as f64 / 1024.0)),
                )
            })
            .collect();
        self.figures
            .insert("swap_peak_mb".into(), Value::Object(peaks));
        if !self.spec.swap_full {
            return;
        }
        let (ok, detail) = swap_watch::verdict(level, oom_kills);
        let mut figures = serde_json::to_value(level).unwrap_or(Value::Null);
        figures["oom_kills"] = json!(oom_kills);
        figures["full_percent"] = json!(swap_watch::FULL_PERCENT);
        self.checks
            .push(Check::verdict("swap_full", ok, detail, figures));
    }

    /// With a zram tier above the swap disk: both held pages during the
    /// load phase (no check with one tier).
    pub(crate) fn swap_tiers_check(&mut self, level: &SwapLevel) {
        if !(self.spec.swap.disk && self.spec.swap.zram_mb > 0.0) {
            return;
        }
        let (ok, detail) = swap_watch::tiers_verdict(level);
        let figures = json!({"areas": level.areas, "min_percent": swap_watch::TIER_MIN_PERCENT});
        self.checks
            .push(Check::verdict("swap_tiers", ok, detail, figures));
    }

    pub(crate) fn stress_check(&mut self, v: stress_ng::Verdict, bytes: u64) {
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
    pub(crate) fn final_verification(&mut self) -> Result<()> {
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

    pub(crate) fn knob_checks(&mut self, toggles: Option<ToggleRecord>) -> Result<()> {
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
            .map_err(|e| format!("cannot write {:?} back: {e}", t.first()))
            .and_then(|()| match knob_effect::check(&t.path, t.first()) {
                Some(what) => Err(format!("wrote {:?} back, but {what}", t.first())),
                None => Ok(()),
            });
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

    /// After the knob is back at its first value, with PMR off: no page
    /// left on any victim list (waiting up to VICTIM_WAIT for PMR to drain
    /// them). With PMR on (a toggled knob other than PMR's own, e.g.
    /// Acclaim's mark under `acclaim+pmr`), the lists are meant to stay.
    pub(crate) fn victims_check(&mut self) -> Result<()> {
        if let Some(mode) = pmr_mode_on() {
            self.figures.insert("nr_victim_after".into(), Value::Null);
            self.checks.push(Check::skipped(
                "victims_drained",
                format!(
                    "PMR is on (pmr/enabled {mode}) after the toggling: its victims stay listed"
                ),
            ));
            return Ok(());
        }
        let has_list = read_vmstat()?.nr_victim.is_some()
            || self.checkers.iter().filter(|c| c.exit.is_none()).any(|c| {
                memcg_lifetime::memory_stat(&c.cgroup)
                    .is_ok_and(|s| memcg_stat::victim(&s).is_some())
            });
        if !has_list {
            self.figures.insert("nr_victim_after".into(), Value::Null);
            self.checks.push(Check::skipped(
                "victims_drained",
                "the kernel has no victim lists (no nr_victim* in /proc/vmstat, no victim* in memory.stat)",
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
    pub(crate) fn accounting_check(&mut self) -> Result<(i64, i64)> {
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
                "{} cgroups: LRU lists - (anon + file) within [-tolerance, swapcached + tolerance] (largest {:+.1} MiB, allowed up to {:.1} MiB + {:.1} MiB)",
                figures.len(),
                w.difference as f64 / MIB,
                w.swapcached as f64 / MIB,
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
    pub(crate) fn release_all(&mut self) -> Result<()> {
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

    /// No mismatch and no checker lost but to the OOM killer (when the
    /// swap runs full), and at least one checker that verified every page
    /// at the end (integrity_verdict).
    pub(crate) fn data_integrity_check(&mut self) {
        let mut all: Vec<&Checker> = self.retired.iter().chain(&self.checkers).collect();
        all.sort_by_key(|c| c.index);
        let page_checks: u64 = all.iter().map(|c| c.page_checks()).sum();
        let sweeps: Map<String, Value> = all
            .iter()
            .map(|c| (c.index.to_string(), json!(c.sweeps)))
            .collect();
        let total_mb: f64 = self.checkers.iter().map(|c| c.bytes() as f64 / MIB).sum();
        let ends: Vec<CheckerEnd> = all
            .iter()
            .map(|c| CheckerEnd {
                index: c.index,
                sweeps: c.sweeps,
                mb: c.bytes() as f64 / MIB,
                verified: c.verified.is_some(),
                oom_killed: self.oom_killed.iter().any(|(i, _)| *i == c.index),
            })
            .collect();
        let oom_killed: Vec<&str> = self.oom_killed.iter().map(|(_, w)| w.as_str()).collect();
        let (ok, detail) =
            integrity_verdict(&self.problems, &ends, &oom_killed, page_checks, total_mb);
        self.checks.push(Check::verdict(
            "data_integrity",
            ok,
            detail,
            json!({"processes": all.len(), "checker_mb": total_mb.round(), "sweeps": sweeps,
                   "page_verifications": page_checks, "problems": self.problems,
                   "survivors": ends.iter().filter(|e| e.verified).count(),
                   "oom_killed": oom_killed}),
        ));
    }

    pub(crate) fn kill_checks(&mut self) -> Result<()> {
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
                "the kernel has no victim lists (no victim* in memory.stat)",
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

    pub(crate) fn dying_check(&mut self) -> Result<()> {
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
    pub(crate) fn swap_leak_check(
        &mut self,
        (used_quiet_kb, checkers_kb): (i64, i64),
    ) -> Result<()> {
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

/// How a checker ended, for the data_integrity verdict.
#[derive(Debug, Clone)]
pub(crate) struct CheckerEnd {
    pub(crate) index: u32,
    pub(crate) sweeps: u32,
    pub(crate) mb: f64,
    /// It verified every page at the end.
    pub(crate) verified: bool,
    pub(crate) oom_killed: bool,
}

/// data_integrity: passes with no problem (mismatch, a checker dead other
/// than by an allowed OOM kill, a final verification not finished) and at
/// least one checker that verified every page at the end. `oom_killed`
/// describes the checkers the OOM killer took; the rest that did not verify
/// were killed with their cgroup (the memcg kill).
pub(crate) fn integrity_verdict(
    problems: &[String],
    checkers: &[CheckerEnd],
    oom_killed: &[&str],
    page_checks: u64,
    total_mb: f64,
) -> (bool, String) {
    let survivors = checkers.iter().filter(|c| c.verified).count();
    let oom_note = if oom_killed.is_empty() {
        String::new()
    } else {
        format!(
            "; {} killed by the OOM killer (not verified at the end): {}",
            oom_killed.len(),
            oom_killed.join(", ")
        )
    };
    let ok = problems.is_empty() && survivors > 0;
    let detail = match problems.first() {
        Some(first) => format!("{} problems; first: {first}{oom_note}", problems.len()),
        None if survivors == 0 => {
            format!("no checker survived to verify its pages at the end{oom_note}")
        }
        None => format!(
            "{page_checks} page verifications in {} processes ({:.0} MiB each, {total_mb:.0} MiB at once), \
             full sweeps per checker {}, then a last verification by {survivors}: no mismatch{oom_note}",
            checkers.len(),
            checkers.first().map_or(0.0, |c| c.mb),
            checkers
                .iter()
                .map(|c| format!(
                    "{}:{}{}",
                    c.index,
                    c.sweeps,
                    match (c.verified, c.oom_killed) {
                        (true, _) => "",
                        (false, true) => " (OOM-killed)",
                        (false, false) => " (killed)",
                    }
                ))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    };
    (ok, detail)
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

const PMR_ENABLED: &str = "/sys/kernel/mm/pmr/enabled";

/// PMR's mode when it is on (`/sys/kernel/mm/pmr/enabled` not 0); None
/// when it is off or the kernel has no PMR.
fn pmr_mode_on() -> Option<String> {
    let mode = std::fs::read_to_string(PMR_ENABLED).ok()?;
    let mode = mode.trim();
    (mode != "0").then(|| mode.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(index: u32, verified: bool, oom_killed: bool) -> CheckerEnd {
        CheckerEnd {
            index,
            sweeps: 3,
            mb: 487.5,
            verified,
            oom_killed,
        }
    }

    #[test]
    fn oom_killed_checkers_are_reported_but_do_not_fail_data_integrity() {
        let ends = [
            end(0, true, false),
            end(3, false, false),
            end(4, false, true),
        ];
        let (ok, detail) =
            integrity_verdict(&[], &ends, &["checker 4 (pid 88) at 412 s"], 9000, 1462.0);
        assert!(ok, "{detail}");
        assert!(
            detail.contains("0:3 3:3 (killed) 4:3 (OOM-killed)")
                && detail.contains("last verification by 1")
                && detail.contains("1 killed by the OOM killer (not verified at the end): checker 4 (pid 88) at 412 s"),
            "{detail}"
        );
    }

    #[test]
    fn data_integrity_needs_a_survivor_and_no_problem() {
        let all_gone = [end(0, false, true), end(1, false, true)];
        let (ok, detail) = integrity_verdict(&[], &all_gone, &["checker 0", "checker 1"], 10, 1.0);
        assert!(!ok);
        assert!(
            detail.starts_with("no checker survived") && detail.contains("2 killed"),
            "{detail}"
        );
        let problems = ["mismatch: checker 1: page 7 pass 2: stale".to_string()];
        let (ok, detail) = integrity_verdict(&problems, &[end(0, true, false)], &[], 10, 1.0);
        assert!(!ok);
        assert_eq!(
            detail,
            "1 problems; first: mismatch: checker 1: page 7 pass 2: stale"
        );
    }
}
