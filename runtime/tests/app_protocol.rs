//! End-to-end test of an app process on the host: fork it from the zygote
//! the way the activity manager does (regular files stand in for the
//! cgroups' `cgroup.procs`), drive it through the line protocol, kill it.

mod common;

use common::Scratch;
use pmr_guest::workload::app_process::{AppProcess, Reply};
use pmr_guest::workload::protocol::Command;
use pmr_guest::workload::zygote::Zygote;
use std::time::{Duration, Instant};

fn await_reply(p: &mut AppProcess) -> Reply {
    let start = Instant::now();
    loop {
        match p.poll_reply(Duration::from_millis(50)).unwrap() {
            Reply::Pending if start.elapsed() < Duration::from_secs(20) => continue,
            reply => return reply,
        }
    }
}

/// The names of the costs on a `ready` reply, checked: none negative, and
/// the steps (`*_ms` before `wall_ms`) within the wall time. Panics on
/// another reply.
fn cost_names(reply: Reply) -> Vec<String> {
    let Reply::Ready(costs) = reply else {
        panic!("{reply:?} instead of ready");
    };
    assert!(costs.iter().all(|(_, v)| *v >= 0.0), "{costs:?}");
    if let Some(at) = costs.iter().position(|(n, _)| n == "wall_ms") {
        let steps: f64 = costs[..at].iter().map(|(_, v)| v).sum();
        assert!(steps <= costs[at].1 + 0.01, "{costs:?}");
    }
    costs.into_iter().map(|(name, _)| name).collect()
}

fn reap(pid: i32) -> i32 {
    let mut status = 0;
    // SAFETY: plain waitpid on our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    status
}

fn spawn(s: &Scratch, zygote: &mut Zygote, app: &str, index: u32) -> AppProcess {
    let procs = s.dir.join("cgroup.procs");
    std::fs::write(&procs, "").unwrap();
    let clock = pmr_guest::sys::monotonic();
    zygote.fork_app(app, index, &s.dir, clock).unwrap()
}

/// kB of `field` summed over the mappings of `pid` (/proc/PID/smaps) that
/// `keep` selects by their own fields.
fn smaps_kb(pid: i32, keep: impl Fn(&str) -> bool, field: &str) -> u64 {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let mut total = 0;
    let mut mapping = String::new();
    let mut flush = |mapping: &str| {
        if !mapping.is_empty() && keep(mapping) {
            let line = mapping.lines().find(|l| l.starts_with(field)).unwrap();
            total += line
                .split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<u64>()
                .unwrap();
        }
    };
    for line in smaps.lines() {
        // A mapping's header line starts with its address range.
        if line
            .split_whitespace()
            .next()
            .is_some_and(|w| w.contains('-') && !w.ends_with(':'))
        {
            flush(&mapping);
            mapping.clear();
        }
        mapping.push_str(line);
        mapping.push('\n');
    }
    flush(&mapping);
    total
}

#[test]
fn app_process_serves_cold_hot_fg_bg_and_dies_by_sigkill() {
    let s = Scratch::new("serve", |v| v["apps"][1]["launch_threads"] = 3.into());
    let mut zygote = s.zygote();
    let mut p = spawn(&s, &mut zygote, "youtube", 1);
    // A launch reports its steps and where its time went; fg and bg nothing.
    // and a cold launch what its heap's fill threads spent
    let split = ["wall_ms", "user_ms", "sys_ms", "runq_ms", "major_faults"];
    let fill = [
        "fill_threads",
        "fill_wall_ms",
        "fill_user_ms",
        "fill_sys_ms",
        "fill_runq_ms",
        "fill_major_faults",
    ];
    let expected = [
        (
            Command::Cold,
            vec!["files_ms", "init_ms", "heap_ms"],
            &fill[..],
        ),
        (Command::Hot, vec!["heap_ms", "files_ms"], &[]),
        (Command::Fg, vec![], &[]),
    ];
    for (command, steps, after) in expected {
        assert!(p.send(command));
        let names = cost_names(await_reply(&mut p));
        let mut want: Vec<&str> = steps.clone();
        if !steps.is_empty() {
            want.extend(split.iter().chain(after));
        }
        // the run-queue figures only where the host kernel has schedstat
        if !names.iter().any(|m| m == "runq_ms") {
            want.retain(|n| !n.ends_with("runq_ms"));
        }
        assert_eq!(names, want, "{command:?}");
    }
    let procs = std::fs::read_to_string(s.dir.join("cgroup.procs")).unwrap();
    assert_eq!(procs, "0", "the child joined its cgroup");
    std::thread::sleep(Duration::from_millis(400)); // foreground work and growth run
    assert!(p.send(Command::Bg));
    assert!(cost_names(await_reply(&mut p)).is_empty());
    // a hot launch while the activity thread runs in the background
    assert!(p.send(Command::Hot));
    assert!(cost_names(await_reply(&mut p)).starts_with(&["heap_ms".into(), "files_ms".into()]));
    // SAFETY: plain kill of our own child.
    assert_eq!(unsafe { libc::kill(p.pid, libc::SIGKILL) }, 0);
    assert_eq!(await_reply(&mut p), Reply::Gone);
    let status = reap(p.pid);
    assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
}

