//! The render thread of an app in front (`frame` of the app's spec), in
//! its first process: what the user sees of the device's speed, as frame
//! times (Ice measures FPS and frames over 16.6 ms).
//!
//! Vsyncs come every `period` from the moment the app came to the front.
//! At a vsync, if no frame is in progress, a frame starts: it writes the
//! buffers it allocates (`FrameBuffers`), then does the CPU work and the
//! heap reads the app gives it (app.rs). Its frame time is its
//! completion less the vsync it started at, so a render thread that the
//! scheduler let run late is charged for it; the next frame starts at the
//! first vsync at or after the completion (a frame that overran its period
//! drops the vsyncs it covered, as a phone's choreographer does). Each
//! frame is a row of ticks.csv.
//!
//! The thread runs from `fg` to `bg`: stopping it waits for the frame in
//! progress, so that its row is in before the app goes to the background.

use crate::pattern::PAGE_SIZE;
use crate::workload::memory::AnonRegion;
use crate::workload::ticks::{Kind, TickLog};
use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One process's frames.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameModel {
    pub period: Duration,
    /// `cpu_work` iterations of a frame.
    pub work_iters: u64,
    /// Heap pages a frame reads.
    pub touch_pages: usize,
    /// Pages a frame allocates and writes.
    pub alloc_pages: usize,
}

/// The memory frames allocate: decoded video frames, bitmaps, the objects
/// of a frame's layout and drawing. Each frame writes `pages` pages of a
/// ring that holds `slots` frames, after freeing (MADV_DONTNEED) what the
/// frame `slots` frames before it wrote there, so that every frame faults
/// in new pages, at the page allocator's mercy as a phone's rendering is
/// under memory pressure, while the ring holds at most `slots` frames'
/// worth (garbage collection and buffer recycling keep a phone app's
/// footprint bounded alike). The ring is unmapped with it.
pub struct FrameBuffers {
    region: AnonRegion,
    pages: usize,
    slots: usize,
    next: usize,
}

impl FrameBuffers {
    pub fn new(pages: usize, slots: usize) -> Result<FrameBuffers> {
        let slots = slots.max(1);
        Ok(FrameBuffers {
            region: AnonRegion::new(pages * slots * PAGE_SIZE)?,
            pages,
            slots,
            next: 0,
        })
    }

    /// One frame's buffers: its slot freed, then one word of each page
    /// written (a new page each).
    pub fn allocate(&mut self) -> Result<()> {
        if self.pages == 0 {
            return Ok(());
        }
        let slot = self.next % self.slots;
        self.next += 1;
        let bytes = self.pages * PAGE_SIZE;
        self.region.discard(slot * bytes, bytes)?;
        let words = self.region.words_mut();
        let per_page = PAGE_SIZE / 8;
        let first = slot * self.pages;
        for page in first..first + self.pages {
            words[page * per_page] = (self.next as u64) << 32 | page as u64;
        }
        Ok(())
    }
}

/// How many frames' buffers the ring of a frame loop holds: a second of
/// frames at its vsync rate.
pub fn buffer_slots(period: Duration) -> usize {
    (Duration::from_secs(1).as_secs_f64() / period.as_secs_f64().max(1e-3)).round() as usize
}

/// The vsync the frame after one that started at `started` and completed
/// at `done` starts at: the first vsync (`origin + k * period`) at or
/// after `done`, and never `started` again.
pub fn next_vsync(origin: Instant, period: Duration, started: Instant, done: Instant) -> Instant {
    let period_ns = period.as_nanos().max(1);
    let since = done.saturating_duration_since(origin).as_nanos();
    let k = since.div_ceil(period_ns);
    let at = origin + Duration::from_nanos((k * period_ns) as u64);
    at.max(started + period)
}

