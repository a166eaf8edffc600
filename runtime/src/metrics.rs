//! The sampler thread: every `metrics.interval_ms` it appends one row to
//! vmstat.csv (/proc/vmstat, every key in file order), psi.csv
//! (/proc/pressure/memory), meminfo.csv (free memory and swap from
//! /proc/meminfo, kB), diskstat.csv (the swap device's
//! /sys/block/<dev>/stat), threads_cpu.csv and threads_wait.csv (the
//! reclaim threads' CPU seconds since the start, and the seconds they
//! waited for a CPU, threads_cpu.rs) and, when a zram device is
//! swapped on, zram.csv (its /sys/block/<zram>/mm_stat: data stored,
//! compressed and memory used, bytes). Rows are timed from the
//! workload start on a fixed schedule (no drift); files are flushed every
//! second so a crash keeps what was sampled. Each app's memory.stat goes
//! to app_memcg.csv at a slower cadence, from a thread of its own
//! (app_memcg.rs).

pub mod app_memcg;

use crate::control::{spawn_thread, Control};
use crate::sys;
use crate::sys::proc_files::{self, MemInfo, ZramMmStat, DISKSTAT_FIELDS};
use crate::sys::psi::{self, MemoryPressure};
use crate::sys::threads_cpu::{self, ThreadTicks};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const FLUSH_EVERY: Duration = Duration::from_secs(1);

struct Sampler {
    vmstat: BufWriter<File>,
    psi: BufWriter<File>,
    meminfo: BufWriter<File>,
    diskstat: BufWriter<File>,
    threads_cpu: BufWriter<File>,
    threads_wait: BufWriter<File>,
    /// The zram device swapped on and its zram.csv, if any.
    zram: Option<(String, BufWriter<File>)>,
    vmstat_keys: Vec<String>,
    swap_dev: String,
    threads_at_start: ThreadTicks,
    /// threads_cpu::run_delays of threads_at_start, when the sampler starts
    waits_at_start: ThreadTicks,
    thread_names: Vec<String>,
    ticks_per_second: u64,
}

pub fn spawn(
    out_dir: &Path,
    swap_dev: &str,
    zram_dev: Option<&str>,
    threads_at_start: &ThreadTicks,
    interval: Duration,
    start: Instant,
    control: Arc<Control>,
) -> Result<JoinHandle<()>> {
    let create = |name: &str| -> Result<BufWriter<File>> {
        let path = out_dir.join(name);
        Ok(BufWriter::new(File::create(&path).with_context(|| {
            format!("cannot create {}", path.display())
        })?))
    };
    let mut sampler = Sampler {
        vmstat: create("vmstat.csv")?,
        psi: create("psi.csv")?,
        meminfo: create("meminfo.csv")?,
        diskstat: create("diskstat.csv")?,
        threads_cpu: create("threads_cpu.csv")?,
        threads_wait: create("threads_wait.csv")?,
        zram: zram_dev
            .map(|dev| Ok::<_, anyhow::Error>((dev.to_string(), create("zram.csv")?)))
            .transpose()?,
        vmstat_keys: Vec::new(),
        swap_dev: swap_dev.to_string(),
        threads_at_start: threads_at_start.clone(),
        waits_at_start: threads_cpu::run_delays(threads_at_start),
        thread_names: threads_cpu::names(threads_at_start),
        ticks_per_second: sys::clock_ticks_per_second(),
    };
    writeln!(
        sampler.psi,
        "t_ms,some_avg10,some_total_us,full_avg10,full_total_us"
    )?;
    writeln!(
        sampler.meminfo,
        "t_ms,mem_free_kb,mem_available_kb,swap_total_kb,swap_free_kb"
    )?;
    writeln!(sampler.diskstat, "t_ms,dev,{}", DISKSTAT_FIELDS.join(","))?;
    if let Some((_, zram)) = &mut sampler.zram {
        writeln!(zram, "t_ms,orig_data_bytes,compr_data_bytes,mem_used_bytes")?;
    }
    for f in [&mut sampler.threads_cpu, &mut sampler.threads_wait] {
        writeln!(f, "t_ms,{}", sampler.thread_names.join(","))?;
    }
    Ok(spawn_thread(&control.clone(), "sampler", move || {
        if let Err(e) = sampler.run(interval, start, &control) {
            control.fail(format!("metrics sampler: {e:#}"));
        }
    })?)
}

impl Sampler {
    fn run(&mut self, interval: Duration, start: Instant, control: &Control) -> Result<()> {
        let mut next = start;
        let mut last_flush = Instant::now();
        while !control.stopped() {
            self.sample(next.saturating_duration_since(start).as_millis() as u64)?;
            if last_flush.elapsed() >= FLUSH_EVERY {
                self.flush()?;
                last_flush = Instant::now();
            }
            next += interval;
            // If sampling fell behind, skip the missed slots.
            while next < Instant::now() {
                next += interval;
            }
            std::thread::sleep(next - Instant::now());
        }
        self.flush()
    }

