//! `pmr-guest run`: setup, then the workload with its threads (lmkd, with
//! SWAM's EOOM order and OOM cleaner if the scheme has them, the metrics
//! sampler, the child reaper, skew rectification's pageout worker and
//! swappiness loop, Ice's heartbeat and SWAM's swap-file daemon if the
//! scheme has them) around the activity manager, then the result files.
//!
//! Exit status: 2 with one line `pmr-guest: error: ...` for anything that
//! fails before the workload starts; after that, run.json is always
//! written, with status "failed" and exit 1 if the run failed.

use crate::control::Control;
use crate::events::EventLog;
use crate::lmkd::cleaner::Cleaner;
use crate::lmkd::eoom::{Eoom, RelaunchCosts};
use crate::lmkd::proc_registry::ProcRegistry;
use crate::lmkd::wakeup_log::WakeupLog;
use crate::lmkd::Lmkd;
use crate::metrics;
use crate::setup::{self, Phone};
use crate::spec::{ms, Spec};
use crate::sys;
use crate::sys::kthread_sched::Applied;
use crate::sys::threads_cpu::{self, ThreadTicks};
use crate::sys::trace_events::TraceRecorder;
use crate::sys::tracefs::{self, SwapWriteHist, SwapWriteHistFile};
use crate::workload::activity_manager::{self, ActivityManager};
use crate::workload::anon_file_balance;
use crate::workload::app_files::DATA_MOUNT;
use crate::workload::child_reaper;
use crate::workload::ice::Ice;
use crate::workload::swam;
use crate::workload::ticks;
use crate::workload::unused_anon::{idle_bitmap, UnusedAnon};
use crate::workload::zygote::Zygote;

const TRACE_FILE: &str = "trace.txt";
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

pub fn main(spec_path: &Path) -> ExitCode {
    let prepared = Spec::load(spec_path).and_then(|spec| {
        let exe = std::env::current_exe().context("cannot find the pmr-guest binary")?;
        let phone = setup::prepare(&spec)?;
        // The app processes the zygote forks are reparented here.
        sys::set_child_subreaper().context("prctl(PR_SET_CHILD_SUBREAPER) failed")?;
        let cgroup = phone.cgroups.sibling("zygote")?;
        let zygote = Zygote::start(&exe, spec_path, Path::new(DATA_MOUNT), &cgroup)?;
        // As Android's init does for its services: lmkd and the OOM killer
        // leave the zygote alone (an app's adj is set once it is forked).
        let adj = format!("/proc/{}/oom_score_adj", zygote.pid);
        if let Err(e) = std::fs::write(&adj, "-1000") {
            zygote.stop();
            return Err(e).with_context(|| format!("cannot write {adj}"));
        }
        Ok((spec, phone, zygote))
    });
    let (spec, phone, zygote) = match prepared {
        Ok(p) => p,
        Err(e) => return setup_error(&e),
    };
    match Workload::start(&spec, &phone) {
        Ok(workload) => workload.run(zygote),
        Err(e) => {
            zygote.stop();
            setup_error(&e)
        }
    }
}

fn setup_error(e: &anyhow::Error) -> ExitCode {
    eprintln!("pmr-guest: error: {}", format!("{e:#}").replace('\n', "; "));
    ExitCode::from(2)
}

#[derive(Serialize)]
struct RunRecord<'a> {
    status: &'static str,
    error: Option<String>,
    run_id: &'a str,
    scheme: &'a str,
    scenario: &'a str,
    kernel: &'a str,
    knobs: &'a BTreeMap<String, String>,
    kthreads: &'a [Applied],
    mem_total_kb: i64,
    swap_total_kb: i64,
    swap_dev: &'a str,
    started_at: String,
    workload_s: f64,
    switches: u64,
    kills: u64,
    swap_write_hist_error: Option<String>,
}

