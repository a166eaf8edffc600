//! Acclaim's background marks (ATC'20, foreground-aware eviction): the
//! activity manager tells the kernel which apps are in the background by
//! writing `1` into a file of their memory cgroup (`scheme.background.file`,
//! `memory.acclaim_bg`), and `0` to clear the mark. Which apps
//! (`scheme.background.apps`):
//! - `not-foreground`: every launched app but the one in front. The app
//!   coming to the front is cleared in the update that gives it the
//!   foreground's oom_score_adj, the one leaving it is marked in the same
//!   update.
//! - `scenario-background`: the scenario's background apps, marked at
//!   their cold launch and never cleared, in front or not (the public
//!   code's fixed list).
//!
//! Apps of class `persistent` are never marked; an app never launched is
//! left alone (its cgroup holds nothing), and a launched app that died
//! keeps being marked like the others (its cgroup still holds its page
//! cache).
//!
//! What was last written into each app's cgroup is remembered and written
//! again only when it changes. An app's cgroup (`pmr/apps/<app>`) is made at
//! setup and lives for the whole run, through kills and relaunches, and the
//! kernel keeps its mark; a cold launch still forgets what was written, so
//! that the mark is written again for the new processes. A write that
//! finds the cgroup gone is a warning; any other failure, a kernel without
//! the file included, fails the run.

use crate::spec::{AdjClass, BackgroundMarks, MarkedApps, Spec};
use crate::sys::cgroup;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The marks of every app of the spec, in spec order.
pub struct Marks {
    file: String,
    mode: MarkedApps,
    apps: Vec<AppMark>,
}

struct AppMark {
    name: String,
    cgroup: PathBuf,
    /// The mode may mark it: not persistent, and in the scenario's
    /// background list for `scenario-background`.
    markable: bool,
    /// It has been launched: its cgroup holds its memory.
    launched: bool,
    /// What was last written into its cgroup: true for `1`; None if
    /// nothing since its last cold launch.
    written: Option<bool>,
}

impl Marks {
    /// Marks for the apps of `spec`, whose cgroups are `apps_cgroup/<app>`.
    pub fn new(marks: &BackgroundMarks, spec: &Spec, apps_cgroup: &Path) -> Marks {
        let apps = spec
            .apps
            .iter()
            .map(|a| AppMark {
                name: a.name.clone(),
                cgroup: apps_cgroup.join(&a.name),
                markable: a.adj_class != AdjClass::Persistent
                    && match marks.apps {
                        MarkedApps::NotForeground => true,
                        MarkedApps::ScenarioBackground => {
                            spec.scenario.background.contains(&a.name)
                        }
                    },
                launched: false,
                written: None,
            })
            .collect();
        Marks {
            file: marks.file.clone(),
            mode: marks.apps,
            apps,
        }
    }

    /// `app` is being launched cold: forget what was written into its
    /// cgroup, so that the next update writes its mark again.
    pub fn launched_cold(&mut self, app: usize) {
        let a = &mut self.apps[app];
        a.launched = true;
        a.written = None;
    }

    /// The writes that `current` in front calls for, as (app, marked):
    /// clears first, then marks, each in spec order.
    pub fn pending(&self, current: Option<usize>) -> Vec<(usize, bool)> {
        let mut writes: Vec<(usize, bool)> = self
            .apps
            .iter()
            .enumerate()
            .filter(|(_, a)| a.launched && a.markable)
            .map(|(app, _)| (app, self.wanted(app, current)))
            .filter(|&(app, marked)| self.apps[app].written != Some(marked))
            .collect();
        writes.sort_by_key(|&(app, marked)| (marked, app));
        writes
    }

    /// Write what `pending` calls for and remember it.
    pub fn update(&mut self, current: Option<usize>) -> Result<()> {
        for (app, marked) in self.pending(current) {
            if self.write(app, marked)? {
                self.apps[app].written = Some(marked);
            }
        }
        Ok(())
    }

    fn wanted(&self, app: usize, current: Option<usize>) -> bool {
        match self.mode {
            MarkedApps::NotForeground => current != Some(app),
            MarkedApps::ScenarioBackground => true,
        }
    }