/// Frames while in front, background periods behind, both in ticks.csv
/// on the clock the process was given.
#[test]
fn app_process_logs_frames_and_background_periods() {
    let s = Scratch::new("ticks", |v| {
        v["apps"][0]["frame"] = serde_json::json!({"period_ms": 5, "work_ms": 0.5, "touch_mb": 1});
        v["apps"][0]["bg_touch"] = serde_json::json!({"period_ms": 20, "mb": 1, "cpu_ms": 1});
    });
    let mut zygote = s.zygote();
    let clock = pmr_guest::sys::monotonic();
    let mut p = spawn(&s, &mut zygote, "chrome", 0);
    for command in [Command::Cold, Command::Fg] {
        assert!(p.send(command));
        let names = cost_names(await_reply(&mut p));
        // one thread fills chrome's heap, the launch's own: no fill figures
        assert!(!names.iter().any(|n| n.starts_with("fill_")), "{names:?}");
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(p.send(Command::Bg));
    cost_names(await_reply(&mut p));
    let ticks = s.dir.join("ticks.csv");
    let frames_at_bg = std::fs::read_to_string(&ticks)
        .unwrap()
        .lines()
        .filter(|l| l.contains(",frame,"))
        .count();
    assert!(frames_at_bg >= 5, "{frames_at_bg} frame rows written at bg");
    std::thread::sleep(Duration::from_millis(500));
    let elapsed_ms = (pmr_guest::sys::monotonic() - clock).as_secs_f64() * 1e3;
    // SAFETY: plain kill of our own child.
    assert_eq!(unsafe { libc::kill(p.pid, libc::SIGKILL) }, 0);
    reap(p.pid);
    zygote.stop();

    let text = std::fs::read_to_string(&ticks).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("t_ms,app,pid,kind,dur_ms,late"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let count = |kind: &str| rows.iter().filter(|r| r[3] == kind).count();
    assert_eq!(count("frame"), frames_at_bg, "no frame after bg");
    assert!(count("bg") >= 5, "{text}");
    for r in &rows {
        assert_eq!(
            (r.len(), r[1], r[2]),
            (6, "chrome", p.pid.to_string().as_str())
        );
        let t: f64 = r[0].parse().unwrap();
        let dur: f64 = r[4].parse().unwrap();
        assert!(t > 0.0 && t <= elapsed_ms && dur >= 0.0, "{r:?}");
        let period = if r[3] == "frame" { 5.0 } else { 20.0 };
        assert_eq!(r[5], if dur > period { "1" } else { "0" }, "{r:?}");
    }
}

#[test]
fn app_process_fails_on_a_protocol_error() {
    let s = Scratch::new("misuse", |_| {});
    let mut zygote = s.zygote();
    let mut p = spawn(&s, &mut zygote, "chrome", 0);
    assert!(p.send(Command::Hot), "hot before cold");
    assert_eq!(await_reply(&mut p), Reply::Gone);
    let status = reap(p.pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 1);
}

/// The app writes its heap in the mapping it inherited from the zygote,
/// where the zygote's preload (1 MB in the fixture) is shared with it.
#[test]
fn app_process_writes_its_heap_beside_the_zygotes_shared_pages() {
    let s = Scratch::new("zygote", |_| {});
    let mut zygote = s.zygote();
    let mut p = spawn(&s, &mut zygote, "chrome", 0);
    assert!(p.send(Command::Cold));
    cost_names(await_reply(&mut p));
    // The one anonymous mapping that holds both the preload and the heap.
    let shared_and_private = |m: &str| {
        let kb = |f: &str| {
            let line = m.lines().find(|l| l.starts_with(f)).unwrap();
            line.split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<u64>()
                .unwrap()
        };
        kb("Shared_Dirty:") >= 1024 && kb("Private_Dirty:") > 0
    };
    let heap_kb = smaps_kb(p.pid, shared_and_private, "Private_Dirty:");
    let shared_kb = smaps_kb(p.pid, shared_and_private, "Shared_Dirty:");
    assert!(
        shared_kb >= 1024,
        "the zygote's 1 MB is not shared: {shared_kb} kB"
    );
    // The fixture's chrome writes 4 MB x launch_fraction at its launch.
    assert!(
        heap_kb >= 256,
        "the heap is not in the zygote's mapping: {heap_kb} kB"
    );
    // SAFETY: plain kill of our own children.
    assert_eq!(unsafe { libc::kill(p.pid, libc::SIGKILL) }, 0);
    reap(p.pid);
    zygote.stop();
}
