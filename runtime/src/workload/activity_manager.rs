//! The activity manager: drives the scenario, owns the app processes, sets
//! their oom_score_adj (registering them with lmkd) and records launches,
//! switches and deaths.
//!
//! Scenario: launch the background apps cold, one after the other with
//! `launch_gap_ms` between them (each is in front while it launches), wait
//! `settle_ms`, then follow the seeded switch plan. A switch sends `bg` to
//! the app in front, brings the target to front, launches it (hot if it is
//! alive, else cold), sends `fg` and dwells. A planned background use
//! (`background_use`) does the same with a background app after the
//! switch's dwell and is logged as a launch with role `background_use`. The response time is from the
//! launch command to the last `ready`. An app that dies during its launch
//! is relaunched cold; the switch is still recorded once, as cold.
//!
//! With `scheme.background`, every oom_score_adj update also updates
//! Acclaim's background marks on the apps' cgroups (background_marks.rs),
//! just before the adjs are written; a cold launch writes its app's mark
//! again once its processes are in their cgroup.
//!
//! With `scheme.skew`, every change of the front app is also told to skew
//! rectification's pageout (unused_anon.rs), which marks the anonymous
//! pages of the app coming to the front and advises those the app leaving
//! it did not touch, on a thread of its own.
//!
//! With `scheme.ice`, every oom_score_adj update is also told to Ice
//! (ice.rs), which keeps its freezable marks and thaws an app that died
//! frozen, and every launch, hot or cold, starts by thawing its app if it
//! is frozen: inside the measured response time, whose event then carries
//! the thaw's `thaw_ms`. At the end Ice thaws every app before the apps are
//! killed.
//!
//! With `scheme.swam.eoom`, the cost of every cold launch (the one its
//! event logs) goes to lmkd's relaunch costs (lmkd/eoom.rs).
//!
//! Deaths come from the child reaper. An app is gone when any of its
//! processes dies: the manager kills the rest, and the next switch to it
//! is a cold launch. A process that ends other than by SIGKILL (an app
//! error such as data corruption) fails the run, as does exceeding the
//! deadline or a failure reported by another thread.

use crate::control::Control;
use crate::events::{Event, EventLog, LaunchKind, Phase};
use crate::lmkd::eoom::RelaunchCosts;
use crate::lmkd::proc_registry::ProcRegistry;
use crate::spec::{ms, Spec};
use crate::sys::{self, Exit};
use crate::workload::app_process::{AppProcess, Reply};
use crate::workload::background_marks::Marks;
use crate::workload::child_reaper::Death;
use crate::workload::ice::Ice;
use crate::workload::oom_adj::{oom_adjs, Recency};
use crate::workload::protocol::{Command, Costs};
use crate::workload::switch_plan;
use crate::workload::unused_anon::UnusedAnon;
use crate::workload::zygote::Zygote;
use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the manager waits at most before checking deaths, failures
/// and the deadline again.
const SLICE: Duration = Duration::from_millis(20);

/// What the activity manager works with.
pub struct Resources<'a> {
    pub spec: &'a Spec,
    /// Forks the app processes.
    pub zygote: Zygote,
    /// The directory holding one cgroup per app (`pmr/apps`).
    pub apps_cgroup: PathBuf,
    pub registry: Arc<ProcRegistry>,
    pub events: Arc<EventLog>,
    pub control: Arc<Control>,
    pub deaths: Receiver<Death>,
    pub deadline: Instant,
    /// Skew rectification's pageout, if the scheme has it.
    pub unused_anon: Option<UnusedAnon>,
    /// Ice's daemon, if the scheme has it.
    pub ice: Option<Ice>,
    /// EOOM's relaunch costs, fed at every cold launch, if the scheme has
    /// EOOM.
    pub relaunch_costs: Option<Arc<RelaunchCosts>>,
}

/// What a launch in front did, for its event.
struct Launched {
    kind: LaunchKind,
    response_ms: f64,
    cost: BTreeMap<String, f64>,
    thaw_ms: Option<f64>,
}

pub struct ActivityManager<'a> {
    ctx: Resources<'a>,
    /// The running processes of each app (spec order); empty when dead.
    apps: Vec<Vec<AppProcess>>,
    /// pid -> app, until the pid's death is handled.
    owner: HashMap<i32, usize>,
    /// Apps by recency of use, most recent first.
    lru: Vec<usize>,
    current: Option<usize>,
    /// What the last launch cost its slowest process (the one with the
    /// longest `wall_ms`): logged with the launch.
    launch_cost: Costs,
    /// Acclaim's background marks, if the scheme has them.
    marks: Option<Marks>,
    /// Skew rectification's pageout, if the scheme has it.
    unused_anon: Option<UnusedAnon>,
    /// Ice's daemon, if the scheme has it.
    ice: Option<Ice>,
    /// How long the last launch took to thaw its app (Ice), if it did.
    launch_thaw: Option<f64>,
}