    /// Write the mark; false if the app's cgroup is gone.
    fn write(&self, app: usize, marked: bool) -> Result<bool> {
        let a = &self.apps[app];
        let value = if marked { "1" } else { "0" };
        let path = a.cgroup.join(&self.file);
        match cgroup::write_file(&a.cgroup, &self.file, value) {
            Ok(()) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                if a.cgroup.is_dir() {
                    bail!(
                        "cannot mark app {} as background: the kernel has no {} in its cgroup ({} \
                         is missing; boot a kernel with Acclaim's patch)",
                        a.name,
                        self.file,
                        path.display()
                    );
                }
                eprintln!(
                    "pmr-guest: warning: cannot write {value} into {}: the cgroup of app {} is gone",
                    path.display(),
                    a.name
                );
                Ok(false)
            }
            Err(e) => Err(e).with_context(|| {
                format!(
                    "cannot write {value} into {} (the background mark of app {}): does the \
                     kernel have Acclaim's {}?",
                    path.display(),
                    a.name,
                    self.file
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "memory.acclaim_bg";
    // The fixture's apps, in spec order; firefox and whatsapp are the
    // scenario's background apps.
    const CHROME: usize = 0;
    const YOUTUBE: usize = 1;
    const FIREFOX: usize = 2;
    const WHATSAPP: usize = 3;

    /// The fixture with youtube of class `persistent`.
    fn spec() -> Spec {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/spec.json")).unwrap();
        v["apps"][YOUTUBE]["adj_class"] = "persistent".into();
        Spec::parse(&v.to_string()).unwrap()
    }

    fn marks(mode: MarkedApps, apps_cgroup: &Path) -> Marks {
        let b = BackgroundMarks {
            file: FILE.into(),
            apps: mode,
        };
        Marks::new(&b, &spec(), apps_cgroup)
    }

    /// Launch every app cold, as the activity manager would, then
    /// remember what is pending with `current` in front.
    fn all_launched(m: &mut Marks, current: Option<usize>) -> Vec<(usize, bool)> {
        for app in [CHROME, YOUTUBE, FIREFOX, WHATSAPP] {
            m.launched_cold(app);
        }
        settle(m, current)
    }

    /// What is pending, then recorded as written.
    fn settle(m: &mut Marks, current: Option<usize>) -> Vec<(usize, bool)> {
        let writes = m.pending(current);
        for &(app, marked) in &writes {
            m.apps[app].written = Some(marked);
        }
        writes
    }

    #[test]
    fn not_foreground_marks_every_launched_app_but_the_one_in_front() {
        let mut m = marks(MarkedApps::NotForeground, Path::new("/x"));
        assert!(m.pending(None).is_empty(), "nothing launched yet");
        assert_eq!(
            all_launched(&mut m, Some(CHROME)),
            vec![(CHROME, false), (FIREFOX, true), (WHATSAPP, true)],
            "youtube is persistent"
        );
        // A switch clears the new front app first, then marks the old one.
        assert_eq!(
            settle(&mut m, Some(FIREFOX)),
            vec![(FIREFOX, false), (CHROME, true)]
        );
        assert_eq!(settle(&mut m, None), vec![(FIREFOX, true)]);
    }

    #[test]
    fn scenario_background_marks_the_listed_apps_and_never_clears() {
        let mut m = marks(MarkedApps::ScenarioBackground, Path::new("/x"));
        m.launched_cold(FIREFOX);
        assert_eq!(
            settle(&mut m, Some(FIREFOX)),
            vec![(FIREFOX, true)],
            "marked while launching in front"
        );
        assert_eq!(
            all_launched(&mut m, Some(CHROME)),
            vec![(FIREFOX, true), (WHATSAPP, true)],
            "chrome is no background app, youtube persistent"
        );
        for current in [Some(WHATSAPP), Some(FIREFOX), Some(CHROME), None] {
            assert!(settle(&mut m, current).is_empty(), "{current:?}");
        }
    }

    #[test]
    fn persistent_apps_are_never_marked() {
        for mode in [MarkedApps::NotForeground, MarkedApps::ScenarioBackground] {
            let mut m = marks(mode, Path::new("/x"));
            m.launched_cold(YOUTUBE);
            for current in [None, Some(CHROME), Some(YOUTUBE)] {
                assert!(m.pending(current).is_empty(), "{mode:?} {current:?}");
            }
        }
    }

    #[test]
    fn nothing_is_rewritten_until_something_changes() {
        let mut m = marks(MarkedApps::NotForeground, Path::new("/x"));
        all_launched(&mut m, Some(CHROME));
        assert!(m.pending(Some(CHROME)).is_empty());
        settle(&mut m, Some(WHATSAPP));
        assert!(m.pending(Some(WHATSAPP)).is_empty());
    }

    #[test]
    fn a_cold_relaunch_writes_the_mark_again() {
        let mut m = marks(MarkedApps::NotForeground, Path::new("/x"));
        all_launched(&mut m, Some(CHROME));
        m.launched_cold(WHATSAPP);
        assert_eq!(m.pending(Some(CHROME)), vec![(WHATSAPP, true)]);
        m.launched_cold(CHROME);
        assert_eq!(
            m.pending(Some(CHROME)),
            vec![(CHROME, false), (WHATSAPP, true)]
        );
        let mut m = marks(MarkedApps::ScenarioBackground, Path::new("/x"));
        all_launched(&mut m, None);
        m.launched_cold(FIREFOX);
        assert_eq!(m.pending(Some(FIREFOX)), vec![(FIREFOX, true)]);
    }

    /// A stand-in for `pmr/apps`: a directory per app with the file.
    fn cgroups(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pmr-marks-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for app in ["chrome", "youtube", "firefox", "whatsapp"] {
            std::fs::create_dir_all(dir.join(app)).unwrap();
            std::fs::write(dir.join(app).join(FILE), "").unwrap();
        }
        dir
    }

    fn read(dir: &Path, app: &str) -> String {
        std::fs::read_to_string(dir.join(app).join(FILE)).unwrap()
    }

    #[test]
    fn updates_write_the_marks_once() {
        let dir = cgroups("write");
        let mut m = marks(MarkedApps::NotForeground, &dir);
        m.launched_cold(CHROME);
        m.launched_cold(FIREFOX);
        m.update(Some(CHROME)).unwrap();
        assert_eq!(
            (read(&dir, "chrome"), read(&dir, "firefox")),
            ("0".into(), "1".into())
        );
        assert_eq!(read(&dir, "whatsapp"), "", "never launched");
        std::fs::write(dir.join("firefox").join(FILE), "").unwrap();
        m.update(Some(CHROME)).unwrap();
        assert_eq!(read(&dir, "firefox"), "", "not written again");
        m.update(Some(FIREFOX)).unwrap();
        assert_eq!(
            (read(&dir, "chrome"), read(&dir, "firefox")),
            ("1".into(), "0".into())
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_cgroup_gone_is_a_warning_and_a_missing_file_an_error() {
        let dir = cgroups("errors");
        let mut m = marks(MarkedApps::NotForeground, &dir);
        m.launched_cold(CHROME);
        std::fs::remove_dir_all(dir.join("chrome")).unwrap();
        m.update(None).unwrap();
        assert_eq!(m.pending(None), vec![(CHROME, true)], "tried again later");

        std::fs::remove_file(dir.join("firefox").join(FILE)).unwrap();
        m.launched_cold(FIREFOX);
        let err = format!("{:#}", m.update(None).unwrap_err());
        assert!(
            err.contains("the kernel has no memory.acclaim_bg") && err.contains("firefox"),
            "{err}"
        );

        // Any other failure (EISDIR here, EINVAL from a kernel) is an error too.
        std::fs::create_dir_all(dir.join("firefox").join(FILE)).unwrap();
        let err = format!("{:#}", m.update(None).unwrap_err());
        assert!(
            err.contains("cannot write 1 into") && err.contains("memory.acclaim_bg"),
            "{err}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
