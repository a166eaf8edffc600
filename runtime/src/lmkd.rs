//! Android's low memory killer daemon (lmkd), PSI path, as a thread of the
//! `run` process. Modelled on Android 14's system/memory/lmkd/lmkd.cpp
//! (`mp_event_psi`, `find_and_kill_process`, the main loop's polling), the
//! lmkd that ships with android14-6.1 kernels.
//!
//! Modelled:
//! - Two PSI triggers on /proc/pressure/memory: medium = "some
//!   `medium_some_ms`" and critical = "full `critical_full_ms`" per
//!   `window_ms`, waited on with poll(POLLPRI). The low level is unused, as
//!   in lmkd's "new strategy".
//! - Polling: an event starts polling for `window_ms`; polling is extended
//!   by events, kills and direct reclaim; its period is `poll_ms` while swap
//!   is low or after a kill, else `poll_long_ms`.
//! - Each wakeup (decision.rs): reclaim state from pgscan_direct/kswapd
//!   deltas, early exit when neither reclaiming nor refaulting; thrashing =
//!   workingset_refault_file growth × 100 / file LRU pages per 1 s window,
//!   earlier windows decaying by half per window; swap_is_low = free swap
//!   (capped by free + inactive file × `swap_compression_ratio`) below
//!   `swap_free_low_percentage` of SwapTotal; the lowest breached watermark
//!   (sum over populated zones of min/low/high + max protection, re-read
//!   from /proc/zoneinfo every 60 s); PSI full avg10 against
//!   `stall_limit_critical`.
//! - Kill reasons in lmkd's order, with its minimum oom_score_adj:
//!   pressure_after_kill (0), not_responding (critical event, 0),
//!   low_swap_and_thrashing and low_mem_and_swap (perceptible + 1 unless
//!   below the min watermark or thrashing ≥ `thrashing_limit_critical`),
//!   low_mem_and_swap_util (0), low_mem_and_thrashing and
//!   direct_recl_and_thrashing (perceptible + 1 unless thrashing
//!   critically; both cut the thrashing limit by `thrashing_limit_decay` %
//!   after a kill until the window resets), low_filecache_after_thrashing
//!   (perceptible + 1); a critical PSI stall lowers the minimum to 0.
//! - Victims (victim.rs): from adj 1000 down to the minimum, the heaviest
//!   (`kill_heaviest_task`, and always at or below the perceptible adj) or
//!   the process that has held its adj longest. With Ice+'s
//!   `spare_swapped`, the candidates whose app's cgroup is frozen and
//!   holds swap (cgroup.freeze 1, memory.swap.current > 0, read at kill
//!   time) come after all others; the kill event says how many it passed
//!   over (`spared`).
//! - With SWAM's EOOM (eoom.rs), the candidates are ordered by
//!   oom_score_adj plus a launch_adj from their app's relaunch cost first
//!   (Ice+'s partition, if on too, applies to that order); the kill event
//!   says the victim's `launch_adj` and `relaunch_ms`.
//! - With SWAM's OOM cleaner (cleaner.rs), a kill for a reason that
//!   involves swap is preceded by swap-clean: the candidates, in the order
//!   above, have the swapped-out pages of their shared objects' data
//!   dropped until swap is no longer low by the reason's threshold, and
//!   then nobody is killed (one `swam_clean` event per process cleaned).
//! - Killing: SIGKILL through a pidfd, the victim's memory released by a
//!   reaper thread with process_mrelease, and no further kill until the
//!   victim's pidfd reports its exit or `kill_timeout_ms` passes (polling
//!   paused meanwhile, resumed at once afterwards).
//! - lmkd runs SCHED_FIFO (a warning if the kernel refuses) and, as part of
//!   the `run` process, mlockall'd.
//!
//! Each wakeup that reads the system's state is recorded for the host in
//! `lmkd.csv` (wakeup_log.rs), written once lmkd stops.
//!
//! Not modelled: the vmpressure (non-PSI) and in-kernel-driver paths,
//! minfree levels, per-app memcg soft limits, the watchdog, statsd and
//! logd reporting, the pid-reuse check (pids are not reused within a
//! run), lmkd's socket (the activity manager registers processes in
//! `ProcRegistry`), and newer lmkd's memevents/BPF reclaim tracking and
//! `low_mem`/`direct_recl_stuck` reasons. lmkd's first thrashing window
//! starts at boot and its decay then shifts by the uptime in seconds
//! (undefined in C past 63); here the first window starts at lmkd's first
//! wakeup with no carried-over growth, which is what the decay intends.

