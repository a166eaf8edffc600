//! `events.jsonl`: one JSON object per line, `t_ms` since the workload
//! started. Shared by the activity manager and lmkd; every event is flushed
//! at once so a crash loses nothing that happened before it.

use crate::lmkd::decision::{KillReason, Level};
use crate::lmkd::eoom::Score;
use crate::spec::SkewAdvice;
use crate::workload::ice::{FreezeCause, ThawCause};
use crate::workload::swam::SwapFileAction;
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    BackgroundLaunch,
    Settle,
    Switching,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchKind {
    Hot,
    Cold,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event<'a> {
    Phase {
        phase: Phase,
    },
    Switch {
        round: u32,
        index: u32,
        app: &'a str,
        kind: LaunchKind,
        response_ms: f64,
        from: Option<&'a str>,
        /// What the launch cost its slowest process (launch_cost.rs).
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        cost: BTreeMap<String, f64>,
        /// Ice thawed the app's cgroup in the launch: how long that took,
        /// ms (part of response_ms).
        #[serde(skip_serializing_if = "Option::is_none")]
        thaw_ms: Option<f64>,
    },
    Launch {
        app: &'a str,
        kind: LaunchKind,
        response_ms: f64,
        role: &'static str,
        /// As for a switch.
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        cost: BTreeMap<String, f64>,
        /// As for a switch.
        #[serde(skip_serializing_if = "Option::is_none")]
        thaw_ms: Option<f64>,
    },
    Kill {
        app: &'a str,
        pid: i32,
        adj: i32,
        rss_kb: i64,
        level: Level,
        reason: KillReason,
        min_adj: i32,
        thrashing: i64,
        /// With Ice+'s `spare_swapped`: candidates passed over because
        /// their app held swap.
        #[serde(skip_serializing_if = "Option::is_none")]
        spared: Option<u32>,
        /// With SWAM's EOOM: `launch_adj` and `relaunch_ms` (null if the
        /// app's cost is unknown).
        #[serde(flatten)]
        eoom: Option<Score>,
    },
    AppDied {
        app: &'a str,
        pid: i32,
    },
    /// Skew rectification advised the anonymous pages `app` left unused
    /// while in front (workload/unused_anon.rs), as it left the front.
    SkewPageout {
        app: &'a str,
        /// Private anonymous pages in RAM marked idle as it came to the
        /// front, summed over its processes.
        marked_pages: u64,
        /// Those pages still idle as it left.
        idle_pages: u64,
        /// What process_madvise advised, bytes.
        advised_bytes: u64,
        /// Wall time of the advice, from reading its pages to the last
        /// process_madvise.
        ms: f64,
        /// CPU time of the thread that advised, user and system: under
        /// MADV_PAGEOUT it holds the reclaim of the pages advised, zram's
        /// compression with it.
        cpu_ms: f64,
        advice: SkewAdvice,
    },
    /// Ice froze `app`'s cgroup (workload/ice.rs).
    IceFreeze {
        app: &'a str,
        cause: FreezeCause,
    },
    /// Ice thawed `app`'s cgroup after `frozen_ms` frozen.
    IceThaw {
        app: &'a str,
        cause: ThawCause,
        frozen_ms: f64,
    },
    /// An MDT epoch started with frozen apps: they stay frozen for
    /// `freeze_ms` (E_f, from Eq. 1 with these figures).
    IceEpoch {
        freeze_ms: f64,
        available_kb: i64,
        high_wm_kb: i64,
    },
    /// Ice thawed every app at the end of the run: `frozen` app cgroups
    /// still read frozen.
    IceEnd {
        frozen: usize,
    },
    /// SWAM's daemon added or removed a swap file (workload/swam.rs):
    /// `files` in use after it, the spare memory that decided it, and how
    /// long the add (fallocate, mkswap, swapon) or the remove (swapoff,
    /// unlink) took.
    SwamSwapfile {
        action: SwapFileAction,
        files: u32,
        spare_kb: i64,
        ms: f64,
    },
    /// The run ended with `files` swap files in use, at most
    /// `max_files_used` at once.
    SwamEnd {
        files: u32,
        max_files_used: u32,
    },
    /// SWAM's OOM cleaner swap-cleaned process `pid` of `app` before a
    /// kill for low swap (lmkd/cleaner.rs): the pages the kernel dropped
    /// (vmstat's swap_clean), SwapFree right after, how long it took, and
    /// whether swap was relieved then (lmkd then killed nobody).
    SwamClean {
        app: &'a str,
        pid: i32,
        pages: i64,
        swap_free_kb_after: i64,
        ms: f64,
        relieved: bool,
    },
}

#[derive(Serialize)]
struct Record<'a> {
    t_ms: u64,
    #[serde(flatten)]
    event: &'a Event<'a>,
}

