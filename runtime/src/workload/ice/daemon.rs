//! Ice's daemon state: what it knows of every app's cgroup, and the
//! actions on it (marks, freezes, thaws, events). The activity manager's
//! calls and the heartbeat's ticks share it under one lock (ice.rs), so
//! that a mark cleared, a launch thaw and an MDT freeze never cross.
//!
//! The files, in `pmr/apps/<app>`: `cgroup.freeze` (the cgroup v2
//! freezer: `1` freezes every task of the cgroup, `0` thaws them; a task
//! moved into a frozen cgroup freezes too), `memory.ice_freezable` (kernel
//! RPF only: the kernel freezes the cgroup at a refault of one of its
//! tasks while it reads 1) and `memory.stat` (user RPF's refaults).

use super::mdt::{self, Heartbeat, Step};
use super::rpf;
use super::{FreezeCause, ThawCause};
use crate::events::{Event, EventLog};
use crate::spec::{ms, AdjClass, Available, Ice, Rpf, Spec};
use crate::sys::cgroup;
use crate::sys::memcg_stat;
use crate::sys::proc_files;
use crate::workload::activity_manager::millis;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

pub const FREEZE_FILE: &str = "cgroup.freeze";
pub const MARK_FILE: &str = "memory.ice_freezable";
const STAT_FILE: &str = "memory.stat";
/// Bytes in a page of /proc/zoneinfo's counts.
const PAGE_KB: i64 = (crate::pattern::PAGE_SIZE / 1024) as i64;

/// What the daemon knows of one app.
struct App {
    name: String,
    cgroup: PathBuf,
    persistent: bool,
    /// It has processes (an adj).
    alive: bool,
    /// RPF may freeze it (rpf::freezable of its current adj).
    freezable: bool,
    /// It lost its freezability while it lived: it is coming to the front
    /// (with `protect_adj` below the previous app's adj nothing else takes
    /// a live app's), and its launch thaws it (`thaw_for_launch`).
    launching: bool,
    /// What was last written into its memory.ice_freezable (kernel RPF).
    mark: Option<bool>,
    /// Frozen since then, as far as the daemon knows.
    frozen_since: Option<Instant>,
    /// Selected by RPF: MDT cycles it until it comes to the front or dies.
    selected: bool,
    /// User RPF: its refaults at the last read while freezable.
    refaults: Option<u64>,
}

pub struct Daemon {
    rpf: Rpf,
    protect_adj: i32,
    mdt: crate::spec::Mdt,
    heartbeat: Heartbeat,
    apps: Vec<App>,
    events: Arc<EventLog>,
    /// /proc (zoneinfo, meminfo); a stand-in in tests.
    proc_dir: PathBuf,
}

impl Daemon {
    /// The daemon for the apps of `spec`, whose cgroups are
    /// `apps_cgroup/<app>`; nothing is written yet.
    pub fn new(
        ice: &Ice,
        spec: &Spec,
        apps_cgroup: &Path,
        proc_dir: &Path,
        events: Arc<EventLog>,
    ) -> Daemon {
        let apps = spec
            .apps
            .iter()
            .map(|a| App {
                name: a.name.clone(),
                cgroup: apps_cgroup.join(&a.name),
                persistent: a.adj_class == AdjClass::Persistent,
                alive: false,
                freezable: false,
                launching: false,
                mark: None,
                frozen_since: None,
                selected: false,
                refaults: None,
            })
            .collect();
        Daemon {
            rpf: ice.rpf,
            protect_adj: ice.protect_adj,
            mdt: ice.mdt.clone(),
            heartbeat: Heartbeat::new(ms(ice.mdt.thaw_ms)),
            apps,
            events,
            proc_dir: proc_dir.to_path_buf(),
        }
    }

    /// The files Ice needs are in the apps' cgroups: the freezer's, and
    /// the kernel's mark for kernel RPF.
    pub fn check_kernel(&self) -> Result<()> {
        let Some(a) = self.apps.first() else {
            return Ok(());
        };
        for (file, need) in [
            (FREEZE_FILE, "the cgroup v2 freezer (Linux >= 5.2)"),
            (MARK_FILE, "Ice's kernel patch (kernel/baselines/ice)"),
        ] {
            if file == MARK_FILE && self.rpf != Rpf::Kernel {
                continue;
            }
            let path = a.cgroup.join(file);
            if !path.exists() {
                bail!(
                    "scheme.ice: {} is missing: boot a kernel with {need}",
                    path.display()
                );
            }
        }
        Ok(())
    }