/// Milliseconds to the microsecond: a hot launch of a small app in a test
/// can take less than 0.1 ms, which must not read as 0.
pub(crate) fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

impl<'a> ActivityManager<'a> {
    pub fn new(mut ctx: Resources<'a>) -> ActivityManager<'a> {
        let apps = ctx.spec.apps.iter().map(|_| Vec::new()).collect();
        let marks = ctx
            .spec
            .scheme
            .background
            .as_ref()
            .map(|b| Marks::new(b, ctx.spec, &ctx.apps_cgroup));
        let unused_anon = ctx.unused_anon.take();
        let ice = ctx.ice.take();
        ActivityManager {
            ctx,
            marks,
            unused_anon,
            ice,
            launch_thaw: None,
            apps,
            owner: HashMap::new(),
            lru: Vec::new(),
            current: None,
            launch_cost: Costs::new(),
        }
    }

    pub fn run(&mut self) -> Result<()> {
        let spec = self.ctx.spec;
        let scenario = &spec.scenario;
        self.phase(Phase::BackgroundLaunch)?;
        for (i, name) in scenario.background.iter().enumerate() {
            if i > 0 {
                self.wait_for(ms(scenario.launch_gap_ms))?;
            }
            let app = self.index(name);
            self.bring_to_front(app)?;
            let start = Instant::now();
            self.thaw_for_launch(app)?;
            self.cold_launch(app)?;
            let response_ms = millis(start.elapsed());
            let cost = self.take_launch_cost();
            self.launched(app, LaunchKind::Cold, &cost);
            let thaw_ms = self.launch_thaw.take();
            self.set_front(None);
            self.update_adjs()?;
            self.log(&Event::Launch {
                app: name,
                kind: LaunchKind::Cold,
                response_ms,
                role: "background",
                cost,
                thaw_ms,
            })?;
        }
        self.phase(Phase::Settle)?;
        self.wait_for(ms(scenario.settle_ms))?;

        self.phase(Phase::Switching)?;
        for planned in switch_plan::plan(spec.seed, scenario) {
            let from = self.current;
            let l = self.switch_to(self.index(&planned.app))?;
            self.log(&Event::Switch {
                round: planned.round,
                index: planned.index,
                app: &planned.app,
                kind: l.kind,
                response_ms: l.response_ms,
                from: from.map(|f| spec.apps[f].name.as_str()),
                cost: l.cost,
                thaw_ms: l.thaw_ms,
            })?;
            self.wait_for(planned.dwell)?;
            if let Some(used) = &planned.then_use {
                let l = self.switch_to(self.index(&used.app))?;
                self.log(&Event::Launch {
                    app: &used.app,
                    kind: l.kind,
                    response_ms: l.response_ms,
                    role: "background_use",
                    cost: l.cost,
                    thaw_ms: l.thaw_ms,
                })?;
                self.wait_for(used.dwell)?;
            }
        }
        self.phase(Phase::Done)
    }

    /// Send `bg` to the app in front, bring `app` to the front, launch it
    /// (hot if alive, else cold) and send it `fg`: the launch's kind,
    /// response time (launch command to the last `ready`), cost and thaw.
    fn switch_to(&mut self, app: usize) -> Result<Launched> {
        if let Some(previous) = self.current.filter(|&p| !self.apps[p].is_empty()) {
            self.command(previous, Command::Bg)?;
        }
        self.bring_to_front(app)?;
        let start = Instant::now();
        let kind = self.launch(app)?;
        let response_ms = millis(start.elapsed());
        let cost = self.take_launch_cost();
        self.launched(app, kind, &cost);
        let thaw_ms = self.launch_thaw.take();
        if kind == LaunchKind::Cold {
            if let Some(unused_anon) = &mut self.unused_anon {
                unused_anon.cold_launch_done(app, self.apps[app].iter().map(|p| p.pid).collect());
            }
        }
        // A death right after the launch is handled like any other.
        self.command(app, Command::Fg)?;
        Ok(Launched {
            kind,
            response_ms,
            cost,
            thaw_ms,
        })
    }

    /// Thaw every app (Ice), kill every app process and the zygote, then
    /// end the pageout worker (end of the run). An app Ice could not thaw
    /// fails the run.
    pub fn shutdown(&mut self) {
        if let Some(mut ice) = self.ice.take() {
            match ice.shutdown() {
                Ok(0) => {}
                Ok(n) => self
                    .ctx
                    .control
                    .fail(format!("ice: {n} app cgroups still frozen at the end")),
                Err(e) => self.ctx.control.fail(format!("ice: {e:#}")),
            }
        }
        self.ctx.zygote.stop();
        for procs in &mut self.apps {
            for p in procs.drain(..) {
                // Already gone is fine.
                let _ = sys::kill(p.pid);
            }
        }
        if let Some(unused_anon) = self.unused_anon.take() {
            unused_anon.stop();
        }
    }

    fn index(&self, name: &str) -> usize {
        self.ctx
            .spec
            .apps
            .iter()
            .position(|a| a.name == name)
            .expect("validated scenario app")
    }

    fn log(&self, event: &Event<'_>) -> Result<()> {
        self.ctx.events.log(event)
    }

    fn phase(&self, phase: Phase) -> Result<()> {
        self.log(&Event::Phase { phase })
    }

    fn bring_to_front(&mut self, app: usize) -> Result<()> {
        self.set_front(Some(app));
        self.lru.retain(|&a| a != app);
        self.lru.insert(0, app);
        self.update_adjs()
    }

    /// Make `front` the app in front (None: none is) and tell the pageout.
    fn set_front(&mut self, front: Option<usize>) {
        let from = std::mem::replace(&mut self.current, front);
        if let Some(unused_anon) = &mut self.unused_anon {
            let apps = &self.apps;
            unused_anon.front_changed(from, front, |app| apps[app].iter().map(|p| p.pid).collect());
        }
    }

    /// Hot launch if alive and it survives, else cold; the app is thawed
    /// first if Ice froze it.
    fn launch(&mut self, app: usize) -> Result<LaunchKind> {
        self.launch_cost.clear();
        self.thaw_for_launch(app)?;
        if !self.apps[app].is_empty() && self.command(app, Command::Hot)? {
            return Ok(LaunchKind::Hot);
        }
        self.cold_launch(app)?;
        Ok(LaunchKind::Cold)
    }

    /// Thaw `app`'s cgroup if Ice froze it (a dead app's too: its next
    /// processes would freeze in it); the thaw's time is kept for the
    /// launch's event.
    fn thaw_for_launch(&mut self, app: usize) -> Result<()> {
        self.launch_thaw = match &self.ice {
            Some(ice) => ice.thaw_for_launch(app)?,
            None => None,
        };
        Ok(())
    }

    /// Spawn the app's processes and cold-launch them, until one attempt
    /// survives its launch.
    fn cold_launch(&mut self, app: usize) -> Result<()> {
        let spec = self.ctx.spec;
        let a = &spec.apps[app];
        loop {
            // Only the attempt that survives is the launch.
            self.launch_cost.clear();
            if let Some(marks) = &mut self.marks {
                marks.launched_cold(app);
            }
            if let Some(unused_anon) = &mut self.unused_anon {
                unused_anon.launched_cold(app);
            }
            let cgroup = self.ctx.apps_cgroup.join(&a.name);
            let clock = self.ctx.events.start_monotonic();
            for index in 0..a.processes {
                let p = self.ctx.zygote.fork_app(&a.name, index, &cgroup, clock)?;
                self.owner.insert(p.pid, app);
                self.apps[app].push(p);
            }
            self.update_adjs()?;
            if self.command(app, Command::Cold)? {
                return Ok(());
            }
        }
    }

    /// Send `command` to every process of the app and wait for all
    /// replies; false if the app died meanwhile (its processes are killed).
    fn command(&mut self, app: usize, command: Command) -> Result<bool> {
        // The processes are taken out while waiting, so that a death
        // handled meanwhile does not touch them; they go back on error so
        // that `shutdown` kills them.
        let mut procs = std::mem::take(&mut self.apps[app]);
        let alive = self.await_replies(&mut procs, command);
        match alive {
            Ok(true) | Err(_) => self.apps[app] = procs,
            Ok(false) => {
                for p in &procs {
                    let _ = sys::kill(p.pid);
                }
                self.update_adjs()?;
            }
        }
        alive
    }

    /// Keep `costs` if its process took longer than the one kept.
    fn keep_slowest(&mut self, costs: Costs) {
        let wall = |c: &Costs| {
            c.iter()
                .find(|(n, _)| n == "wall_ms")
                .map_or(0.0, |(_, v)| *v)
        };
        if !costs.is_empty()
            && (self.launch_cost.is_empty() || wall(&costs) > wall(&self.launch_cost))
        {
            self.launch_cost = costs;
        }
    }

    /// A launch of `app` that cost `cost` was done: a cold one's cost goes
    /// to EOOM's relaunch costs.
    fn launched(&self, app: usize, kind: LaunchKind, cost: &BTreeMap<String, f64>) {
        if let (LaunchKind::Cold, Some(costs)) = (kind, &self.ctx.relaunch_costs) {
            costs.record(&self.ctx.spec.apps[app].name, cost);
        }
    }

    /// The cost of the launch just done, for its event; cleared for the next.
    fn take_launch_cost(&mut self) -> BTreeMap<String, f64> {
        std::mem::take(&mut self.launch_cost).into_iter().collect()
    }

    fn await_replies(&mut self, procs: &mut [AppProcess], command: Command) -> Result<bool> {
        if !procs.iter_mut().all(|p| p.send(command)) {
            return Ok(false);
        }
        for p in procs {
            loop {
                match p.poll_reply(SLICE)? {
                    Reply::Ready(costs) => {
                        self.keep_slowest(costs);
                        break;
                    }
                    Reply::Gone => return Ok(false),
                    Reply::Pending => self.tick(Duration::ZERO)?,
                }
            }
        }
        Ok(true)
    }

    fn wait_for(&mut self, duration: Duration) -> Result<()> {
        let until = Instant::now() + duration;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            self.tick(left.min(SLICE))?;
            if left.is_zero() {
                return Ok(());
            }
        }
    }