pub mod cleaner;
pub mod decision;
pub mod eoom;
pub mod proc_registry;
pub mod victim;
pub mod wakeup_log;

use crate::control::{spawn_thread, Control};
use crate::events::{Event, EventLog};
use crate::lmkd::proc_registry::ProcRegistry;
use crate::spec::{ms, LmkdConfig};
use crate::sys;
use crate::sys::proc_files::{self, Watermarks};
use crate::sys::psi::{self, Stall, Trigger};
use anyhow::{bail, Context, Result};
use cleaner::Cleaner;
use decision::{Decision, KillPlan, Level, Reclaim, Snapshot, VmCounters, PAGE_KB};
use eoom::{eoom_order, Eoom, Ranked, Score};
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use victim::{kill_order, spare_swapped, Candidate};
use wakeup_log::WakeupLog;

/// How often an idle lmkd wakes to notice that the run is over.
const IDLE_WAKEUP: Duration = Duration::from_millis(100);
/// lmkd re-reads zone watermarks this often.
const WATERMARK_REFRESH: Duration = Duration::from_secs(60);

/// What a handler asks of the polling loop (lmkd's `polling_update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Update {
    Keep,
    Start,
    Pause,
}

struct Polling {
    handler: Option<Level>,
    paused: Option<Level>,
    start: Instant,
    last: Instant,
    interval: Duration,
    /// Poll at once: polling was just resumed after a kill.
    resume: bool,
}

pub struct Lmkd {
    cfg: LmkdConfig,
    triggers: Vec<(Level, Trigger)>,
    decision: Decision,
    registry: Arc<ProcRegistry>,
    events: Arc<EventLog>,
    control: Arc<Control>,
    epoch: Instant,
    watermarks: Option<(Watermarks, Instant)>,
    last_kill: Instant,
    /// The pidfd of the last victim until it exits or kill_timeout_ms passes.
    waiting: Option<OwnedFd>,
    releaser: Sender<OwnedFd>,
    polling: Polling,
    wakeups: WakeupLog,
    /// Ice+: the directory of the apps' cgroups, whose swap spares them.
    spare_swapped: Option<PathBuf>,
    /// SWAM's EOOM: candidates ranked by their app's relaunch cost too.
    eoom: Option<Eoom>,
    /// SWAM's OOM cleaner: swap-clean before a kill for low swap.
    cleaner: Option<Cleaner>,
}

/// A candidate of a kill, in lmkd's order, with what its event reports.
struct Planned {
    pid: i32,
    app: String,
    adj: i32,
    /// Ice+: the candidates passed over for it.
    spared: Option<u32>,
    /// EOOM: its launch_adj and the cost it came from.
    score: Option<Score>,
}

/// A process lmkd tries to kill, with what its event reports.
struct Victim<'a> {
    pid: i32,
    app: &'a str,
    adj: i32,
    /// Ice+: the candidates passed over for it.
    spared: Option<u32>,
    /// EOOM: its launch_adj and the cost it came from.
    score: Option<Score>,
}