    /// The apps' oom_score_adjs changed: `adjs[app]` is its adj, None if
    /// it is dead. Marks follow (kernel RPF), a dead app is thawed, and an
    /// app that may no longer be frozen leaves MDT's selection.
    pub fn update(&mut self, adjs: &[Option<i32>]) -> Result<()> {
        for (i, &adj) in adjs.iter().enumerate() {
            let a = &mut self.apps[i];
            let want = rpf::freezable(adj, a.persistent, self.protect_adj);
            let died = a.alive && adj.is_none();
            if a.freezable && !want && adj.is_some() {
                a.launching = true;
            }
            if !want {
                a.selected = false;
                a.refaults = None;
            }
            a.freezable = want;
            a.alive = adj.is_some();
            if self.rpf == Rpf::Kernel && a.mark != Some(want) {
                self.write_mark(i, want)?;
            }
            if died {
                self.apps[i].launching = false;
                if self.frozen(i)? {
                    self.thaw(i, ThawCause::Death)?;
                }
            }
        }
        Ok(())
    }

    /// Thaw `app`, which is being launched, if its cgroup is frozen: how
    /// long the thaw took, ms.
    pub fn thaw_for_launch(&mut self, app: usize) -> Result<Option<f64>> {
        let a = &mut self.apps[app];
        a.launching = false;
        a.selected = false;
        if !self.frozen(app)? {
            return Ok(None);
        }
        let took = self.thaw(app, ThawCause::Launch)?;
        Ok(Some(millis(took)))
    }

    /// One poll of RPF at `now`: kernel RPF notices the freezes the kernel
    /// did (cgroup.freeze reads 1), user RPF freezes the apps whose
    /// refaults rose.
    pub fn poll(&mut self, now: Instant) -> Result<()> {
        match self.rpf {
            Rpf::Kernel => self.notice_kernel_freezes(now),
            Rpf::User => self.poll_refaults(now),
        }
    }

    /// Kernel RPF: a freezable app the kernel froze is selected. A live
    /// app that may not be frozen but reads frozen (the kernel's freeze
    /// crossed the clearing of its mark as it came to the front, after its
    /// launch thaw) is thawed at once.
    fn notice_kernel_freezes(&mut self, now: Instant) -> Result<()> {
        for i in 0..self.apps.len() {
            let a = &self.apps[i];
            if !a.alive || a.frozen_since.is_some() || a.launching {
                continue;
            }
            if read_frozen(&a.cgroup)? != Some(true) {
                continue;
            }
            self.noticed(i, now)?;
            if self.apps[i].freezable {
                self.apps[i].selected = true;
            } else {
                self.thaw(i, ThawCause::Launch)?;
            }
        }
        Ok(())
    }

    /// User RPF: freeze the freezable apps whose refaults rose.
    fn poll_refaults(&mut self, now: Instant) -> Result<()> {
        for i in 0..self.apps.len() {
            let a = &self.apps[i];
            if !a.freezable || a.frozen_since.is_some() {
                continue;
            }
            let path = a.cgroup.join(STAT_FILE);
            // A cgroup being removed has nothing to freeze.
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let stat =
                memcg_stat::parse(&text).with_context(|| format!("bad {}", path.display()))?;
            let now_refaults =
                rpf::refaults(&stat).with_context(|| format!("ice-us: {}", path.display()))?;
            let before = self.apps[i].refaults.replace(now_refaults);
            if rpf::refaulted(before, now_refaults) {
                self.freeze(i, FreezeCause::RpfUser, now)?;
                self.apps[i].selected = true;
            }
        }
        Ok(())
    }

    /// Run MDT's heartbeat up to `now`.
    pub fn run_mdt(&mut self, now: Instant) -> Result<()> {
        loop {
            let selected = self.apps.iter().any(|a| a.selected);
            match self.heartbeat.next(now, selected) {
                None => return Ok(()),
                Some(Step::StartEpoch) => {
                    let (available_kb, high_wm_kb) = self.memory()?;
                    let freeze_ms = mdt::freeze_ms(&self.mdt, high_wm_kb, available_kb);
                    self.heartbeat.started(now, ms(freeze_ms));
                    self.events.log(&Event::IceEpoch {
                        freeze_ms,
                        available_kb,
                        high_wm_kb,
                    })?;
                }
                Some(Step::ThawAll) => {
                    for i in 0..self.apps.len() {
                        if self.apps[i].selected && self.apps[i].frozen_since.is_some() {
                            self.thaw(i, ThawCause::Mdt)?;
                        }
                    }
                    self.heartbeat.thawed(now);
                }
                Some(Step::RefreezeAll) => {
                    // An app the kernel froze since the last poll is RPF's.
                    for i in 0..self.apps.len() {
                        if self.apps[i].selected && !self.frozen(i)? {
                            self.freeze(i, FreezeCause::Mdt, now)?;
                        }
                    }
                    self.heartbeat.refrozen();
                }
            }
        }
    }

    /// When MDT's current period ends, if one runs.
    pub fn deadline(&self) -> Option<Instant> {
        self.heartbeat.deadline()
    }

    /// Clear every mark (kernel RPF), so that the kernel freezes nothing
    /// more.
    pub fn clear_marks(&mut self) -> Result<()> {
        if self.rpf != Rpf::Kernel {
            return Ok(());
        }
        for i in 0..self.apps.len() {
            if self.apps[i].mark != Some(false) {
                self.write_mark(i, false)?;
            }
            self.apps[i].freezable = false;
            self.apps[i].selected = false;
        }
        Ok(())
    }