    /// Handle deaths (waiting at most `wait` for one), then check for
    /// failures and the deadline.
    fn tick(&mut self, wait: Duration) -> Result<()> {
        match self.ctx.deaths.recv_timeout(wait) {
            Ok(death) => self.handle_death(death)?,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => bail!("the child reaper stopped"),
        }
        while let Ok(death) = self.ctx.deaths.try_recv() {
            self.handle_death(death)?;
        }
        if let Some(failure) = self.ctx.control.failure() {
            bail!(failure);
        }
        if Instant::now() >= self.ctx.deadline {
            bail!(
                "the workload ran longer than deadline_s = {} s",
                self.ctx.spec.deadline_s
            );
        }
        Ok(())
    }

    fn handle_death(&mut self, death: Death) -> Result<()> {
        let Some(app) = self.owner.remove(&death.pid) else {
            return Ok(());
        };
        let name = self.ctx.spec.apps[app].name.as_str();
        if death.exit != Exit::Signal(libc::SIGKILL) {
            bail!(
                "app {name} (pid {}) ended with {:?}: apps only end by SIGKILL; its error (e.g. data \
                 corruption) is in console.log",
                death.pid,
                death.exit
            );
        }
        self.log(&Event::AppDied {
            app: name,
            pid: death.pid,
        })?;
        if self.apps[app].iter().any(|p| p.pid == death.pid) {
            for p in std::mem::take(&mut self.apps[app]) {
                let _ = sys::kill(p.pid);
            }
            self.update_adjs()?;
        }
        Ok(())
    }