impl Lmkd {
    /// Install the PSI triggers and start the reaper thread; each wakeup
    /// is recorded in `wakeups` (wakeup_log.rs). With `spare_swapped`
    /// (the apps' cgroups), candidates whose app holds swap go last; with
    /// `eoom`, the apps cheapest to relaunch go first; with `cleaner`, a
    /// kill for low swap swap-cleans the candidates first.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: &LmkdConfig,
        registry: Arc<ProcRegistry>,
        events: Arc<EventLog>,
        control: Arc<Control>,
        wakeups: WakeupLog,
        spare_swapped: Option<PathBuf>,
        eoom: Option<Eoom>,
        cleaner: Option<Cleaner>,
    ) -> Result<Lmkd> {
        let window = ms(cfg.window_ms);
        let triggers = vec![
            (
                Level::Medium,
                Trigger::new(Stall::Some, ms(cfg.medium_some_ms), window)?,
            ),
            (
                Level::Critical,
                Trigger::new(Stall::Full, ms(cfg.critical_full_ms), window)?,
            ),
        ];
        let (releaser, victims) = channel::<OwnedFd>();
        spawn_thread(&control, "lmkd-reaper", move || {
            for pidfd in victims {
                match sys::process_mrelease(pidfd.as_fd()) {
                    Err(e) if e.raw_os_error() != Some(libc::ESRCH) => {
                        eprintln!("pmr-guest: lmkd: process_mrelease failed: {e}")
                    }
                    _ => {}
                }
            }
        })?;
        let now = Instant::now();
        Ok(Lmkd {
            cfg: cfg.clone(),
            triggers,
            decision: Decision::new(cfg),
            registry,
            events,
            control,
            epoch: now,
            watermarks: None,
            last_kill: now,
            waiting: None,
            releaser,
            polling: Polling {
                handler: None,
                paused: None,
                start: now,
                last: now,
                interval: ms(cfg.poll_long_ms),
                resume: false,
            },
            wakeups,
            spare_swapped,
            eoom,
            cleaner,
        })
    }

    pub fn spawn(mut self) -> Result<JoinHandle<()>> {
        Ok(spawn_thread(&self.control.clone(), "lmkd", move || {
            if let Err(e) = sys::set_fifo(1) {
                eprintln!("pmr-guest: warning: lmkd stays SCHED_OTHER: SCHED_FIFO refused: {e}");
            }
            if let Err(e) = self.main_loop() {
                self.control.fail(format!("lmkd: {e:#}"));
            }
            if let Err(e) = self.wakeups.finish() {
                self.control.fail(format!("lmkd: {e:#}"));
            }
        })?)
    }

    fn main_loop(&mut self) -> Result<()> {
        let kill_timeout = ms(self.cfg.kill_timeout_ms);
        while !self.control.stopped() {
            let polling = self.polling.handler;
            let timeout = if polling.is_some() {
                let since = self.polling.last.elapsed();
                if self.polling.resume {
                    Duration::ZERO
                } else if since < self.polling.interval {
                    self.polling.interval - since
                } else {
                    self.polling.interval
                }
            } else if self.waiting.is_some() && !kill_timeout.is_zero() {
                kill_timeout.saturating_sub(self.last_kill.elapsed())
            } else {
                IDLE_WAKEUP
            };

            let mut fds: Vec<libc::pollfd> = self
                .triggers
                .iter()
                .map(|(_, t)| sys::pollfd(t.as_fd(), libc::POLLPRI))
                .collect();
            if let Some(pidfd) = &self.waiting {
                fds.push(sys::pollfd(pidfd.as_fd(), libc::POLLIN));
            }
            let ready = if timeout.is_zero() {
                0
            } else {
                sys::poll(&mut fds, Some(timeout))?
            };

            if let Some(level) = polling {
                if self.polling.resume || self.polling.last.elapsed() >= self.polling.interval {
                    self.call(level, false)?;
                }
            } else if ready == 0 && self.waiting.is_some() && !kill_timeout.is_zero() {
                // The victim did not exit within kill_timeout_ms.
                self.waiting = None;
                self.resume_polling();
            }

            if fds.get(2).is_some_and(|p| p.revents & libc::POLLIN != 0) {
                self.waiting = None;
                self.resume_polling();
            }
            for (i, level) in [Level::Medium, Level::Critical].into_iter().enumerate() {
                let revents = fds[i].revents;
                if revents & libc::POLLERR != 0 {
                    bail!("the {level:?} PSI trigger failed");
                }
                if revents & libc::POLLPRI != 0 {
                    self.call(level, true)?;
                }
            }
        }
        Ok(())
    }

    fn resume_polling(&mut self) {
        self.polling.start = Instant::now();
        self.polling.handler = self.polling.paused.take();
        self.polling.interval = ms(self.cfg.poll_ms);
        self.polling.resume = self.polling.handler.is_some();
    }

    /// Run the handler for `level` and apply its polling update (lmkd's
    /// `call_handler`).
    fn call(&mut self, level: Level, event: bool) -> Result<()> {
        self.polling.resume = false;
        let (update, interval) = self.handle(level, event)?;
        let now = Instant::now();
        if let Some(interval) = interval {
            self.polling.interval = interval;
        }
        if self.polling.handler == Some(level) {
            self.polling.last = now;
        }
        match update {
            Update::Start => {
                self.polling.start = now;
                self.polling.handler = Some(level);
            }
            Update::Pause => {
                self.polling.paused = Some(level);
                self.polling.handler = None;
            }
            Update::Keep => {
                if self.polling.handler.is_some()
                    && now - self.polling.start > ms(self.cfg.window_ms)
                {
                    self.polling.handler = None;
                }
            }
        }
        Ok(())
    }

    /// One wakeup of `mp_event_psi`.
    fn handle(&mut self, level: Level, event: bool) -> Result<(Update, Option<Duration>)> {
        let kill_timeout = ms(self.cfg.kill_timeout_ms);
        if self.waiting.is_some()
            && (kill_timeout.is_zero() || self.last_kill.elapsed() < kill_timeout)
        {
            return Ok((Update::Pause, None)); // still killing
        }
        self.waiting = None;

        let snapshot = self.snapshot()?;
        let now_ms = self.epoch.elapsed().as_millis() as u64;
        let evaluation = self.decision.evaluate(level, event, now_ms, &snapshot);
        let mut killed_kb = None;
        if let Some(plan) = &evaluation.kill {
            let pages = self.find_and_kill(level, plan)?;
            if pages > 0 {
                self.decision.killed(plan);
            }
            killed_kb = Some(pages * PAGE_KB);
        }
        self.wakeups.record(
            self.events.elapsed_ms(),
            level,
            event,
            &evaluation,
            &snapshot,
            killed_kb,
        );
        if self.waiting.is_some() {
            return Ok((Update::Pause, None));
        }
        let killing = self.decision.killing();
        let update = if event || killing || evaluation.reclaim == Reclaim::Direct {
            Update::Start
        } else {
            Update::Keep
        };
        let interval = if evaluation.swap_is_low || killing {
            self.cfg.poll_ms
        } else {
            self.cfg.poll_long_ms
        };
        Ok((update, Some(ms(interval))))
    }

    fn snapshot(&mut self) -> Result<Snapshot> {
        let mem = proc_files::parse_meminfo(&std::fs::read_to_string("/proc/meminfo")?)?;
        let vm = VmCounters::from_vmstat(&proc_files::parse_key_values(&std::fs::read_to_string(
            "/proc/vmstat",
        )?)?);
        let watermarks = match self.watermarks {
            Some((w, at)) if at.elapsed() <= WATERMARK_REFRESH => w,
            _ => {
                let zoneinfo = std::fs::read_to_string("/proc/zoneinfo")?;
                let w = proc_files::parse_zoneinfo_watermarks(&zoneinfo)
                    .context("bad /proc/zoneinfo")?;
                self.watermarks = Some((w, Instant::now()));
                w
            }
        };
        let psi_full_avg10 = psi::read().ok().map(|p| p.full.avg10);
        Ok(Snapshot {
            mem,
            vm,
            watermarks,
            psi_full_avg10,
        })
    }

    /// `find_and_kill_process`: kill the first victim that can be killed;
    /// returns the pages it had resident (0 if nothing was killed, or if
    /// SWAM's cleaner relieved swap instead).
    fn find_and_kill(&mut self, level: Level, plan: &KillPlan) -> Result<i64> {
        let order = self.kill_candidates(plan)?;
        if self.swap_clean(plan, &order)? {
            return Ok(0);
        }
        for p in &order {
            let victim = Victim {
                pid: p.pid,
                app: &p.app,
                adj: p.adj,
                spared: p.spared,
                score: p.score,
            };
            if let Some(rss_kb) = self.kill_one(&victim, level, plan)? {
                return Ok(rss_kb / PAGE_KB);
            }
        }
        Ok(0)
    }

    /// The registered processes `plan` allows killing, in the order lmkd
    /// tries them: kill_order's, reordered by EOOM, then by Ice+.
    fn kill_candidates(&self, plan: &KillPlan) -> Result<Vec<Planned>> {
        let registered = self.registry.snapshot();
        let candidates: Vec<Candidate> = registered
            .iter()
            .filter_map(|(pid, e)| {
                let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
                let rss_pages = proc_files::parse_statm_rss(&statm)?;
                Some(Candidate {
                    pid: *pid,
                    adj: e.adj,
                    seq: e.seq,
                    rss_pages,
                })
            })
            .collect();
        let entry = |pid: i32| {
            &registered
                .iter()
                .find(|(p, _)| *p == pid)
                .expect("candidate is registered")
                .1
        };
        let order = kill_order(
            &candidates,
            plan.min_adj,
            self.cfg.kill_heaviest_task,
            self.cfg.perceptible_adj,
        );
        let mut scores: HashMap<i32, Score> = HashMap::new();
        let order: Vec<i32> = match &self.eoom {
            None => order,
            Some(eoom) => {
                let ranked: Vec<Ranked> = order
                    .iter()
                    .map(|&pid| Ranked {
                        pid,
                        adj: entry(pid).adj,
                        relaunch_ms: eoom.costs.mean_ms(&entry(pid).app),
                    })
                    .collect();
                eoom_order(&ranked, eoom.launch_adj_max)
                    .into_iter()
                    .map(|(pid, score)| {
                        scores.insert(pid, score);
                        pid
                    })
                    .collect()
            }
        };
        let order: Vec<(i32, Option<u32>)> = match &self.spare_swapped {
            None => order.into_iter().map(|pid| (pid, None)).collect(),
            Some(apps_cgroup) => {
                let mut held: HashMap<&str, bool> = HashMap::new();
                for &pid in &order {
                    let app = entry(pid).app.as_str();
                    if !held.contains_key(app) {
                        held.insert(app, unkillable(apps_cgroup, app)?);
                    }
                }
                spare_swapped(&order, |pid| held[entry(pid).app.as_str()])
                    .into_iter()
                    .map(|(pid, spared)| (pid, Some(spared)))
                    .collect()
            }
        };
        Ok(order
            .into_iter()
            .map(|(pid, spared)| {
                let e = entry(pid);
                Planned {
                    pid,
                    app: e.app.clone(),
                    adj: e.adj,
                    spared,
                    score: scores.get(&pid).copied(),
                }
            })
            .collect())
    }

    /// SWAM's OOM cleaner, before a kill for a reason that involves swap:
    /// swap-clean the candidates in `order` until swap is relieved
    /// (cleaner.rs), logging each process cleaned; whether it was, and
    /// the kill is then skipped. False at once without the cleaner or for
    /// another reason.
    fn swap_clean(&self, plan: &KillPlan, order: &[Planned]) -> Result<bool> {
        let Some(cleaner) = &self.cleaner else {
            return Ok(false);
        };
        if !cleaner::cleans_for(plan.reason) {
            return Ok(false);
        }
        cleaner::clean_in_order(order, |p| {
            let Some(c) = cleaner.clean(p.pid, &p.app, plan.reason, &self.cfg)? else {
                return Ok(None);
            };
            self.events.log(&Event::SwamClean {
                app: &p.app,
                pid: p.pid,
                pages: c.pages,
                swap_free_kb_after: c.swap_free_kb_after,
                ms: c.ms,
                relieved: c.relieved,
            })?;
            Ok(Some(c.relieved))
        })
    }

    /// `kill_one_process`: `None` if the process is already gone.
    fn kill_one(&mut self, victim: &Victim, level: Level, plan: &KillPlan) -> Result<Option<i64>> {
        let pid = victim.pid;
        self.registry.remove(pid);
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return Ok(None);
        };
        // Zombies have no VmRSS.
        let Some(rss_kb) = proc_files::parse_status_kb(&status, "VmRSS:") else {
            return Ok(None);
        };
        let Ok(pidfd) = sys::pidfd_open(pid) else {
            return Ok(None);
        };
        if let Err(e) = sys::pidfd_kill(pidfd.as_fd()) {
            eprintln!("pmr-guest: lmkd: kill({pid}) failed: {e}");
            return Ok(None);
        }
        self.last_kill = Instant::now();
        self.releaser
            .send(pidfd.try_clone()?)
            .context("lmkd reaper thread is gone")?;
        self.waiting = Some(pidfd);
        self.events.log(&Event::Kill {
            app: victim.app,
            pid,
            adj: victim.adj,
            rss_kb,
            level,
            reason: plan.reason,
            min_adj: plan.min_adj,
            thrashing: plan.thrashing,
            spared: victim.spared,
            eoom: victim.score,
        })?;
        Ok(Some(rss_kb))
    }
}

