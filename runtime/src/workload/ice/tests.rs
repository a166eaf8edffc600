//! The daemon on stand-in cgroups and /proc: regular files for
//! `cgroup.freeze`, `memory.ice_freezable`, `memory.stat`, `meminfo` and
//! `zoneinfo`; the test plays the kernel by writing `1` into cgroup.freeze.

use super::daemon::{Daemon, FREEZE_FILE, MARK_FILE};
use super::*;
use crate::spec::Spec;
use serde_json::Value;
use std::path::PathBuf;

// The fixture's apps, in spec order: chrome and youtube cached, firefox
// perceptible, whatsapp cached (persistent in `stand_in` with `persistent`).
const CHROME: usize = 0;
const YOUTUBE: usize = 1;
const FIREFOX: usize = 2;
const WHATSAPP: usize = 3;

/// 30 MB of high watermark (7680 pages in two zones).
const ZONEINFO: &str =
    "Node 0, zone    DMA32\n  pages free 1\n        min 1\n        low 2\n        \
                        high 7000\nNode 0, zone   Normal\n        high 680\n";

struct StandIn {
    dir: PathBuf,
    spec: Spec,
    events: Arc<EventLog>,
}

impl StandIn {
    /// Ice with its heartbeat on the stand-in's cgroups and /proc.
    fn start(&self, control: &Arc<Control>) -> Ice {
        Ice::start(
            &self.spec,
            &self.dir.join("apps"),
            &self.dir.join("proc"),
            self.events.clone(),
            control,
        )
        .unwrap()
    }

