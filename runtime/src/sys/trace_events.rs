//! `trace.txt`: the tracepoints listed in spec.json (`metrics.trace_events`,
//! "system/event") recorded over the workload in a tracefs instance of
//! their own, so that nothing else on the system changes what is traced.
//!
//! The instance uses the `mono` trace clock (CLOCK_MONOTONIC), and the
//! file's first line gives the monotonic time at which the workload started
//! (`# start_mono_s=<seconds>`), so that the host can put trace events on the
//! same time axis as vmstat.csv. Events this kernel does not have are listed
//! on the second line (`# missing=a/b,c/d`) and not enabled: the same spec
//! serves kernels with and without the series.
//!
//! A thread copies `trace_pipe` (opened non-blocking) to the file while the
//! workload runs; the per-CPU buffers are large enough for the reclaim
//! tracepoints' rate between two reads, and the instance's
//! `per_cpu/cpu*/stats` overrun counts are appended at the end
//! (`# overrun=<events>`) so that a lost event shows.

use crate::control::{spawn_thread, Control};
use anyhow::{Context, Result};
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const INSTANCE: &str = "instances/pmrtb";
const BUFFER_KB_PER_CPU: &str = "16384";
const POLL: Duration = Duration::from_millis(200);
const DRAIN: Duration = Duration::from_secs(2);

pub struct TraceRecorder {
    instance: PathBuf,
    thread: JoinHandle<()>,
}

/// Split `system/event` names into those the kernel has and those it lacks.
pub fn partition_events(tracefs: &Path, events: &[String]) -> (Vec<String>, Vec<String>) {
    events
        .iter()
        .cloned()
        .partition(|e| tracefs.join("events").join(e).join("enable").exists())
}

/// Sum of `overrun: N` lines of per-CPU stats files.
pub fn overrun(stats: &[String]) -> u64 {
    stats
        .iter()
        .flat_map(|s| s.lines())
        .filter_map(|l| l.strip_prefix("overrun:"))
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .sum()
}

fn monotonic_s() -> f64 {
    crate::sys::monotonic().as_secs_f64()
}

fn write(path: &Path, value: &str) -> Result<()> {
    fs::write(path, value).with_context(|| format!("cannot write {value:?} to {}", path.display()))
}

impl TraceRecorder {
    /// Create the instance, enable the events and start copying. `Ok(None)`
    /// when the spec lists no events.
    pub fn start(
        tracefs: &Path,
        events: &[String],
        out: &Path,
        control: &Arc<Control>,
    ) -> Result<Option<TraceRecorder>> {
        if events.is_empty() {
            return Ok(None);
        }
        let instance = tracefs.join(INSTANCE);
        if instance.exists() {
            // Left over by a runtime that did not finish: start clean.
            let _ = fs::remove_dir(&instance);
        }
        fs::create_dir(&instance)
            .with_context(|| format!("cannot create tracefs instance {}", instance.display()))?;
        write(&instance.join("trace_clock"), "mono")?;
        write(&instance.join("buffer_size_kb"), BUFFER_KB_PER_CPU)?;
        let (present, missing) = partition_events(tracefs, events);
        let mut file = BufWriter::new(
            File::create(out).with_context(|| format!("cannot create {}", out.display()))?,
        );
        writeln!(file, "# start_mono_s={:.6}", monotonic_s())?;
        writeln!(file, "# missing={}", missing.join(","))?;
        for e in &present {
            write(&instance.join("events").join(e).join("enable"), "1")?;
        }
        let mut pipe = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(instance.join("trace_pipe"))
            .context("cannot open the instance's trace_pipe")?;
        let control_for_thread = Arc::clone(control);
        let thread = spawn_thread(control, "trace", move || {
            if let Err(e) = copy(&mut pipe, &mut file, &control_for_thread) {
                control_for_thread.fail(format!("trace recorder: {e:#}"));
            }
        })?;
        Ok(Some(TraceRecorder { instance, thread }))
    }

    /// After `control.stop()`: wait for the copy, note overruns, remove the
    /// instance (which disables its events).
    pub fn finish(self, out: &Path) -> Result<()> {
        let _ = self.thread.join();
        let stats: Vec<String> = fs::read_dir(self.instance.join("per_cpu"))
            .map(|dirs| {
                dirs.flatten()
                    .filter_map(|d| fs::read_to_string(d.path().join("stats")).ok())
                    .collect()
            })
            .unwrap_or_default();
        let mut file = OpenOptions::new().append(true).open(out)?;
        writeln!(file, "# overrun={}", overrun(&stats))?;
        write(&self.instance.join("tracing_on"), "0")?;
        fs::remove_dir(&self.instance)
            .with_context(|| format!("cannot remove {}", self.instance.display()))
    }
}

fn copy(pipe: &mut File, file: &mut BufWriter<File>, control: &Control) -> Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    let mut stopped_at = None;
    loop {
        // Drain what the workload left, but do not chase a kernel that
        // keeps tracing after it.
        if control.stopped()
            && *stopped_at.get_or_insert_with(Instant::now) + DRAIN < Instant::now()
        {
            break;
        }
        match pipe.read(&mut buf) {
            Ok(0) => std::thread::sleep(POLL),
            Ok(n) => file.write_all(&buf[..n])?,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if control.stopped() {
                    break;
                }
                file.flush()?;
                std::thread::sleep(POLL);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("cannot read trace_pipe"),
        }
    }
    file.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_overruns_of_every_cpu() {
        let cpu0 = "entries: 10\noverrun: 3\ncommit overrun: 0\n".to_string();
        let cpu1 = "entries: 1\noverrun: 4\n".to_string();
        assert_eq!(overrun(&[cpu0, cpu1]), 7);
        assert_eq!(overrun(&[]), 0);
    }

    #[test]
    fn splits_events_by_presence() {
        let dir = std::env::temp_dir().join(format!("pmr-trace-test-{}", std::process::id()));
        let have = dir.join("events/vmscan/mm_vmscan_kswapd_wake");
        fs::create_dir_all(&have).unwrap();
        fs::write(have.join("enable"), "0").unwrap();
        let events = vec![
            "vmscan/mm_vmscan_kswapd_wake".to_string(),
            "vmscan/mm_vmscan_kshrinkd_round".to_string(),
        ];
        let (present, missing) = partition_events(&dir, &events);
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(present, vec!["vmscan/mm_vmscan_kswapd_wake"]);
        assert_eq!(missing, vec!["vmscan/mm_vmscan_kshrinkd_round"]);
    }
}
