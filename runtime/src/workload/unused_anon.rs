//! Skew rectification's pageout at the switch (TECS'23): the anonymous
//! pages an app did not touch while it was in front are advised out
//! (MADV_PAGEOUT, or MADV_COLD) as it leaves the front, so that reclaim
//! takes them rather than memory the apps in use need.
//!
//! Idle page tracking (idle_bitmap.rs) tells which pages went unused:
//! when an app comes to the front, the private anonymous pages in RAM of
//! its processes (maps.rs, pagemap.rs) are marked idle; when it leaves,
//! those still idle were not touched in between and are advised
//! (pageout.rs). Apps of class `persistent` are left alone. A cold launch
//! comes to the front with no processes to mark: its app is marked once
//! the launch is done, so that what it allocated at start-up and left
//! unused in front is advised too; an app not marked since its last cold
//! launch (it died in the launch) is not advised.
//!
//! The work is done by a worker thread (worker.rs), so that the switch
//! being measured is not delayed by it; at a switch the mark of the app
//! coming to the front is queued before the advice for the one leaving.
//! The mark runs while the app launches: pages the launch touches before
//! the mark reaches them count as unused.

pub mod idle_bitmap;
pub mod maps;
pub mod pagemap;
pub mod pageout;
mod worker;

use crate::control::{spawn_thread, Control};
use crate::events::EventLog;
use crate::spec::{AdjClass, Skew, Spec};
use anyhow::{Context, Result};
use idle_bitmap::IdleBitmap;
use std::path::Path;
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use worker::{Job, Worker};

/// The activity manager's side: the jobs each change of the front app
/// calls for, sent to the worker.
pub struct UnusedAnon {
    fronts: Fronts,
    jobs: Sender<Job>,
    worker: JoinHandle<()>,
}

impl UnusedAnon {
    /// Start the worker for the apps of `spec`, with the page_idle bitmap
    /// at `bitmap` (`idle_bitmap::PATH` but in tests).
    pub fn start(
        skew: &Skew,
        spec: &Spec,
        bitmap: &Path,
        events: Arc<EventLog>,
        control: &Arc<Control>,
    ) -> Result<UnusedAnon> {
        let mut worker = Worker {
            bitmap: IdleBitmap::open(bitmap)
                .with_context(|| format!("skew: cannot open {}", bitmap.display()))?,
            advice: skew.advice,
            names: spec.apps.iter().map(|a| a.name.clone()).collect(),
            marked: vec![None; spec.apps.len()],
            events,
        };
        let (jobs, queue) = mpsc::channel();
        let failed = control.clone();
        let worker = spawn_thread(control, "skew-pageout", move || {
            for job in queue {
                if let Err(e) = worker.handle(job) {
                    failed.fail(format!("skew pageout: {e:#}"));
                    return;
                }
            }
        })?;
        Ok(UnusedAnon {
            fronts: Fronts::new(spec),
            jobs,
            worker,
        })
    }

    /// The front app changed from `from` to `to`; `pids` gives the live
    /// processes of an app.
    pub fn front_changed(
        &mut self,
        from: Option<usize>,
        to: Option<usize>,
        pids: impl Fn(usize) -> Vec<i32>,
    ) {
        for job in self.fronts.changed(from, to, pids) {
            // A worker that stopped has failed the run already.
            let _ = self.jobs.send(job);
        }
    }

    /// `app` is being launched cold.
    pub fn launched_cold(&mut self, app: usize) {
        self.fronts.launched_cold(app);
    }

    /// `app`, in front, has finished a cold launch with processes `pids`.
    pub fn cold_launch_done(&mut self, app: usize, pids: Vec<i32>) {
        if let Some(job) = self.fronts.cold_launch_done(app, pids) {
            let _ = self.jobs.send(job);
        }
    }

    /// Let the worker finish the jobs queued and end it.
    pub fn stop(self) {
        drop(self.jobs);
        let _ = self.worker.join();
    }
}

/// Which apps are marked and advised when the front changes.
struct Fronts {
    /// Apps left alone: those of class `persistent`.
    ignored: Vec<bool>,
    /// Marked since its last cold launch and not yet advised.
    marked: Vec<bool>,
}

impl Fronts {
    fn new(spec: &Spec) -> Fronts {
        Fronts {
            ignored: spec
                .apps
                .iter()
                .map(|a| a.adj_class == AdjClass::Persistent)
                .collect(),
            marked: vec![false; spec.apps.len()],
        }
    }