    /// Update the background marks, then recompute every live app's
    /// oom_score_adj, tell Ice, register changes with lmkd and write them
    /// to /proc/<pid>/oom_score_adj.
    fn update_adjs(&mut self) -> Result<()> {
        if let Some(marks) = &mut self.marks {
            marks.update(self.current)?;
        }
        let spec = self.ctx.spec;
        let recency: Vec<Recency> = self
            .lru
            .iter()
            .map(|&app| Recency {
                app,
                class: spec.apps[app].adj_class,
                alive: !self.apps[app].is_empty(),
            })
            .collect();
        let adjs = oom_adjs(&recency, self.current, spec.lmkd.perceptible_adj);
        if let Some(ice) = &self.ice {
            let mut by_app = vec![None; spec.apps.len()];
            for &(app, adj) in &adjs {
                by_app[app] = Some(adj);
            }
            ice.update(&by_app)?;
        }
        for (app, adj) in adjs {
            for p in &self.apps[app] {
                if self.ctx.registry.set_adj(p.pid, &spec.apps[app].name, adj) {
                    write_oom_score_adj(p.pid, adj)?;
                }
            }
        }
        Ok(())
    }
}

fn write_oom_score_adj(pid: i32, adj: i32) -> Result<()> {
    let path = format!("/proc/{pid}/oom_score_adj");
    match std::fs::write(&path, adj.to_string()) {
        // The process died; the child reaper will report it.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH)) => Ok(()),
        other => other.with_context(|| format!("cannot write {path}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_times_are_rounded_to_the_microsecond() {
        assert_eq!(millis(Duration::from_nanos(812_449_400)), 812.449);
        assert_eq!(millis(Duration::from_nanos(812_449_600)), 812.45);
        // a very fast hot launch does not read as 0
        assert_eq!(millis(Duration::from_nanos(40_000)), 0.04);
    }
}
