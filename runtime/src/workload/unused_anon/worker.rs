//! The thread that marks and checks the apps' anonymous pages, one job
//! at a time in the order the activity manager queued them:
//! - `Mark`: the app came to the front; its private anonymous pages in
//!   RAM are marked idle, and how many is remembered for its `Advise`.
//! - `Advise`: the app left the front; its private anonymous pages in RAM
//!   still idle were not touched while it was in front, and are advised
//!   with the scheme's advice. One `skew_pageout` event per job.
//!
//! A process that ended meanwhile is skipped; any other failure fails the
//! run.

use super::idle_bitmap::IdleBitmap;
use super::pagemap::{self, is_gone, Page};
use super::{maps, pageout};
use crate::events::{Event, EventLog};
use crate::pattern::PAGE_SIZE;
use crate::spec::SkewAdvice;
use crate::workload::activity_manager::millis;
use anyhow::{Context, Result};
use std::sync::Arc;
use std::time::Instant;

/// What the worker is asked to do for one app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// Mark the pages of the app's processes `pids` idle.
    Mark { app: usize, pids: Vec<i32> },
    /// Advise the pages of `pids` still idle since the app's last mark.
    Advise { app: usize, pids: Vec<i32> },
}

/// The worker's state, moved onto its thread.
pub struct Worker {
    pub bitmap: IdleBitmap,
    pub advice: SkewAdvice,
    /// The apps' names, in spec order.
    pub names: Vec<String>,
    /// Pages marked at each app's last `Mark`, until its `Advise`.
    pub marked: Vec<Option<u64>>,
    pub events: Arc<EventLog>,
}

impl Worker {
    pub fn handle(&mut self, job: Job) -> Result<()> {
        match job {
            Job::Mark { app, pids } => self.mark(app, &pids),
            Job::Advise { app, pids } => self.advise(app, &pids),
        }
    }

    fn mark(&mut self, app: usize, pids: &[i32]) -> Result<()> {
        let mut marked = 0;
        let mut pfns = Vec::new();
        for &pid in pids {
            let pages = scan(pid)?;
            marked += pages.len() as u64;
            pfns.extend(pages.iter().map(|p| p.pfn));
        }
        self.bitmap
            .mark(pfns)
            .context("cannot mark pages idle in the page_idle bitmap")?;
        self.marked[app] = Some(marked);
        Ok(())
    }

    fn advise(&mut self, app: usize, pids: &[i32]) -> Result<()> {
        let start = Instant::now();
        let cpu_start = thread_cpu_ms();
        let Some(marked_pages) = self.marked[app].take() else {
            return Ok(());
        };
        let scans: Vec<(i32, Vec<Page>)> = pids
            .iter()
            .map(|&pid| Ok((pid, scan(pid)?)))
            .collect::<Result<_>>()?;
        let idle = self
            .bitmap
            .read(
                scans
                    .iter()
                    .flat_map(|(_, pages)| pages.iter().map(|p| p.pfn)),
            )
            .context("cannot read the page_idle bitmap")?;
        let (mut idle_pages, mut advised_bytes) = (0, 0);
        for (pid, pages) in &scans {
            let ranges = pageout::idle_ranges(pages, &idle);
            idle_pages += ranges
                .iter()
                .map(|r| (r.end - r.start) / PAGE_SIZE as u64)
                .sum::<u64>();
            advised_bytes += pageout::advise(*pid, &ranges, advice_code(self.advice))
                .with_context(|| format!("process_madvise of pid {pid} failed"))?;
        }
        self.events.log(&Event::SkewPageout {
            app: &self.names[app],
            marked_pages,
            idle_pages,
            advised_bytes,
            ms: millis(start.elapsed()),
            cpu_ms: thread_cpu_ms() - cpu_start,
            advice: self.advice,
        })
    }
}

/// The private anonymous pages in RAM of `pid`; none if it ended.
/// The calling thread's CPU time so far, user and system, in ms (0 if
/// getrusage fails).
fn thread_cpu_ms() -> f64 {
    // SAFETY: getrusage() writes only into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0.0;
    }
    let ms = |tv: libc::timeval| tv.tv_sec as f64 * 1e3 + tv.tv_usec as f64 / 1e3;
    ms(ru.ru_utime) + ms(ru.ru_stime)
}

fn scan(pid: i32) -> Result<Vec<Page>> {
    let pages = maps::read(pid).and_then(|vmas| pagemap::scan(pid, &vmas));
    match pages {
        Err(e) if is_gone(&e) => Ok(Vec::new()),
        other => other.with_context(|| format!("cannot read the pages of pid {pid}")),
    }
}

/// The madvise code of `advice`.
pub fn advice_code(advice: SkewAdvice) -> i32 {
    match advice {
        SkewAdvice::Pageout => pageout::MADV_PAGEOUT,
        SkewAdvice::Cold => pageout::MADV_COLD,
    }
}