    /// The jobs for the front changing from `from` to `to`: the mark of
    /// `to` (if it has processes), then the advice for `from` (if it was
    /// marked and has processes left).
    fn changed(
        &mut self,
        from: Option<usize>,
        to: Option<usize>,
        pids: impl Fn(usize) -> Vec<i32>,
    ) -> Vec<Job> {
        let mut jobs = Vec::new();
        if from == to {
            return jobs;
        }
        if let Some(app) = to.filter(|&a| !self.ignored[a]) {
            let pids = pids(app);
            self.marked[app] = !pids.is_empty();
            if self.marked[app] {
                jobs.push(Job::Mark { app, pids });
            }
        }
        if let Some(app) = from.filter(|&a| std::mem::take(&mut self.marked[a])) {
            let pids = pids(app);
            if !pids.is_empty() {
                jobs.push(Job::Advise { app, pids });
            }
        }
        jobs
    }

    fn launched_cold(&mut self, app: usize) {
        self.marked[app] = false;
    }

    /// The mark of `app` once its cold launch in front is done.
    fn cold_launch_done(&mut self, app: usize, pids: Vec<i32>) -> Option<Job> {
        if self.ignored[app] || pids.is_empty() {
            return None;
        }
        self.marked[app] = true;
        Some(Job::Mark { app, pids })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The fixture's apps, in spec order.
    const CHROME: usize = 0;
    const YOUTUBE: usize = 1;
    const FIREFOX: usize = 2;

    /// The fixture with youtube of class `persistent`.
    fn fronts() -> Fronts {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/spec.json")).unwrap();
        v["apps"][YOUTUBE]["adj_class"] = "persistent".into();
        Fronts::new(&Spec::parse(&v.to_string()).unwrap())
    }

    /// App `a` has the one process `100 + a`.
    fn alive(app: usize) -> Vec<i32> {
        vec![100 + app as i32]
    }

    fn mark(app: usize) -> Job {
        Job::Mark {
            app,
            pids: alive(app),
        }
    }

    fn advise(app: usize) -> Job {
        Job::Advise {
            app,
            pids: alive(app),
        }
    }

    #[test]
    fn a_switch_marks_the_new_app_then_advises_the_old_one() {
        let mut f = fronts();
        assert_eq!(f.changed(None, Some(CHROME), alive), vec![mark(CHROME)]);
        assert_eq!(
            f.changed(Some(CHROME), Some(FIREFOX), alive),
            vec![mark(FIREFOX), advise(CHROME)]
        );
        assert_eq!(f.changed(Some(FIREFOX), None, alive), vec![advise(FIREFOX)]);
        assert!(f.changed(None, None, alive).is_empty());
    }

    #[test]
    fn an_app_is_advised_once_per_mark() {
        let mut f = fronts();
        f.changed(None, Some(CHROME), alive);
        assert!(
            f.changed(Some(CHROME), Some(CHROME), alive).is_empty(),
            "no change"
        );
        assert_eq!(f.changed(Some(CHROME), None, alive), vec![advise(CHROME)]);
        assert!(f.changed(Some(CHROME), None, alive).is_empty());
    }

    #[test]
    fn persistent_apps_are_left_alone() {
        let mut f = fronts();
        assert!(f.changed(None, Some(YOUTUBE), alive).is_empty());
        assert_eq!(
            f.changed(Some(YOUTUBE), Some(CHROME), alive),
            vec![mark(CHROME)]
        );
    }

    #[test]
    fn a_cold_launch_is_marked_when_done_and_advised_as_it_leaves() {
        let mut f = fronts();
        let none = |_| Vec::new();
        assert!(f.changed(None, Some(CHROME), none).is_empty());
        f.launched_cold(CHROME);
        assert_eq!(
            f.cold_launch_done(CHROME, alive(CHROME)),
            Some(mark(CHROME))
        );
        assert_eq!(
            f.changed(Some(CHROME), Some(FIREFOX), alive),
            vec![mark(FIREFOX), advise(CHROME)]
        );
        // persistent apps and launches that left no process are not marked
        assert_eq!(f.cold_launch_done(YOUTUBE, alive(YOUTUBE)), None);
        f.launched_cold(FIREFOX);
        assert_eq!(f.cold_launch_done(FIREFOX, Vec::new()), None);
        assert!(f.changed(Some(FIREFOX), None, alive).is_empty());
    }

    #[test]
    fn apps_launched_cold_are_not_advised_until_the_launch_is_done() {
        let mut f = fronts();
        // comes to the front dead, then launched cold
        let none = |_| Vec::new();
        assert!(f.changed(None, Some(CHROME), none).is_empty());
        f.launched_cold(CHROME);
        assert_eq!(
            f.changed(Some(CHROME), Some(FIREFOX), alive),
            vec![mark(FIREFOX)]
        );
        // marked alive, then died and was relaunched cold while in front
        f.launched_cold(FIREFOX);
        assert_eq!(
            f.changed(Some(FIREFOX), Some(CHROME), alive),
            vec![mark(CHROME)]
        );
        // died in front, not relaunched: nothing left to advise
        assert!(f.changed(Some(CHROME), None, none).is_empty());
        assert_eq!(f.changed(None, Some(CHROME), alive), vec![mark(CHROME)]);
    }
}
