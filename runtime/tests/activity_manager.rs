//! The activity manager on the host, with real app processes: regular
//! files stand in for the apps' `cgroup.procs` and lmkd does not run.
//! One test function, because the child reaper waits for any child of the
//! test process and must not run twice at once.

mod common;

use common::Scratch;
use pmr_guest::control::Control;
use pmr_guest::events::EventLog;
use pmr_guest::lmkd::eoom::{relaunch_ms, RelaunchCosts};
use pmr_guest::lmkd::proc_registry::{Entry, ProcRegistry};
use pmr_guest::workload::activity_manager::{ActivityManager, Resources};
use pmr_guest::workload::child_reaper;
use pmr_guest::workload::ice::{Ice, FREEZE_FILE, MARK_FILE};
use pmr_guest::workload::unused_anon::UnusedAnon;
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Outcome {
    result: anyhow::Result<()>,
    events: Vec<Value>,
    /// The registry when the scenario ended, before the apps were killed.
    registry: Vec<(i32, Entry)>,
    /// EOOM's relaunch costs at the end.
    relaunch_costs: Arc<RelaunchCosts>,
}

/// Run the scenario of `s`; `meddle` runs on its own thread meanwhile.
fn run(
    s: &Scratch,
    deadline: Duration,
    meddle: impl FnOnce(&ProcRegistry, &Control) + Send,
) -> Outcome {
    run_with_bitmap(s, deadline, meddle, None)
}