/// A running render thread.
pub struct Renderer {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Renderer {
    /// Start drawing frames of `model`, each done by `frame` and logged in
    /// `ticks`; an error or panic in `frame` ends the process (`label` in
    /// its message), as the activity thread's does.
    pub fn start(
        model: FrameModel,
        label: &str,
        ticks: TickLog,
        mut frame: impl FnMut() -> Result<()> + Send + 'static,
    ) -> Result<Renderer> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let label = label.to_string();
        let thread = std::thread::Builder::new()
            .name("render".into())
            .spawn(move || {
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    render(model, &stopping, &ticks, &mut frame)
                }));
                if let Ok(Err(e)) = &outcome {
                    eprintln!("pmr-guest app {label}: error: {e:#}");
                }
                if !matches!(outcome, Ok(Ok(()))) {
                    std::process::exit(1);
                }
            })?;
        Ok(Renderer { stop, thread })
    }

    /// Let the frame in progress finish, then end the thread.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        // A thread that failed has ended the process.
        let _ = self.thread.join();
    }
}

fn render(
    model: FrameModel,
    stop: &AtomicBool,
    ticks: &TickLog,
    frame: &mut impl FnMut() -> Result<()>,
) -> Result<()> {
    let origin = Instant::now();
    let mut vsync = origin;
    loop {
        // A vsync is at most a period away: the stop is seen within one.
        std::thread::sleep(vsync.saturating_duration_since(Instant::now()));
        if stop.load(Ordering::Acquire) {
            return Ok(());
        }
        frame()?;
        let done = Instant::now();
        ticks.push(Kind::Frame, done, done - vsync, model.period);
        vsync = next_vsync(origin, model.period, vsync, done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_frame_waits_for_the_first_vsync_after_completion() {
        let origin = Instant::now();
        let p = Duration::from_millis(16);
        let ms = |v: u64| origin + Duration::from_millis(v);
        // done within its period: the next vsync
        assert_eq!(next_vsync(origin, p, ms(0), ms(6)), ms(16));
        // overran by a bit: one vsync dropped
        assert_eq!(next_vsync(origin, p, ms(16), ms(33)), ms(48));
        // done exactly at a vsync: that vsync
        assert_eq!(next_vsync(origin, p, ms(16), ms(48)), ms(48));
        // stalled for a second
        assert_eq!(next_vsync(origin, p, ms(32), ms(1001)), ms(1008));
        // a frame that took no time never starts at its own vsync again
        assert_eq!(next_vsync(origin, p, ms(32), ms(32)), ms(48));
    }

    #[test]
    fn frame_buffers_fault_new_pages_and_hold_a_ring_of_frames() {
        assert_eq!(buffer_slots(Duration::from_micros(16_667)), 60);
        let mut buffers = FrameBuffers::new(3, 4).unwrap();
        for frame in 1..=10u64 {
            buffers.allocate().unwrap();
            let slot = ((frame - 1) % 4) as usize;
            let words = buffers.region.words_mut();
            for page in slot * 3..slot * 3 + 3 {
                assert_eq!(words[page * 512], frame << 32 | page as u64);
                // the rest of a page is the kernel's fresh zeroes
                assert!(words[page * 512 + 1..(page + 1) * 512]
                    .iter()
                    .all(|&w| w == 0));
            }
        }
        // a slot freed before its frame's write holds that frame's words only
        let mut one = FrameBuffers::new(1, 1).unwrap();
        one.allocate().unwrap();
        one.region.words_mut()[7] = 99;
        one.allocate().unwrap();
        assert_eq!(one.region.words_mut()[7], 0, "the slot was not freed");
        assert_eq!(FrameBuffers::new(0, 60).unwrap().allocate().ok(), Some(()));
    }

    #[test]
    fn frames_are_logged_until_stopped() {
        let dir = std::env::temp_dir().join(format!("pmr-frames-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        crate::workload::ticks::create(&dir).unwrap();
        let ticks = TickLog::open(&dir, "chrome", Instant::now()).unwrap();
        let model = FrameModel {
            period: Duration::from_millis(5),
            work_iters: 0,
            touch_pages: 0,
            alloc_pages: 0,
        };
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = count.clone();
        let r = Renderer::start(model, "chrome[0]", ticks.clone(), move || {
            counted.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(60));
        r.stop();
        ticks.flush().unwrap();
        let frames = count.load(Ordering::Relaxed);
        let text = std::fs::read_to_string(dir.join(crate::workload::ticks::FILE)).unwrap();
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(rows.len(), frames, "one row per frame");
        assert!(
            (3..=13).contains(&frames),
            "{frames} frames in 60 ms at 5 ms"
        );
        assert!(rows
            .iter()
            .all(|r| r.contains(",chrome,") && r.contains(",frame,")));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