/// Whether `app`'s cgroup holds swap (memory.swap.current > 0); a cgroup
/// gone holds none.
/// Ice+'s "unkillable" app (§4.3.2): frozen, with pages swapped out. An
/// app that is not frozen is never spared, so that the app in front (Ice
/// thaws it at its launch) or one Ice never froze keeps its place in
/// lmkd's order however much of it was swapped.
fn unkillable(apps_cgroup: &Path, app: &str) -> Result<bool> {
    let frozen = crate::workload::ice::read_frozen(&apps_cgroup.join(app))?;
    Ok(frozen == Some(true) && holds_swap(apps_cgroup, app)?)
}

fn holds_swap(apps_cgroup: &Path, app: &str) -> Result<bool> {
    let cgroup = apps_cgroup.join(app);
    let path = cgroup.join("memory.swap.current");
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text
            .trim()
            .parse::<u64>()
            .with_context(|| format!("bad {}: {text:?}", path.display()))?
            > 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !cgroup.is_dir() => Ok(false),
        Err(e) => Err(e).with_context(|| {
            format!(
                "lmkd (spare_swapped): cannot read {} (a kernel without swap accounting?)",
                path.display()
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_held_is_read_from_the_app_cgroup() {
        let dir = std::env::temp_dir().join(format!("pmr-lmkd-swap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (app, bytes) in [("chrome", "0\n"), ("whatsapp", "8192\n")] {
            std::fs::create_dir_all(dir.join(app)).unwrap();
            std::fs::write(dir.join(app).join("memory.swap.current"), bytes).unwrap();
        }
        assert!(!holds_swap(&dir, "chrome").unwrap());
        assert!(holds_swap(&dir, "whatsapp").unwrap());
        assert!(!holds_swap(&dir, "gone").unwrap(), "no cgroup");
        std::fs::create_dir_all(dir.join("old")).unwrap();
        let err = format!("{:#}", holds_swap(&dir, "old").unwrap_err());
        assert!(err.contains("swap accounting"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn only_frozen_apps_holding_swap_are_unkillable() {
        let dir = std::env::temp_dir().join(format!("pmr-lmkd-frozen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (app, frozen, swap) in [
            ("front", "0\n", "8192\n"),
            ("frozen", "1\n", "8192\n"),
            ("frozen_unswapped", "1\n", "0\n"),
        ] {
            std::fs::create_dir_all(dir.join(app)).unwrap();
            std::fs::write(dir.join(app).join("cgroup.freeze"), frozen).unwrap();
            std::fs::write(dir.join(app).join("memory.swap.current"), swap).unwrap();
        }
        assert!(!unkillable(&dir, "front").unwrap(), "not frozen: killable");
        assert!(unkillable(&dir, "frozen").unwrap());
        assert!(!unkillable(&dir, "frozen_unswapped").unwrap());
        assert!(!unkillable(&dir, "gone").unwrap(), "no cgroup");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