/// `run`, with skew's pageout using `idle_bitmap` for the page_idle
/// bitmap if the spec has `scheme.skew`.
fn run_with_bitmap(
    s: &Scratch,
    deadline: Duration,
    meddle: impl FnOnce(&ProcRegistry, &Control) + Send,
    idle_bitmap: Option<&Path>,
) -> Outcome {
    let apps_cgroup = s.dir.join("apps");
    for app in &s.spec.apps {
        std::fs::create_dir_all(apps_cgroup.join(&app.name)).unwrap();
        std::fs::write(apps_cgroup.join(&app.name).join("cgroup.procs"), "").unwrap();
    }
    let events_path = s.dir.join("events.jsonl");
    let registry = Arc::new(ProcRegistry::default());
    let control = Arc::new(Control::default());
    let events = Arc::new(EventLog::create(&events_path, Instant::now()).unwrap());
    let (reaper, deaths) = child_reaper::spawn(registry.clone(), control.clone()).unwrap();
    let relaunch_costs = Arc::new(RelaunchCosts::default());
    let (result, snapshot) = std::thread::scope(|scope| {
        scope.spawn(|| meddle(&registry, &control));
        let unused_anon = s.spec.scheme.skew.as_ref().map(|skew| {
            let bitmap = idle_bitmap.expect("a stand-in page_idle bitmap");
            UnusedAnon::start(skew, &s.spec, bitmap, events.clone(), &control).unwrap()
        });
        let ice = s.spec.scheme.ice.as_ref().map(|_| {
            let proc_dir = Path::new("/proc");
            Ice::start(&s.spec, &apps_cgroup, proc_dir, events.clone(), &control).unwrap()
        });
        let mut manager = ActivityManager::new(Resources {
            spec: &s.spec,
            zygote: s.zygote(),
            apps_cgroup,
            registry: registry.clone(),
            events,
            control: control.clone(),
            deaths,
            deadline: Instant::now() + deadline,
            unused_anon,
            ice,
            relaunch_costs: Some(relaunch_costs.clone()),
        });
        let result = manager.run();
        let snapshot = registry.snapshot();
        manager.shutdown();
        control.stop();
        (result, snapshot)
    });
    reaper.join().unwrap();
    let events = std::fs::read_to_string(events_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Outcome {
        result,
        events,
        registry: snapshot,
        relaunch_costs,
    }
}

/// Every switch and launch carries what it cost its slowest process, and
/// the measured launch fits in the response time.
fn assert_launch_costs(events: &[Value]) {
    for e in of_type(events, "switch")
        .into_iter()
        .chain(of_type(events, "launch"))
    {
        let wall = e["cost"]["wall_ms"].as_f64().unwrap_or(-1.0);
        let response = e["response_ms"].as_f64().unwrap();
        assert!((0.0..=response + 0.01).contains(&wall), "{e}");
    }
}

/// EOOM's relaunch cost of every app is the mean files_ms + init_ms of
/// its cold launches' events.
fn assert_relaunch_costs(events: &[Value], relaunch_costs: &RelaunchCosts, apps: &[&str]) {
    for app in apps {
        let costs: Vec<f64> = of_type(events, "switch")
            .into_iter()
            .chain(of_type(events, "launch"))
            .filter(|e| e["app"] == *app && e["kind"] == "cold")
            .map(|e| {
                let cost = serde_json::from_value(e["cost"].clone()).unwrap();
                relaunch_ms(&cost).unwrap()
            })
            .collect();
        let mean = relaunch_costs.mean_ms(app);
        if costs.is_empty() {
            assert_eq!(mean, None, "{app}");
        } else {
            let expected = costs.iter().sum::<f64>() / costs.len() as f64;
            assert!(
                (mean.unwrap() - expected).abs() < 1e-9,
                "{app}: {mean:?} {costs:?}"
            );
        }
    }
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn adjs_by_app(registry: &[(i32, Entry)]) -> Vec<(String, i32)> {
    let mut adjs: Vec<(String, i32)> = registry
        .iter()
        .map(|(_, e)| (e.app.clone(), e.adj))
        .collect();
    adjs.sort();
    adjs
}

fn fast_scenario(v: &mut Value) {
    v["scenario"]["dwell_ms"] = serde_json::json!([50, 100]);
    v["scenario"]["launch_gap_ms"] = 10.into();
    v["scenario"]["settle_ms"] = 50.into();
}

/// Kill `app`'s process the first time the registry shows it with an adj
/// accepted by `when`.
fn kill_once(registry: &ProcRegistry, control: &Control, app: &str, when: impl Fn(i32) -> bool) {
    while !control.stopped() {
        if let Some((pid, _)) = registry
            .snapshot()
            .into_iter()
            .find(|(_, e)| e.app == app && when(e.adj))
        {
            // SAFETY: plain kill of a child of this test.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn activity_manager_runs_scenarios() {
    scenario_runs_to_completion();
    deaths_are_logged_and_dead_apps_relaunch_cold();
    background_apps_in_use_come_to_the_front();
    background_marks_follow_the_front_app();
    skew_advises_every_app_that_leaves_the_front();
    ice_thaws_in_launches_and_at_the_end();
    deadline_fails_the_run();
}

fn scenario_runs_to_completion() {
    let s = Scratch::new("am-ok", fast_scenario);
    let out = run(&s, Duration::from_secs(60), |_, _| {});
    out.result.unwrap();

    let phases: Vec<&str> = of_type(&out.events, "phase")
        .iter()
        .map(|e| e["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["background_launch", "settle", "switching", "done"]);
    let times: Vec<u64> = out
        .events
        .iter()
        .map(|e| e["t_ms"].as_u64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));

    let launches = of_type(&out.events, "launch");
    let launched: Vec<&str> = launches
        .iter()
        .map(|e| e["app"].as_str().unwrap())
        .collect();
    assert_eq!(launched, ["firefox", "whatsapp"]);
    assert!(launches
        .iter()
        .all(|e| e["kind"] == "cold" && e["role"] == "background"));

    let switches = of_type(&out.events, "switch");
    assert_eq!(switches.len(), 4, "rounds × foreground apps");
    assert!(switches[0]["from"].is_null());
    assert_eq!(switches[1]["from"], switches[0]["app"]);
    let kinds: Vec<&str> = switches
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["cold", "cold", "hot", "hot"],
        "no pressure: every app stays alive"
    );
    assert!(switches
        .iter()
        .all(|e| e["response_ms"].as_f64().unwrap() > 0.0));
    assert_launch_costs(&out.events);
    let apps = ["chrome", "youtube", "firefox", "whatsapp"];
    assert_relaunch_costs(&out.events, &out.relaunch_costs, &apps);
    assert!(of_type(&out.events, "app_died").is_empty());

    // The last app switched to is in front, the one before is previous;
    // whatsapp is cached, firefox perceptible; youtube has 2 processes.
    let last = switches[3]["app"].as_str().unwrap();
    let other = if last == "chrome" {
        "youtube"
    } else {
        "chrome"
    };
    let mut expected = vec![
        (last.to_string(), 0),
        (other.to_string(), 700),
        ("whatsapp".to_string(), 900),
        ("firefox".to_string(), 200),
    ];
    expected.push((
        "youtube".to_string(),
        if last == "youtube" { 0 } else { 700 },
    ));
    expected.sort();
    assert_eq!(adjs_by_app(&out.registry), expected);
    let (pid, _) = out
        .registry
        .iter()
        .find(|(_, e)| e.app == "whatsapp")
        .unwrap();
    let written = std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj"));
    // The process is gone now; if its /proc entry is still there it said 900.
    assert!(written.map_or(true, |w| w.trim() == "900"));
}

fn deaths_are_logged_and_dead_apps_relaunch_cold() {
    let s = Scratch::new("am-deaths", fast_scenario);
    let out = run(&s, Duration::from_secs(60), |registry, control| {
        // firefox once it is in the background (perceptible), chrome the
        // first time it is in front.
        kill_once(registry, control, "firefox", |adj| adj == 200);
        kill_once(registry, control, "chrome", |adj| adj == 0);
    });
    out.result.unwrap();
    let died: HashSet<&str> = of_type(&out.events, "app_died")
        .iter()
        .map(|e| e["app"].as_str().unwrap())
        .collect();
    assert_eq!(died, HashSet::from(["firefox", "chrome"]));
    let switches = of_type(&out.events, "switch");
    assert_eq!(switches.len(), 4, "a death never adds or drops a switch");
    let chrome_kinds: Vec<&str> = switches
        .iter()
        .filter(|e| e["app"] == "chrome")
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(chrome_kinds.len(), 2);
    assert_eq!(chrome_kinds[0], "cold");
    // a relaunch after a death too: the cost is the attempt that survived
    assert_launch_costs(&out.events);
    let apps = ["chrome", "youtube", "firefox", "whatsapp"];
    assert_relaunch_costs(&out.events, &out.relaunch_costs, &apps);
    assert!(
        out.registry.iter().all(|(_, e)| e.app != "firefox"),
        "dead apps are unregistered"
    );
}

fn background_apps_in_use_come_to_the_front() {
    let s = Scratch::new("am-background-use", |v| {
        fast_scenario(v);
        v["scenario"]["background_use"] =
            serde_json::json!({"every": 1, "dwell_ms": [20, 40], "apps": ["whatsapp"]});
    });
    let out = run(&s, Duration::from_secs(60), |registry, control| {
        // whatsapp once it is in the background after its launch (the
        // previous app, before any switch): its first use is cold
        kill_once(registry, control, "whatsapp", |adj| adj == 700);
    });
    out.result.unwrap();
    let switches = of_type(&out.events, "switch");
    assert_eq!(switches.len(), 4, "uses add no switch");
    let uses: Vec<&Value> = of_type(&out.events, "launch")
        .into_iter()
        .filter(|e| e["role"] == "background_use")
        .collect();
    assert_eq!(uses.len(), 4, "one use after every switch");
    assert!(uses.iter().all(|e| e["app"] == "whatsapp"));
    let kinds: Vec<&str> = uses.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["cold", "hot", "hot", "hot"], "killed, then alive");
    // the switch after a use comes from the background app
    assert!(switches[1..].iter().all(|e| e["from"] == "whatsapp"));
    assert_launch_costs(&out.events);
    // the last use sent the last switched app back: whatsapp is in front
    let adjs = adjs_by_app(&out.registry);
    assert!(adjs.contains(&("whatsapp".to_string(), 0)), "{adjs:?}");
}

fn background_marks_follow_the_front_app() {
    const FILE: &str = "memory.acclaim_bg";
    let s = Scratch::new("am-marks", |v| {
        fast_scenario(v);
        v["scheme"]["background"] = serde_json::json!({"file": FILE, "apps": "not-foreground"});
    });
    for app in &s.spec.apps {
        let cgroup = s.dir.join("apps").join(&app.name);
        std::fs::create_dir_all(&cgroup).unwrap();
        std::fs::write(cgroup.join(FILE), "").unwrap();
    }
    let out = run(&s, Duration::from_secs(60), |registry, control| {
        // chrome the first time it is in front: its relaunch marks it again
        kill_once(registry, control, "chrome", |adj| adj == 0);
    });
    out.result.unwrap();
    let marks: Vec<(String, String)> = s
        .spec
        .apps
        .iter()
        .map(|a| {
            let path = s.dir.join("apps").join(&a.name).join(FILE);
            (a.name.clone(), std::fs::read_to_string(path).unwrap())
        })
        .collect();
    let front: Vec<&str> = out
        .registry
        .iter()
        .filter(|(_, e)| e.adj == 0)
        .map(|(_, e)| e.app.as_str())
        .collect();
    for (app, mark) in &marks {
        let expected = if front.contains(&app.as_str()) {
            "0"
        } else {
            "1"
        };
        assert_eq!(mark, expected, "{app}: {marks:?}, in front {front:?}");
    }
}

/// A regular file stands in for the page_idle bitmap: what is marked
/// reads back as idle. Only root sees the PFNs of the apps' pages.
fn skew_advises_every_app_that_leaves_the_front() {
    let s = Scratch::new("am-skew", |v| {
        fast_scenario(v);
        v["scheme"]["skew"] = serde_json::json!({"advice": "cold"});
    });
    let bitmap = s.dir.join("page_idle_bitmap");
    std::fs::write(&bitmap, "").unwrap();
    let out = run_with_bitmap(&s, Duration::from_secs(60), |_, _| {}, Some(&bitmap));
    out.result.unwrap();
    let switches = of_type(&out.events, "switch");
    let kinds: Vec<&str> = switches
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["cold", "cold", "hot", "hot"]);
    // Apps launched cold are marked once launched; the last app stays in
    // front.
    let pageouts = of_type(&out.events, "skew_pageout");
    let advised: Vec<&serde_json::Value> = pageouts.iter().map(|p| &p["app"]).collect();
    let left: Vec<&serde_json::Value> = switches[..3].iter().map(|s| &s["app"]).collect();
    assert_eq!(advised, left, "{pageouts:?}");
    let p = pageouts[2];
    assert_eq!(&p["advice"], &"cold");
    assert!(p["ms"].as_f64().unwrap() >= 0.0);
    let pages = |key: &str| p[key].as_u64().unwrap();
    assert!(pages("advised_bytes") <= pages("idle_pages") * 4096, "{p}");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert!(pages("marked_pages") > 0, "{p}");
        assert!(std::fs::metadata(&bitmap).unwrap().len() > 0);
    }
}

/// Regular files stand in for cgroup.freeze and memory.ice_freezable; the
/// test plays the kernel, freezing whatsapp whenever it is freezable,
/// until the scenario is done.
fn ice_thaws_in_launches_and_at_the_end() {
    let s = Scratch::new("am-ice", |v| {
        fast_scenario(v);
        v["scenario"]["background_use"] =
            serde_json::json!({"every": 1, "dwell_ms": [20, 40], "apps": ["whatsapp"]});
        v["scheme"]["ice"] = serde_json::json!({
            "rpf": "kernel", "poll_ms": 100, "protect_adj": 200, "spare_swapped": false,
            "mdt": {"delta": 1, "thaw_ms": 20, "max_freeze_ms": 80, "available": "mem_free"}
        });
    });
    for app in &s.spec.apps {
        let cgroup = s.dir.join("apps").join(&app.name);
        std::fs::create_dir_all(&cgroup).unwrap();
        std::fs::write(cgroup.join(FREEZE_FILE), "0").unwrap();
        std::fs::write(cgroup.join(MARK_FILE), "0").unwrap();
    }
    let whatsapp = s.dir.join("apps/whatsapp");
    let events_path = s.dir.join("events.jsonl");
    let out = run(&s, Duration::from_secs(60), |_, control| {
        let read = |f: &str| std::fs::read_to_string(whatsapp.join(f)).unwrap_or_default();
        while !control.stopped()
            && !std::fs::read_to_string(&events_path)
                .unwrap_or_default()
                .contains(r#""phase":"done""#)
        {
            if read(MARK_FILE).trim() == "1" && read(FREEZE_FILE).trim() == "0" {
                std::fs::write(whatsapp.join(FREEZE_FILE), "1").unwrap();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    out.result.unwrap();
    let uses: Vec<&Value> = of_type(&out.events, "launch")
        .into_iter()
        .filter(|e| e["role"] == "background_use")
        .collect();
    assert_eq!(uses.len(), 4);
    let thawed: Vec<f64> = uses.iter().filter_map(|e| e["thaw_ms"].as_f64()).collect();
    assert!(!thawed.is_empty(), "{uses:?}");
    assert!(thawed.iter().all(|&t| t >= 0.0));
    let launch_thaws = of_type(&out.events, "ice_thaw")
        .into_iter()
        .filter(|e| e["cause"] == "launch")
        .count();
    assert_eq!(launch_thaws, thawed.len());
    assert!(of_type(&out.events, "switch")
        .iter()
        .all(|e| e["thaw_ms"].is_null()));
    assert!(of_type(&out.events, "ice_freeze")
        .iter()
        .all(|e| e["app"] == "whatsapp"));
    assert_eq!(
        out.events.last().unwrap(),
        &serde_json::json!({"t_ms": out.events.last().unwrap()["t_ms"], "type": "ice_end",
                            "frozen": 0})
    );
    for app in &s.spec.apps {
        let cgroup = s.dir.join("apps").join(&app.name);
        let read = |f: &str| std::fs::read_to_string(cgroup.join(f)).unwrap();
        assert_eq!(
            (read(MARK_FILE), read(FREEZE_FILE)),
            ("0".into(), "0".into()),
            "{}",
            app.name
        );
    }
}

fn deadline_fails_the_run() {
    let s = Scratch::new("am-deadline", |v| {
        fast_scenario(v);
        v["scenario"]["settle_ms"] = 10_000.into();
    });
    let start = Instant::now();
    let out = run(&s, Duration::from_millis(300), |_, _| {});
    let err = out.result.unwrap_err().to_string();
    assert!(err.contains("deadline_s"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(of_type(&out.events, "switch").is_empty());
}