    fn sample(&mut self, t_ms: u64) -> Result<()> {
        let vmstat = proc_files::parse_key_values(&std::fs::read_to_string("/proc/vmstat")?)?;
        if self.vmstat_keys.is_empty() {
            self.vmstat_keys = vmstat.iter().map(|(k, _)| k.clone()).collect();
            writeln!(self.vmstat, "t_ms,{}", self.vmstat_keys.join(","))?;
        }
        writeln!(
            self.vmstat,
            "{}",
            vmstat_row(t_ms, &self.vmstat_keys, &vmstat)
        )?;
        writeln!(self.psi, "{}", psi_row(t_ms, &psi::read()?))?;
        let meminfo = proc_files::parse_meminfo(&std::fs::read_to_string("/proc/meminfo")?)?;
        writeln!(self.meminfo, "{}", meminfo_row(t_ms, &meminfo))?;
        let stat = std::fs::read_to_string(format!("/sys/block/{}/stat", self.swap_dev))?;
        writeln!(
            self.diskstat,
            "{}",
            diskstat_row(t_ms, &self.swap_dev, &proc_files::parse_diskstat(&stat)?)
        )?;
        if let Some((dev, out)) = &mut self.zram {
            let path = format!("/sys/block/{dev}/mm_stat");
            let text =
                std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
            writeln!(
                out,
                "{}",
                zram_row(t_ms, &proc_files::parse_zram_mm_stat(&text)?)
            )?;
        }
        let now = threads_cpu::reread(&self.threads_at_start);
        writeln!(
            self.threads_cpu,
            "{}",
            threads_cpu::csv_row(
                t_ms,
                &self.thread_names,
                &self.threads_at_start,
                &now,
                self.ticks_per_second
            )
        )?;
        writeln!(
            self.threads_wait,
            "{}",
            threads_cpu::csv_row(
                t_ms,
                &self.thread_names,
                &self.waits_at_start,
                &threads_cpu::run_delays(&now),
                threads_cpu::RUN_DELAY_PER_SECOND
            )
        )?;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        for f in [
            &mut self.vmstat,
            &mut self.psi,
            &mut self.meminfo,
            &mut self.diskstat,
            &mut self.threads_cpu,
            &mut self.threads_wait,
        ] {
            f.flush().context("cannot write a metrics CSV")?;
        }
        if let Some((_, zram)) = &mut self.zram {
            zram.flush().context("cannot write zram.csv")?;
        }
        Ok(())
    }
}

/// Values in header order; a key missing from this sample stays empty.
fn vmstat_row(t_ms: u64, keys: &[String], sample: &[(String, i64)]) -> String {
    let values: HashMap<&str, i64> = sample.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let mut row = t_ms.to_string();
    for key in keys {
        row.push(',');
        if let Some(v) = values.get(key.as_str()) {
            row.push_str(&v.to_string());
        }
    }
    row
}

fn psi_row(t_ms: u64, p: &MemoryPressure) -> String {
    format!(
        "{t_ms},{},{},{},{}",
        p.some.avg10, p.some.total_us, p.full.avg10, p.full.total_us
    )
}

fn meminfo_row(t_ms: u64, m: &MemInfo) -> String {
    format!(
        "{t_ms},{},{},{},{}",
        m.mem_free, m.mem_available, m.swap_total, m.swap_free
    )
}

fn zram_row(t_ms: u64, z: &ZramMmStat) -> String {
    format!("{t_ms},{},{},{}", z.orig_data, z.compr_data, z.mem_used)
}

fn diskstat_row(t_ms: u64, dev: &str, fields: &[u64; 17]) -> String {
    let values: Vec<String> = fields.iter().map(u64::to_string).collect();
    format!("{t_ms},{dev},{}", values.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::psi::PsiLine;

    #[test]
    fn rows() {
        let keys = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let sample = vec![("b".to_string(), 2), ("a".to_string(), 1)];
        assert_eq!(vmstat_row(100, &keys, &sample), "100,1,2,");
        let p = MemoryPressure {
            some: PsiLine {
                avg10: 1.5,
                total_us: 10,
            },
            full: PsiLine {
                avg10: 0.0,
                total_us: 3,
            },
        };
        assert_eq!(psi_row(200, &p), "200,1.5,10,0,3");
        let m = MemInfo {
            mem_free: 1,
            mem_available: 2,
            swap_total: 3,
            swap_free: 4,
            ..MemInfo::default()
        };
        assert_eq!(meminfo_row(250, &m), "250,1,2,3,4");
        let z = ZramMmStat {
            orig_data: 8192,
            compr_data: 1000,
            mem_used: 4096,
        };
        assert_eq!(zram_row(260, &z), "260,8192,1000,4096");
        let mut f = [0u64; 17];
        f[4] = 9;
        let row = diskstat_row(300, "vdb", &f);
        assert!(row.starts_with("300,vdb,0,0,0,0,9,"));
        assert_eq!(row.split(',').count(), 19);
    }
}
