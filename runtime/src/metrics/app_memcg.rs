//! app_memcg.csv: every `PERIOD`, one row per app with figures of its
//! cgroup's memory.stat (`pmr/apps/<app>`): its memory in bytes and its
//! reclaim and refault counters since the cgroup was made. An app's cgroup
//! lives for the whole run, so the counters run on through its kills and
//! relaunches. The host splits the refaults between the time each app
//! spent in front and behind with events.jsonl.
//!
//! One read of memory.stat per app per period, on a thread of its own and
//! at a cadence of its own: a memory.stat is some fifty lines the kernel
//! sums over CPUs and nodes, too costly to read for every app at the
//! sampler's interval. An app whose memory.stat cannot be read gets no
//! row; a row is timed when its file was read, in seconds on the clock of
//! the other files (workload start).

use crate::control::{spawn_thread, Control};
use crate::sys::memcg_stat::{self, MemoryStat};
use anyhow::{Context, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often every app's memory.stat is read.
pub const PERIOD: Duration = Duration::from_secs(1);
pub const FILE: &str = "app_memcg.csv";
/// The memory.stat keys of a row, in column order.
pub const KEYS: [&str; 6] = [
    "anon",
    "file",
    "pgsteal",
    "pgmajfault",
    "workingset_refault_anon",
    "workingset_refault_file",
];

struct AppMemcg {
    out: BufWriter<File>,
    /// (app, its cgroup directory), in spec order.
    apps: Vec<(String, PathBuf)>,
}

/// Start the thread writing `out_dir/app_memcg.csv` for `apps`, whose
/// cgroups are `apps_cgroup/<app>`; times are seconds since `start`.
pub fn spawn(
    out_dir: &Path,
    apps_cgroup: &Path,
    apps: &[&str],
    start: Instant,
    control: Arc<Control>,
) -> Result<JoinHandle<()>> {
    let path = out_dir.join(FILE);
    let mut out = BufWriter::new(
        File::create(&path).with_context(|| format!("cannot create {}", path.display()))?,
    );
    writeln!(out, "t_s,app,{}", KEYS.join(","))?;
    let mut sampler = AppMemcg {
        out,
        apps: apps
            .iter()
            .map(|a| (a.to_string(), apps_cgroup.join(a)))
            .collect(),
    };
    Ok(spawn_thread(&control.clone(), "app_memcg", move || {
        if let Err(e) = sampler.run(start, &control) {
            control.fail(format!("app memcg sampler: {e:#}"));
        }
    })?)
}

impl AppMemcg {
    fn run(&mut self, start: Instant, control: &Control) -> Result<()> {
        control.every(start, PERIOD, || self.sample(start))?;
        self.out.flush().context("cannot write app_memcg.csv")
    }

    fn sample(&mut self, start: Instant) -> Result<()> {
        for (app, cgroup) in &self.apps {
            let t = start.elapsed();
            // The cgroup may be gone or being removed: no row.
            let Ok(text) = std::fs::read_to_string(cgroup.join("memory.stat")) else {
                continue;
            };
            let stat = memcg_stat::parse(&text)
                .with_context(|| format!("bad {}/memory.stat", cgroup.display()))?;
            writeln!(self.out, "{}", row(t, app, &stat))?;
        }
        self.out.flush().context("cannot write app_memcg.csv")
    }
}

/// `t_s,app,<KEYS>`; a key missing from memory.stat stays empty.
fn row(t: Duration, app: &str, stat: &MemoryStat) -> String {
    let mut row = format!("{:.3},{app}", t.as_secs_f64());
    for key in KEYS {
        row.push(',');
        if let Some(v) = stat.get(key) {
            row.push_str(&v.to_string());
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_take_the_keys_in_column_order() {
        let stat = memcg_stat::parse(
            "anon 4096\nfile 8192\nkernel 1\npgscan 9\npgsteal 7\npgfault 100\npgmajfault 3\n\
             workingset_refault_anon 2\nworkingset_refault_file 5\n",
        )
        .unwrap();
        assert_eq!(
            row(Duration::from_millis(12_345), "chrome", &stat),
            "12.345,chrome,4096,8192,7,3,2,5"
        );
        let old = memcg_stat::parse("anon 1\nfile 2\n").unwrap();
        assert_eq!(row(Duration::ZERO, "x", &old), "0.000,x,1,2,,,,");
    }

    #[test]
    fn apps_without_a_readable_memory_stat_get_no_row() {
        let dir = std::env::temp_dir().join(format!("pmr-app-memcg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("apps/chrome")).unwrap();
        std::fs::write(
            dir.join("apps/chrome/memory.stat"),
            "anon 1\nfile 2\npgsteal 3\npgmajfault 4\nworkingset_refault_anon 5\n\
             workingset_refault_file 6\n",
        )
        .unwrap();
        let control = Arc::new(Control::default());
        let start = Instant::now();
        let thread = spawn(
            &dir,
            &dir.join("apps"),
            &["chrome", "gone"],
            start,
            control.clone(),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        control.stop();
        thread.join().unwrap();
        assert_eq!(control.failure(), None);
        let text = std::fs::read_to_string(dir.join(FILE)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "t_s,app,anon,file,pgsteal,pgmajfault,workingset_refault_anon,workingset_refault_file"
        );
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[1].ends_with(",chrome,1,2,3,4,5,6"), "{text}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