pub struct EventLog {
    start: Instant,
    /// `start` on CLOCK_MONOTONIC, for the app processes (`start_monotonic`).
    start_mono: Duration,
    out: Mutex<BufWriter<File>>,
    switches: AtomicU64,
    kills: AtomicU64,
}

impl EventLog {
    pub fn create(path: &Path, start: Instant) -> Result<EventLog> {
        let file =
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(EventLog {
            start,
            start_mono: crate::sys::monotonic().saturating_sub(start.elapsed()),
            out: Mutex::new(BufWriter::new(file)),
            switches: AtomicU64::new(0),
            kills: AtomicU64::new(0),
        })
    }

    pub fn log(&self, event: &Event<'_>) -> Result<()> {
        match event {
            Event::Switch { .. } => self.switches.fetch_add(1, Ordering::Relaxed),
            Event::Kill { .. } => self.kills.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        let line = to_line(self.elapsed_ms(), event);
        let mut out = self.out.lock().expect("event log lock");
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .context("cannot write events.jsonl")
    }

    /// When the workload started, on CLOCK_MONOTONIC: how other processes
    /// (the apps, for ticks.csv) put their times on this log's clock.
    pub fn start_monotonic(&self) -> Duration {
        self.start_mono
    }

    /// Workload time, the `t_ms` of an event logged now.
    pub fn elapsed_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    pub fn switches(&self) -> u64 {
        self.switches.load(Ordering::Relaxed)
    }

    pub fn kills(&self) -> u64 {
        self.kills.load(Ordering::Relaxed)
    }
}

fn to_line(t_ms: u64, event: &Event<'_>) -> String {
    serde_json::to_string(&Record { t_ms, event }).expect("events serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_match_the_documented_shapes() {
        let switch = Event::Switch {
            round: 0,
            index: 3,
            app: "chrome",
            kind: LaunchKind::Hot,
            response_ms: 812.4,
            from: Some("youtube"),
            cost: BTreeMap::from([
                ("heap_ms".to_string(), 800.5),
                ("wall_ms".to_string(), 812.0),
            ]),
            thaw_ms: None,
        };
        assert_eq!(
            to_line(1234, &switch),
            r#"{"t_ms":1234,"type":"switch","round":0,"index":3,"app":"chrome","kind":"hot","response_ms":812.4,"from":"youtube","cost":{"heap_ms":800.5,"wall_ms":812.0}}"#
        );
        let phase = Event::Phase {
            phase: Phase::BackgroundLaunch,
        };
        assert_eq!(
            to_line(0, &phase),
            r#"{"t_ms":0,"type":"phase","phase":"background_launch"}"#
        );
        let kill = Event::Kill {
            app: "firefox",
            pid: 123,
            adj: 950,
            rss_kb: 40000,
            level: Level::Medium,
            reason: KillReason::LowSwapAndThrashing,
            min_adj: 201,
            thrashing: 130,
            spared: None,
            eoom: None,
        };
        assert_eq!(
            to_line(5, &kill),
            r#"{"t_ms":5,"type":"kill","app":"firefox","pid":123,"adj":950,"rss_kb":40000,"level":"medium","reason":"low_swap_and_thrashing","min_adj":201,"thrashing":130}"#
        );
        let died = Event::AppDied {
            app: "firefox",
            pid: 123,
        };
        assert_eq!(
            to_line(6, &died),
            r#"{"t_ms":6,"type":"app_died","app":"firefox","pid":123}"#
        );
        let pageout = Event::SkewPageout {
            app: "chrome",
            marked_pages: 30000,
            idle_pages: 12000,
            advised_bytes: 49152000,
            ms: 8.25,
            cpu_ms: 6.5,
            advice: SkewAdvice::Pageout,
        };
        assert_eq!(
            to_line(7, &pageout),
            r#"{"t_ms":7,"type":"skew_pageout","app":"chrome","marked_pages":30000,"idle_pages":12000,"advised_bytes":49152000,"ms":8.25,"cpu_ms":6.5,"advice":"pageout"}"#
        );
    }

    #[test]
    fn ice_lines_match_the_documented_shapes() {
        let cases = [
            (
                Event::IceFreeze {
                    app: "whatsapp",
                    cause: FreezeCause::RpfUser,
                },
                r#"{"t_ms":9,"type":"ice_freeze","app":"whatsapp","cause":"rpf_user"}"#,
            ),
            (
                Event::IceThaw {
                    app: "whatsapp",
                    cause: ThawCause::Launch,
                    frozen_ms: 16000.5,
                },
                r#"{"t_ms":9,"type":"ice_thaw","app":"whatsapp","cause":"launch","frozen_ms":16000.5}"#,
            ),
            (
                Event::IceEpoch {
                    freeze_ms: 32000.0,
                    available_kb: 20000,
                    high_wm_kb: 30000,
                },
                r#"{"t_ms":9,"type":"ice_epoch","freeze_ms":32000.0,"available_kb":20000,"high_wm_kb":30000}"#,
            ),
            (
                Event::IceEnd { frozen: 0 },
                r#"{"t_ms":9,"type":"ice_end","frozen":0}"#,
            ),
            (
                Event::Launch {
                    app: "chrome",
                    kind: LaunchKind::Hot,
                    response_ms: 50.0,
                    role: "background_use",
                    cost: BTreeMap::new(),
                    thaw_ms: Some(1.25),
                },
                r#"{"t_ms":9,"type":"launch","app":"chrome","kind":"hot","response_ms":50.0,"role":"background_use","thaw_ms":1.25}"#,
            ),
            (
                Event::Kill {
                    app: "firefox",
                    pid: 1,
                    adj: 900,
                    rss_kb: 4,
                    level: Level::Critical,
                    reason: KillReason::NotResponding,
                    min_adj: 0,
                    thrashing: 0,
                    spared: Some(2),
                    eoom: None,
                },
                r#"{"t_ms":9,"type":"kill","app":"firefox","pid":1,"adj":900,"rss_kb":4,"level":"critical","reason":"not_responding","min_adj":0,"thrashing":0,"spared":2}"#,
            ),
        ];
        for (event, line) in cases {
            assert_eq!(to_line(9, &event), line);
        }
    }

    #[test]
    fn swam_lines_match_the_documented_shapes() {
        let kill = |score| Event::Kill {
            app: "whatsapp",
            pid: 7,
            adj: 900,
            rss_kb: 4,
            level: Level::Medium,
            reason: KillReason::LowSwapAndThrashing,
            min_adj: 201,
            thrashing: 130,
            spared: None,
            eoom: Some(score),
        };
        let cases = [
            (
                Event::SwamSwapfile {
                    action: SwapFileAction::Add,
                    files: 3,
                    spare_kb: 9000,
                    ms: 41.5,
                },
                r#"{"t_ms":9,"type":"swam_swapfile","action":"add","files":3,"spare_kb":9000,"ms":41.5}"#,
            ),
            (
                Event::SwamSwapfile {
                    action: SwapFileAction::Remove,
                    files: 2,
                    spare_kb: 50000,
                    ms: 1200.25,
                },
                r#"{"t_ms":9,"type":"swam_swapfile","action":"remove","files":2,"spare_kb":50000,"ms":1200.25}"#,
            ),
            (
                Event::SwamEnd {
                    files: 2,
                    max_files_used: 5,
                },
                r#"{"t_ms":9,"type":"swam_end","files":2,"max_files_used":5}"#,
            ),
            (
                Event::SwamClean {
                    app: "whatsapp",
                    pid: 7,
                    pages: 512,
                    swap_free_kb_after: 81000,
                    ms: 1.25,
                    relieved: true,
                },
                r#"{"t_ms":9,"type":"swam_clean","app":"whatsapp","pid":7,"pages":512,"swap_free_kb_after":81000,"ms":1.25,"relieved":true}"#,
            ),
            (
                kill(Score {
                    launch_adj: 37,
                    relaunch_ms: Some(120.5),
                }),
                r#"{"t_ms":9,"type":"kill","app":"whatsapp","pid":7,"adj":900,"rss_kb":4,"level":"medium","reason":"low_swap_and_thrashing","min_adj":201,"thrashing":130,"launch_adj":37,"relaunch_ms":120.5}"#,
            ),
            (
                kill(Score {
                    launch_adj: 0,
                    relaunch_ms: None,
                }),
                r#"{"t_ms":9,"type":"kill","app":"whatsapp","pid":7,"adj":900,"rss_kb":4,"level":"medium","reason":"low_swap_and_thrashing","min_adj":201,"thrashing":130,"launch_adj":0,"relaunch_ms":null}"#,
            ),
        ];
        for (event, line) in cases {
            assert_eq!(to_line(9, &event), line);
        }
    }

    #[test]
    fn counts_switches_and_kills() {
        let dir = std::env::temp_dir().join(format!("pmr-events-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = EventLog::create(&dir.join("events.jsonl"), Instant::now()).unwrap();
        log.log(&Event::AppDied { app: "a", pid: 1 }).unwrap();
        log.log(&Event::Launch {
            app: "a",
            kind: LaunchKind::Cold,
            response_ms: 1.0,
            role: "background",
            cost: BTreeMap::new(),
            thaw_ms: None,
        })
        .unwrap();
        assert_eq!((log.switches(), log.kills()), (0, 0));
        let text = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 2);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
