//! Ice (TOCS'25): background apps that refault are frozen whole, with the
//! cgroup v2 freezer on their cgroup `pmr/apps/<app>`, so that they stop
//! taking the foreground app's memory and CPU; a global heartbeat gives
//! them a thaw window now and then, and an app brought to the front is
//! thawed inside its launch.
//!
//! - Freezable apps (rpf.rs): oom_score_adj above `protect_adj`, not
//!   persistent. With kernel RPF each adj update writes `1` or `0` into
//!   the app's `memory.ice_freezable` (when it changes), and the kernel
//!   freezes a freezable app's cgroup at a refault of one of its tasks.
//!   User RPF (ice-us) writes no mark.
//! - The heartbeat thread polls every `POLL` (kernel RPF: the
//!   cgroup.freeze of each live app, to notice the kernel's freezes) or
//!   every `poll_ms` (user RPF: each freezable app's refaults, freezing
//!   it when they rose), and runs MDT's epochs (mdt.rs), waking at each
//!   period's end. An app frozen by RPF is selected: MDT thaws and freezes
//!   it with the others until it comes to the front or dies.
//! - The activity manager calls `update` with every adj update (marks,
//!   and the thaw of an app that died: a frozen cgroup would freeze the
//!   processes of its next cold launch) and `thaw_for_launch` inside every
//!   measured launch, hot or cold.
//! - `shutdown` clears every mark, stops the heartbeat, thaws every app's
//!   cgroup and logs `ice_end` with the number still frozen. A runtime
//!   that ends without it (a panic) thaws everything when the `Ice` is
//!   dropped.
//!
//! Events (events.jsonl): `ice_freeze` (cause `rpf`: the kernel froze it,
//! noticed by the heartbeat, a launch or a death; `rpf_user`; `mdt`),
//! `ice_thaw` (cause `mdt`, `launch`, `death`, `end`, with how long it was
//! frozen), `ice_epoch` at the start of each epoch, and `ice_end`.

mod daemon;
pub mod mdt;
pub mod rpf;

use crate::control::{spawn_thread, Control};
use crate::events::EventLog;
use crate::spec::{ms, Rpf, Spec};
use anyhow::Result;
use daemon::Daemon;
use serde::Serialize;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use daemon::{read_frozen, FREEZE_FILE, MARK_FILE};

/// How often kernel RPF's freezes are looked for.
pub const POLL: Duration = Duration::from_millis(100);

/// Why Ice froze an app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FreezeCause {
    /// The kernel froze it at a refault (kernel RPF).
    Rpf,
    /// Its refaults rose (user RPF).
    RpfUser,
    /// Frozen again at the end of a thaw window.
    Mdt,
}

/// Why Ice thawed an app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThawCause {
    /// A thaw window of MDT.
    Mdt,
    /// It is being launched.
    Launch,
    /// It died frozen.
    Death,
    /// The end of the run.
    End,
}

/// The activity manager's handle on Ice.
pub struct Ice {
    daemon: Arc<Mutex<Daemon>>,
    /// Stops the heartbeat.
    stop: Arc<Control>,
    heartbeat: Option<JoinHandle<()>>,
    ended: bool,
}

impl Ice {
    /// Start Ice for the apps of `spec` (`spec.scheme.ice`), whose cgroups
    /// are `apps_cgroup/<app>`; /proc is `proc_dir` (a stand-in in tests).
    /// A failure of the heartbeat fails the run through `control`.
    pub fn start(
        spec: &Spec,
        apps_cgroup: &Path,
        proc_dir: &Path,
        events: Arc<EventLog>,
        control: &Arc<Control>,
    ) -> Result<Ice> {
        let ice = spec
            .scheme
            .ice
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the scheme has no ice"))?;
        let daemon = Daemon::new(ice, spec, apps_cgroup, proc_dir, events);
        daemon.check_kernel()?;
        let daemon = Arc::new(Mutex::new(daemon));
        let stop = Arc::new(Control::default());
        let poll = match ice.rpf {
            Rpf::Kernel => POLL,
            Rpf::User => ms(ice.poll_ms),
        };
        let (beating, stopping, failed) = (daemon.clone(), stop.clone(), control.clone());
        let heartbeat = spawn_thread(control, "ice-heartbeat", move || {
            if let Err(e) = heartbeat(&beating, &stopping, poll) {
                failed.fail(format!("ice heartbeat: {e:#}"));
            }
        })?;
        Ok(Ice {
            daemon,
            stop,
            heartbeat: Some(heartbeat),
            ended: false,
        })
    }

    /// The adjs changed: `adjs[app]` is the app's oom_score_adj, None if
    /// it is dead (spec order).
    pub fn update(&self, adjs: &[Option<i32>]) -> Result<()> {
        lock(&self.daemon).update(adjs)
    }

    /// `app` is being launched: thaw it if it is frozen; how long the
    /// thaw took, ms.
    pub fn thaw_for_launch(&self, app: usize) -> Result<Option<f64>> {
        lock(&self.daemon).thaw_for_launch(app)
    }

    /// The end of the run: clear every mark, stop the heartbeat, thaw
    /// every app and log `ice_end`; the number of app cgroups still frozen.
    pub fn shutdown(&mut self) -> Result<usize> {
        self.ended = true;
        let cleared = lock(&self.daemon).clear_marks();
        self.stop_heartbeat();
        let mut daemon = lock(&self.daemon);
        let thawed = daemon.thaw_all_at_end();
        if cleared.is_err() || thawed.is_err() {
            daemon.thaw_all_quietly();
        }
        cleared?;
        let frozen = thawed?;
        daemon.log_end(frozen)?;
        Ok(frozen)
    }

    fn stop_heartbeat(&mut self) {
        self.stop.stop();
        if let Some(h) = self.heartbeat.take() {
            // A heartbeat that failed has failed the run already.
            let _ = h.join();
        }
    }
}

impl Drop for Ice {
    fn drop(&mut self) {
        if !self.ended {
            self.stop_heartbeat();
            lock(&self.daemon).thaw_all_quietly();
        }
    }
}

/// The daemon, even if a panic poisoned its lock: thawing must still work.
fn lock(daemon: &Mutex<Daemon>) -> MutexGuard<'_, Daemon> {
    daemon.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The heartbeat: RPF's poll every `poll`, MDT at each of its deadlines,
/// until `stop`.
fn heartbeat(daemon: &Mutex<Daemon>, stop: &Control, poll: Duration) -> Result<()> {
    let mut next_poll = Instant::now();
    while !stop.stopped() {
        let wake = {
            let mut d = lock(daemon);
            let now = Instant::now();
            if now >= next_poll {
                d.poll(now)?;
                while next_poll <= now {
                    next_poll += poll;
                }
            }
            d.run_mdt(Instant::now())?;
            d.deadline().map_or(next_poll, |at| at.min(next_poll))
        };
        while !stop.stopped() && Instant::now() < wake {
            std::thread::sleep((wake - Instant::now()).min(POLL));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