struct Workload<'a> {
    spec: &'a Spec,
    phone: &'a Phone,
    start: Instant,
    started_at: SystemTime,
    events: Arc<EventLog>,
    registry: Arc<ProcRegistry>,
    control: Arc<Control>,
    deaths: Receiver<child_reaper::Death>,
    threads: Vec<JoinHandle<()>>,
    hist: Result<SwapWriteHist, String>,
    trace: Option<TraceRecorder>,
    threads_at_start: ThreadTicks,
    unused_anon: Option<UnusedAnon>,
    ice: Option<Ice>,
    relaunch_costs: Option<Arc<RelaunchCosts>>,
}

impl<'a> Workload<'a> {
    /// Lock the runtime in memory and start its threads.
    fn start(spec: &'a Spec, phone: &'a Phone) -> Result<Workload<'a>> {
        let (major, minor) = phone.swap_dev_number;
        let tracefs = tracefs::mount_dir()?;
        let hist = SwapWriteHist::install(&tracefs, major, minor).map_err(|e| format!("{e:#}"));
        sys::mlockall().context("mlockall(MCL_CURRENT | MCL_FUTURE) failed: run as root")?;

        let start = Instant::now();
        let started_at = SystemTime::now();
        let events = Arc::new(EventLog::create(&spec.out_dir.join("events.jsonl"), start)?);
        // The app processes append their rows (frames, background periods).
        ticks::create(&spec.out_dir)?;
        let registry = Arc::new(ProcRegistry::default());
        let control = Arc::new(Control::default());
        let trace = TraceRecorder::start(
            &tracefs,
            &spec.metrics.trace_events,
            &spec.out_dir.join(TRACE_FILE),
            &control,
        )?;
        let swam_scheme = spec.scheme.swam.as_ref();
        let eoom = swam_scheme.and_then(|s| s.eoom.as_ref()).map(|e| Eoom {
            launch_adj_max: e.launch_adj_max,
            costs: Arc::new(RelaunchCosts::default()),
        });
        let relaunch_costs = eoom.as_ref().map(|e| e.costs.clone());
        // A kernel without MADV_SWAPCLEAN fails here, before the workload.
        let cleaner = swam_scheme
            .and_then(|s| s.cleaner.as_ref())
            .map(|_| Cleaner::new(Path::new(DATA_MOUNT)))
            .transpose()?;
        let lmkd = Lmkd::new(
            &spec.lmkd,
            registry.clone(),
            events.clone(),
            control.clone(),
            WakeupLog::create(&spec.out_dir.join("lmkd.csv"))?,
            spec.scheme
                .ice
                .as_ref()
                .filter(|i| i.spare_swapped)
                .map(|_| phone.cgroups.group_dir()),
            eoom,
            cleaner,
        )?;
        let threads_at_start = threads_cpu::read(&spec.metrics.reclaim_threads);
        let sampler = metrics::spawn(
            &spec.out_dir,
            &phone.swap_dev,
            phone.zram_dev.as_deref(),
            &threads_at_start,
            ms(spec.metrics.interval_ms),
            start,
            control.clone(),
        )?;
        let apps: Vec<&str> = spec.apps.iter().map(|a| a.name.as_str()).collect();
        let app_memcg = metrics::app_memcg::spawn(
            &spec.out_dir,
            &phone.cgroups.group_dir(),
            &apps,
            start,
            control.clone(),
        )?;
        let (reaper, deaths) = child_reaper::spawn(registry.clone(), control.clone())?;
        let mut threads = vec![lmkd.spawn()?, sampler, app_memcg, reaper];
        let skew = spec.scheme.skew.as_ref();
        if let Some(balance) = skew.and_then(|s| s.balance.as_ref()) {
            threads.push(anon_file_balance::spawn(
                balance,
                &spec.out_dir,
                start,
                control.clone(),
            )?);
        }
        if let Some(swapd) = swam_scheme.and_then(|s| s.swapd.as_ref()) {
            threads.push(swam::spawn(swapd, events.clone(), control.clone())?);
        }
        let unused_anon = skew
            .map(|s| {
                let bitmap = Path::new(idle_bitmap::PATH);
                UnusedAnon::start(s, spec, bitmap, events.clone(), &control)
            })
            .transpose()?;
        let ice = spec
            .scheme
            .ice
            .as_ref()
            .map(|_| {
                let apps_cgroup = phone.cgroups.group_dir();
                Ice::start(
                    spec,
                    &apps_cgroup,
                    Path::new("/proc"),
                    events.clone(),
                    &control,
                )
            })
            .transpose()?;
        Ok(Workload {
            spec,
            phone,
            start,
            started_at,
            events,
            registry,
            control,
            deaths,
            threads,
            hist,
            trace,
            threads_at_start,
            unused_anon,
            ice,
            relaunch_costs,
        })
    }

    fn run(self, zygote: Zygote) -> ExitCode {
        let spec = self.spec;
        let mut manager = ActivityManager::new(activity_manager::Resources {
            spec,
            zygote,
            apps_cgroup: self.phone.cgroups.group_dir(),
            registry: self.registry.clone(),
            events: self.events.clone(),
            control: self.control.clone(),
            deaths: self.deaths,
            deadline: self.start + Duration::from_secs_f64(spec.deadline_s),
            unused_anon: self.unused_anon,
            ice: self.ice,
            relaunch_costs: self.relaunch_costs,
        });
        let mut result = std::panic::catch_unwind(AssertUnwindSafe(|| manager.run()))
            .unwrap_or_else(|_| {
                Err(anyhow::anyhow!(
                    "the activity manager panicked (message in console.log)"
                ))
            });
        let workload_s = self.start.elapsed().as_secs_f64();
        let threads_at_end = threads_cpu::read(&spec.metrics.reclaim_threads);
        manager.shutdown();
        self.control.stop();
        for t in self.threads {
            let _ = t.join();
        }
        if let Some(failure) = self.control.failure() {
            result = result.and(Err(anyhow::anyhow!(failure)));
        }

        let out = &spec.out_dir;
        if let Some(trace) = self.trace {
            result = result.and(trace.finish(&out.join(TRACE_FILE)));
        }
        let cpu = threads_cpu::cpu_seconds(
            &self.threads_at_start,
            &threads_at_end,
            sys::clock_ticks_per_second(),
        );
        result = result.and(write_json(&out.join("threads_cpu.json"), &cpu));
        let hist_error = self
            .hist
            .and_then(|h| finish_hist(&h, &self.phone.swap_dev, out))
            .err();

        let record = RunRecord {
            status: if result.is_ok() { "ok" } else { "failed" },
            error: result.as_ref().err().map(|e| format!("{e:#}")),
            run_id: &spec.run_id,
            scheme: &spec.scheme.name,
            scenario: &spec.scenario.name,
            kernel: &self.phone.kernel,
            knobs: &self.phone.knobs,
            kthreads: &self.phone.kthreads,
            mem_total_kb: self.phone.mem_total_kb,
            swap_total_kb: self.phone.swap_total_kb,
            swap_dev: &self.phone.swap_dev,
            started_at: humantime::format_rfc3339_seconds(self.started_at).to_string(),
            workload_s: (workload_s * 1e3).round() / 1e3,
            switches: self.events.switches(),
            kills: self.events.kills(),
            swap_write_hist_error: hist_error,
        };
        if let Err(e) = write_json(&out.join("run.json"), &record) {
            eprintln!("pmr-guest: error: {e:#}");
            return ExitCode::from(1);
        }
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("pmr-guest: run failed: {e:#}");
                ExitCode::from(1)
            }
        }
    }
}

/// Read the swap write histogram, remove the trigger, write the file.
fn finish_hist(hist: &SwapWriteHist, dev: &str, out: &Path) -> Result<(), String> {
    let bytes = hist.read();
    let removed = hist.remove();
    let file = SwapWriteHistFile {
        dev,
        bytes: bytes.map_err(|e| format!("{e:#}"))?,
    };
    removed.map_err(|e| format!("{e:#}"))?;
    write_json(&out.join("swap_write_hist.json"), &file).map_err(|e| format!("{e:#}"))
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