    /// Cgroups for the fixture's apps and a /proc with MemFree `free_kb`;
    /// `ice` is the spec's `scheme.ice` (thaw_ms 40, delta 1).
    fn new(name: &str, rpf: &str, free_kb: i64, tweak: impl FnOnce(&mut Value)) -> StandIn {
        let dir = std::env::temp_dir().join(format!("pmr-ice-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut v: Value =
            serde_json::from_str(include_str!("../../../tests/fixtures/spec.json")).unwrap();
        v["scheme"]["ice"] = serde_json::json!({
            "rpf": rpf, "poll_ms": 100, "protect_adj": 200, "spare_swapped": false,
            "mdt": {"delta": 1, "thaw_ms": 40, "max_freeze_ms": 320, "available": "mem_free"}
        });
        tweak(&mut v);
        let spec = Spec::parse(&v.to_string()).unwrap();
        for app in &spec.apps {
            let cgroup = dir.join("apps").join(&app.name);
            std::fs::create_dir_all(&cgroup).unwrap();
            std::fs::write(cgroup.join(FREEZE_FILE), "0\n").unwrap();
            if rpf == "kernel" {
                std::fs::write(cgroup.join(MARK_FILE), "0\n").unwrap();
            }
            std::fs::write(cgroup.join("memory.stat"), stat(0)).unwrap();
        }
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        std::fs::write(
            dir.join("proc/meminfo"),
            format!(
                "MemTotal: 400000 kB\nMemFree: {free_kb} kB\nMemAvailable: 90000 kB\n\
                 SwapTotal: 0 kB\nSwapFree: 0 kB\nShmem: 0 kB\nActive(anon): 0 kB\n\
                 Inactive(anon): 0 kB\nInactive(file): 0 kB\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.join("proc/zoneinfo"), ZONEINFO).unwrap();
        let events = Arc::new(EventLog::create(&dir.join("events.jsonl"), Instant::now()).unwrap());
        StandIn { dir, spec, events }
    }

    fn daemon(&self) -> Daemon {
        Daemon::new(
            self.spec.scheme.ice.as_ref().unwrap(),
            &self.spec,
            &self.dir.join("apps"),
            &self.dir.join("proc"),
            self.events.clone(),
        )
    }

    fn cgroup(&self, app: usize) -> PathBuf {
        self.dir.join("apps").join(&self.spec.apps[app].name)
    }

    fn read(&self, app: usize, file: &str) -> String {
        std::fs::read_to_string(self.cgroup(app).join(file))
            .unwrap()
            .trim()
            .to_string()
    }

    /// The kernel freezes the app.
    fn kernel_freezes(&self, app: usize) {
        std::fs::write(self.cgroup(app).join(FREEZE_FILE), "1").unwrap();
    }

    fn set_refaults(&self, app: usize, refaults: u64) {
        std::fs::write(self.cgroup(app).join("memory.stat"), stat(refaults)).unwrap();
    }

    /// The events logged so far, without their times.
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("events.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut e: Value = serde_json::from_str(l).unwrap();
                e.as_object_mut().unwrap().remove("t_ms");
                e
            })
            .collect()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn stat(refaults: u64) -> String {
    format!("anon 4096\nfile 0\nworkingset_refault_anon {refaults}\nworkingset_refault_file 1\n")
}

/// chrome in front; youtube previous; firefox perceptible; whatsapp cached.
const RUNNING: [Option<i32>; 4] = [Some(0), Some(700), Some(200), Some(900)];

fn freeze(app: &str, cause: &str) -> Value {
    serde_json::json!({"type": "ice_freeze", "app": app, "cause": cause})
}

/// An `ice_thaw` event without its `frozen_ms` (checked apart).
fn thaw(app: &str, cause: &str) -> Value {
    serde_json::json!({"type": "ice_thaw", "app": app, "cause": cause})
}

fn without_frozen_ms(events: Vec<Value>) -> Vec<Value> {
    events
        .into_iter()
        .map(|mut e| {
            if let Some(ms) = e.as_object_mut().unwrap().remove("frozen_ms") {
                assert!(ms.as_f64().unwrap() >= 0.0, "{e}");
            }
            e
        })
        .collect()
}

#[test]
fn kernel_marks_follow_the_adjs() {
    let s = StandIn::new("marks", "kernel", 100_000, |v| {
        v["apps"][WHATSAPP]["adj_class"] = "persistent".into();
    });
    let mut d = s.daemon();
    d.check_kernel().unwrap();
    d.update(&[Some(0), Some(700), Some(200), Some(-800)])
        .unwrap();
    let marks: Vec<String> = (0..4).map(|a| s.read(a, MARK_FILE)).collect();
    assert_eq!(marks, ["0", "1", "0", "0"]);
    // youtube comes to the front, chrome leaves it, youtube dies
    d.update(&[Some(700), Some(0), Some(200), Some(-800)])
        .unwrap();
    assert_eq!(
        (s.read(CHROME, MARK_FILE), s.read(YOUTUBE, MARK_FILE)),
        ("1".into(), "0".into())
    );
    d.update(&[Some(0), None, Some(200), Some(-800)]).unwrap();
    assert_eq!(s.read(CHROME, MARK_FILE), "0");
    assert!(s.events().is_empty(), "no freeze, no thaw");
}

#[test]
fn a_kernel_freeze_starts_an_epoch_that_thaws_and_freezes_again() {
    // MemFree 20 MB under the 30 MB watermark: E_f = 40 ms x 2^2
    let s = StandIn::new("epoch", "kernel", 20_000, |_| {});
    let mut d = s.daemon();
    d.update(&RUNNING).unwrap();
    let t0 = Instant::now();
    d.poll(t0).unwrap();
    d.run_mdt(t0).unwrap();
    assert!(s.events().is_empty());
    assert_eq!(d.deadline(), None, "idle");

    s.kernel_freezes(WHATSAPP);
    s.kernel_freezes(FIREFOX); // perceptible: not Ice's, thawed at once
    d.poll(t0).unwrap();
    d.run_mdt(t0).unwrap();
    assert_eq!(s.read(FIREFOX, FREEZE_FILE), "0");
    let epoch = serde_json::json!({"type": "ice_epoch", "freeze_ms": 160.0,
                                   "available_kb": 20000, "high_wm_kb": 30720});
    assert_eq!(
        without_frozen_ms(s.events()),
        [
            freeze("firefox", "rpf"),
            thaw("firefox", "launch"),
            freeze("whatsapp", "rpf"),
            epoch.clone(),
        ]
    );
    let ms = |v: u64| t0 + Duration::from_millis(v);
    assert_eq!(d.deadline(), Some(ms(160)));
    d.run_mdt(ms(159)).unwrap();
    assert_eq!(s.read(WHATSAPP, FREEZE_FILE), "1");
    d.run_mdt(ms(160)).unwrap();
    assert_eq!(s.read(WHATSAPP, FREEZE_FILE), "0", "the thaw window");
    assert_eq!(d.deadline(), Some(ms(200)));
    // youtube refaults in the thaw window: frozen until the next one
    s.kernel_freezes(YOUTUBE);
    d.poll(ms(170)).unwrap();
    d.run_mdt(ms(200)).unwrap();
    assert_eq!(s.read(WHATSAPP, FREEZE_FILE), "1");
    assert_eq!(s.read(YOUTUBE, FREEZE_FILE), "1");
    assert_eq!(d.deadline(), Some(ms(360)), "the next epoch at once");
    assert_eq!(
        without_frozen_ms(s.events())[4..],
        [
            thaw("whatsapp", "mdt"),
            freeze("youtube", "rpf"),
            freeze("whatsapp", "mdt"),
            epoch.clone(),
        ]
    );
    d.run_mdt(ms(360)).unwrap();
    assert_eq!(
        (s.read(WHATSAPP, FREEZE_FILE), s.read(YOUTUBE, FREEZE_FILE)),
        ("0".into(), "0".into())
    );
    // the kernel freezes whatsapp in this window, before any poll: the
    // end of the window finds it frozen, and it is RPF's freeze
    s.kernel_freezes(WHATSAPP);
    d.run_mdt(ms(400)).unwrap();
    assert_eq!(
        without_frozen_ms(s.events())[8..],
        [
            thaw("youtube", "mdt"),
            thaw("whatsapp", "mdt"),
            freeze("youtube", "mdt"),
            freeze("whatsapp", "rpf"),
            epoch,
        ]
    );
}

#[test]
fn a_launch_thaws_its_app_and_a_death_thaws_the_dead() {
    let s = StandIn::new("launch", "kernel", 100_000, |_| {});
    let mut d = s.daemon();
    d.update(&RUNNING).unwrap();
    s.kernel_freezes(WHATSAPP);
    s.kernel_freezes(YOUTUBE);
    let t0 = Instant::now();
    d.poll(t0).unwrap();
    d.run_mdt(t0).unwrap();
    // whatsapp comes to the front: its mark is cleared, the heartbeat
    // leaves it to the launch
    d.update(&[Some(700), Some(900), Some(200), Some(0)])
        .unwrap();
    assert_eq!(s.read(WHATSAPP, MARK_FILE), "0");
    d.poll(t0).unwrap();
    assert_eq!(s.read(WHATSAPP, FREEZE_FILE), "1");
    let thaw_ms = d.thaw_for_launch(WHATSAPP).unwrap();
    assert!(thaw_ms.is_some_and(|t| t >= 0.0), "{thaw_ms:?}");
    assert_eq!(s.read(WHATSAPP, FREEZE_FILE), "0");
    assert_eq!(d.thaw_for_launch(CHROME).unwrap(), None, "not frozen");
    // youtube dies frozen
    d.update(&[Some(700), None, Some(200), Some(0)]).unwrap();
    assert_eq!(s.read(YOUTUBE, FREEZE_FILE), "0");
    // chrome dies; the kernel had frozen it just before, unnoticed
    s.kernel_freezes(CHROME);
    d.update(&[None, None, Some(200), Some(0)]).unwrap();
    assert_eq!(s.read(CHROME, FREEZE_FILE), "0");
    let events: Vec<Value> = without_frozen_ms(s.events())
        .into_iter()
        .filter(|e| e["type"] != "ice_epoch")
        .collect();
    assert_eq!(
        events,
        [
            freeze("youtube", "rpf"),
            freeze("whatsapp", "rpf"),
            thaw("whatsapp", "launch"),
            thaw("youtube", "death"),
            freeze("chrome", "rpf"),
            thaw("chrome", "death"),
        ]
    );
    // a cold launch of a dead app whose cgroup is frozen thaws it too
    s.kernel_freezes(YOUTUBE);
    assert!(d.thaw_for_launch(YOUTUBE).unwrap().is_some());
    assert_eq!(s.read(YOUTUBE, FREEZE_FILE), "0");
}

#[test]
fn user_rpf_freezes_on_a_refault_rise_and_writes_no_mark() {
    let s = StandIn::new("user", "user", 100_000, |_| {});
    let mut d = s.daemon();
    d.check_kernel().unwrap();
    d.update(&RUNNING).unwrap();
    let t0 = Instant::now();
    d.poll(t0).unwrap(); // the baselines
    s.set_refaults(CHROME, 50); // in front
    s.set_refaults(FIREFOX, 50); // perceptible
    s.set_refaults(YOUTUBE, 50);
    d.poll(t0).unwrap();
    d.run_mdt(t0).unwrap();
    assert_eq!(
        (0..4).map(|a| s.read(a, FREEZE_FILE)).collect::<Vec<_>>(),
        ["0", "1", "0", "0"]
    );
    assert!(!s.cgroup(YOUTUBE).join(MARK_FILE).exists());
    // chrome goes to the background: its first read is a baseline
    d.update(&[Some(700), Some(900), Some(200), Some(0)])
        .unwrap();
    d.poll(t0).unwrap();
    assert_eq!(s.read(CHROME, FREEZE_FILE), "0");
    s.set_refaults(CHROME, 51);
    d.poll(t0).unwrap();
    assert_eq!(s.read(CHROME, FREEZE_FILE), "1");
    assert_eq!(
        s.events()
            .iter()
            .filter(|e| e["type"] == "ice_freeze")
            .cloned()
            .collect::<Vec<_>>(),
        [freeze("youtube", "rpf_user"), freeze("chrome", "rpf_user")]
    );
}

#[test]
fn a_kernel_without_the_files_is_refused() {
    let s = StandIn::new("refused", "kernel", 100_000, |_| {});
    std::fs::remove_file(s.cgroup(CHROME).join(MARK_FILE)).unwrap();
    let err = format!("{:#}", s.daemon().check_kernel().unwrap_err());
    assert!(err.contains("memory.ice_freezable is missing"), "{err}");
    std::fs::remove_file(s.cgroup(CHROME).join(FREEZE_FILE)).unwrap();
    let err = format!("{:#}", s.daemon().check_kernel().unwrap_err());
    assert!(err.contains("cgroup v2 freezer"), "{err}");
    let mut d = s.daemon();
    let err = format!("{:#}", d.update(&RUNNING).unwrap_err());
    assert!(err.contains("Ice's patch"), "{err}");
}

#[test]
fn shutdown_clears_the_marks_and_thaws_every_app() {
    let s = StandIn::new("shutdown", "kernel", 20_000, |_| {});
    let control = Arc::new(Control::default());
    let mut ice = s.start(&control);
    ice.update(&RUNNING).unwrap();
    s.kernel_freezes(WHATSAPP);
    s.kernel_freezes(YOUTUBE);
    // the heartbeat notices within a poll, then runs epochs of 160 + 40 ms
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(ice.shutdown().unwrap(), 0);
    assert_eq!(control.failure(), None);
    for app in 0..4 {
        assert_eq!(
            (s.read(app, MARK_FILE), s.read(app, FREEZE_FILE)),
            ("0".into(), "0".into())
        );
    }
    let events = s.events();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"ice_epoch"), "{kinds:?}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "ice_thaw" && e["cause"] == "mdt"),
        "{events:?}"
    );
    assert_eq!(
        events.last().unwrap(),
        &serde_json::json!({"type": "ice_end", "frozen": 0})
    );
    let ended: Vec<&Value> = events.iter().filter(|e| e["cause"] == "end").collect();
    assert!(ended.len() <= 2 && ended.iter().all(|e| e["type"] == "ice_thaw"));
}

#[test]
fn an_ice_dropped_without_shutdown_thaws_everything() {
    let s = StandIn::new("dropped", "kernel", 100_000, |_| {});
    let control = Arc::new(Control::default());
    let ice = s.start(&control);
    ice.update(&RUNNING).unwrap();
    s.kernel_freezes(WHATSAPP);
    std::thread::sleep(Duration::from_millis(250));
    drop(ice);
    assert_eq!(s.read(WHATSAPP, FREEZE_FILE), "0");
    assert_eq!(s.read(WHATSAPP, MARK_FILE), "0");
}