    /// Thaw every app's cgroup (the end of the run), logging the thaw of
    /// those that were frozen: the number still frozen after.
    pub fn thaw_all_at_end(&mut self) -> Result<usize> {
        for i in 0..self.apps.len() {
            self.apps[i].selected = false;
            if self.frozen(i)? {
                self.thaw(i, ThawCause::End)?;
            } else {
                write_freeze(&self.apps[i].cgroup, false)?;
            }
        }
        let mut still = 0;
        for a in &self.apps {
            if read_frozen(&a.cgroup)? == Some(true) {
                still += 1;
            }
        }
        Ok(still)
    }

    /// Log `ice_end` with the number of app cgroups still frozen.
    pub fn log_end(&self, frozen: usize) -> Result<()> {
        self.events.log(&Event::IceEnd { frozen })
    }

    /// Thaw everything without a word (a runtime ending without
    /// `shutdown`): every error is ignored.
    pub fn thaw_all_quietly(&mut self) {
        for a in &mut self.apps {
            if self.rpf == Rpf::Kernel {
                let _ = cgroup::write_file(&a.cgroup, MARK_FILE, "0");
            }
            let _ = write_freeze(&a.cgroup, false);
            a.frozen_since = None;
            a.selected = false;
        }
    }

    /// Whether the app's cgroup is frozen: known to the daemon, or read
    /// (the kernel's freeze not noticed yet, which is logged now).
    fn frozen(&mut self, app: usize) -> Result<bool> {
        if self.apps[app].frozen_since.is_some() {
            return Ok(true);
        }
        if read_frozen(&self.apps[app].cgroup)? == Some(true) {
            self.noticed(app, Instant::now())?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The app's cgroup was found frozen by the kernel (RPF) at `now`.
    fn noticed(&mut self, app: usize, now: Instant) -> Result<()> {
        self.apps[app].frozen_since = Some(now);
        self.events.log(&Event::IceFreeze {
            app: &self.apps[app].name,
            cause: FreezeCause::Rpf,
        })
    }

    fn freeze(&mut self, app: usize, cause: FreezeCause, now: Instant) -> Result<()> {
        let a = &mut self.apps[app];
        if write_freeze(&a.cgroup, true)? {
            a.frozen_since = Some(now);
            self.events.log(&Event::IceFreeze {
                app: &a.name,
                cause,
            })?;
        }
        Ok(())
    }

    /// Thaw a frozen app: how long the write took.
    fn thaw(&mut self, app: usize, cause: ThawCause) -> Result<std::time::Duration> {
        let start = Instant::now();
        let a = &mut self.apps[app];
        write_freeze(&a.cgroup, false)?;
        let took = start.elapsed();
        let frozen_ms = a.frozen_since.take().map_or(0.0, |t| millis(t.elapsed()));
        self.events.log(&Event::IceThaw {
            app: &a.name,
            cause,
            frozen_ms,
        })?;
        Ok(took)
    }

    fn write_mark(&mut self, app: usize, freezable: bool) -> Result<()> {
        let a = &mut self.apps[app];
        let value = if freezable { "1" } else { "0" };
        match cgroup::write_file(&a.cgroup, MARK_FILE, value) {
            Ok(()) => {
                a.mark = Some(freezable);
                Ok(())
            }
            // The cgroup is gone: nothing of the app left to freeze.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) && !a.cgroup.is_dir() => Ok(()),
            Err(e) => Err(e).with_context(|| {
                format!(
                    "cannot write {value} into {} (app {}): does the kernel have Ice's patch?",
                    a.cgroup.join(MARK_FILE).display(),
                    a.name
                )
            }),
        }
    }

    /// S_am and H_wm, kB.
    fn memory(&self) -> Result<(i64, i64)> {
        let read = |name: &str| {
            let path = self.proc_dir.join(name);
            std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))
        };
        let mem = proc_files::parse_meminfo(&read("meminfo")?)?;
        let high = proc_files::parse_zoneinfo_high(&read("zoneinfo")?)?;
        let available = match self.mdt.available {
            Available::MemFree => mem.mem_free,
            Available::MemAvailable => mem.mem_available,
        };
        Ok((available, high * PAGE_KB))
    }
}

/// Whether the cgroup is frozen (its cgroup.freeze reads 1); None if the
/// cgroup is gone.
pub fn read_frozen(cgroup: &Path) -> Result<Option<bool>> {
    let path = cgroup.join(FREEZE_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text.trim() == "1")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !cgroup.is_dir() => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Freeze or thaw the cgroup; false if the cgroup is gone.
pub fn write_freeze(cgroup: &Path, frozen: bool) -> Result<bool> {
    let value = if frozen { "1" } else { "0" };
    match cgroup::write_file(cgroup, FREEZE_FILE, value) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) && !cgroup.is_dir() => Ok(false),
        Err(e) => Err(e).with_context(|| {
            format!(
                "cannot write {value} into {}",
                cgroup.join(FREEZE_FILE).display()
            )
        }),
    }
}
