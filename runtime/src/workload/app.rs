//! One app process, forked by the zygote (zygote.rs) and driven by the
//! activity manager over the line protocol in `protocol.rs`.
//!
//! Model (docs/guest-interface.md, "app model"); an app of `processes`
//! processes splits its footprint evenly, so each process has:
//! - a heap: `anon_mb / processes` of private anonymous memory, written in
//!   the mapping inherited from the zygote, past its preload. Page `i`
//!   holds `pattern::word(salt, i, generation)` in its first word; every
//!   read of a heap page checks that word (data-integrity canary) and a
//!   mismatch aborts the app with "data corruption", which fails the run.
//! - files: its share of the app's files on the data disk, mapped
//!   read-only; reading page `i` reads (and checks) its first word.
//! - shared objects' data (`so_mb`, none by default): the first
//!   `so_mb / processes` of its files mapped a second time, private and
//!   writable, as a .so's data is. A cold launch relocates every page: the
//!   CPU loop for `so_reloc_us_per_page` (the dynamic linker's symbol
//!   lookup), then the page's relocation word (`app_files::reloc_salt`)
//!   written over its first word, which makes the page a private copy,
//!   anonymous memory that may go to swap. Wherever the working set is
//!   touched, the same fraction of these pages is read: a relocated page
//!   is fine, a page that holds the file's word again was dropped from
//!   swap by SWAM's swap-clean (MADV_SWAPCLEAN, lmkd/cleaner.rs) and is
//!   relocated again (a hot launch counts these, `so_regenerated`), and
//!   anything else is data corruption.
//! - cold launch: map and read all its files, relocate its shared
//!   objects' data, read and check the zygote's
//!   preload and run the fixed CPU loop for `init_work_ms`, fill the first `launch_fraction` of the heap from
//!   `launch_threads` threads at once, each a contiguous share (ART's heap,
//!   class loading and render threads all allocate while an app starts;
//!   the launch's CPU and fault costs count the command thread only, and
//!   those of more than one fill thread are summed beside them, `fill_*`).
//!   After `ready`, an activity thread fills the rest of the heap in steps
//!   of `GROWTH_STEP` over `growth_ms`: the start-up footprint.
//! - hot launch: run the CPU loop for `resume_work_ms` (the activity's
//!   resume and first frame), then touch (read, check, write back) the first
//!   `working_set_fraction` of the start-up footprint and read that
//!   fraction of the files and of the shared objects' data.
//! - foreground: every `fg_period_ms`, the same touch plus rewriting
//!   `fg_churn_mb` of the heap with new content (next generation), at a
//!   cursor that rotates over the filled heap; once the start-up growth is
//!   done, the heap also grows by `fg_growth_mb_per_s` (feeds, media and
//!   caches loaded while the app is used) up to `peak_anon_mb`. A
//!   relaunched app starts from its launch footprint again.
//! - background: idle, or with `bg_touch` touch `mb` of the heap every
//!   `period_ms` at another rotating cursor and run the CPU loop for its
//!   `cpu_ms`; each period done is a row of ticks.csv (ticks.rs).
//! - frames: the first process of an app with `frame` runs a render
//!   thread while in front (frames.rs); a frame runs the CPU loop for
//!   `work_ms` and reads (and checks) `touch_mb` of the heap at a cursor of
//!   its own, without writing it.
//!
//! Apps never mlock: their memory is what reclaim works on. A cold or hot
//! launch answers `ready` with what it cost (launch_cost.rs).

use crate::pattern::{self, WORDS_PER_PAGE};
use crate::spec::{ms, AppSpec, Spec};
use crate::workload::app_files::{self, pages_of_mb, AppFile};
use crate::workload::bench::cpu_work;
use crate::workload::frames::{buffer_slots, FrameBuffers, FrameModel, Renderer};
use crate::workload::launch_cost::{CostMeter, Spent};
use crate::workload::memory::{AnonRegion, FileMapping, PrivateFileMapping};
use crate::workload::protocol::{self, Command, Costs};
use crate::workload::ticks::{self, TickLog};
use crate::workload::zygote::Preload;
use anyhow::{bail, ensure, Context, Result};
use std::io::{BufRead, Write};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Heap growth after a cold launch happens in steps of about this length.
const GROWTH_STEP: Duration = Duration::from_millis(100);
/// The activity thread wakes at least this often to notice mode changes.
const ACTIVITY_TICK: Duration = Duration::from_millis(20);

/// A process's background work (`bg_touch`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BgWork {
    pub period: Duration,
    pub pages: usize,
    /// `cpu_work` iterations of a period.
    pub iters: u64,
}

/// What one process of an app does, in pages and durations.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessModel {
    pub app: String,
    pub label: String,
    pub salt: u64,
    /// Pseudo-random words after the canary in each heap page (spec.heap).
    pub random_words: usize,
    /// The start-up footprint.
    pub heap_pages: usize,
    /// The most the heap grows to while used (>= heap_pages).
    pub peak_pages: usize,
    /// Pages the heap grows by per second in the foreground, past heap_pages.
    pub fg_growth_pages_per_s: f64,
    pub launch_pages: usize,
    pub launch_threads: usize,
    pub resume_iters: u64,
    pub ws_fraction: f64,
    pub churn_pages: usize,
    pub fg_period: Duration,
    pub growth: Duration,
    pub init_iters: u64,
    pub bg_touch: Option<BgWork>,
    /// The frames it draws in front: the app's first process only.
    pub frame: Option<FrameModel>,
    pub files: Vec<AppFile>,
    /// Pages of shared objects' data: the first of `files`, in order.
    pub so_pages: usize,
    /// `cpu_work` iterations to relocate one of them.
    pub so_reloc_iters: u64,
}

impl ProcessModel {
    pub fn new(spec: &Spec, app: &AppSpec, index: u32) -> ProcessModel {
        let share = f64::from(app.processes);
        let heap_pages = pages_of_mb(app.anon_mb / share);
        let files = app_files::process_files(app, index);
        let file_pages: usize = files.iter().map(|f| f.pages).sum();
        ProcessModel {
            app: app.name.clone(),
            label: format!("{}[{index}]", app.name),
            salt: pattern::salt(&app.name, index),
            random_words: spec.heap.random_words as usize,
            heap_pages,
            peak_pages: pages_of_mb(app.peak_anon_mb() / share).max(heap_pages),
            fg_growth_pages_per_s: app.fg_growth_mb_per_s / share * pages_of_mb(1.0) as f64,
            launch_pages: fraction_of(heap_pages, app.launch_fraction),
            launch_threads: app.launch_threads.max(1) as usize,
            resume_iters: (app.resume_work_ms * spec.work_iters_per_ms) as u64,
            ws_fraction: app.working_set_fraction,
            churn_pages: pages_of_mb(app.fg_churn_mb / share),
            fg_period: ms(app.fg_period_ms),
            growth: ms(app.growth_ms),
            init_iters: (app.init_work_ms * spec.work_iters_per_ms) as u64,
            bg_touch: app.bg_touch.as_ref().map(|b| BgWork {
                period: ms(b.period_ms),
                pages: pages_of_mb(b.mb / share),
                iters: (b.cpu_ms * spec.work_iters_per_ms) as u64,
            }),
            // The render thread is one thread of one process: the frame's
            // reads are not split among the processes.
            frame: app
                .frame
                .as_ref()
                .filter(|_| index == 0)
                .map(|f| FrameModel {
                    period: ms(f.period_ms),
                    work_iters: (f.work_ms * spec.work_iters_per_ms) as u64,
                    touch_pages: pages_of_mb(f.touch_mb),
                    alloc_pages: pages_of_mb(f.alloc_kb / 1024.0),
                }),
            files,
            so_pages: pages_of_mb(app.so_mb / share).min(file_pages),
            so_reloc_iters: (app.so_reloc_us_per_page / 1e3 * spec.work_iters_per_ms) as u64,
        }
    }
}

/// The heap's size after one foreground period of use growth, and the
/// fraction of a page still owed: `owed` pages are due (whole ones added,
/// the rest carried over), never past the peak footprint.
pub fn use_growth(m: &ProcessModel, filled: usize, owed: f64) -> (usize, f64) {
    if filled >= m.peak_pages {
        return (filled, 0.0);
    }
    let whole = owed.floor();
    let pages = (filled + whole as usize).min(m.peak_pages);
    (pages, owed - whole)
}

fn fraction_of(pages: usize, fraction: f64) -> usize {
    ((pages as f64 * fraction).round() as usize).min(pages)
}

/// `count` consecutive page indices starting at `*cursor`, wrapping at
/// `limit`; advances the cursor.
pub fn rotating(cursor: &mut usize, count: usize, limit: usize) -> Vec<usize> {
    if limit == 0 {
        return Vec::new();
    }
    let start = *cursor % limit;
    *cursor = (start + count) % limit;
    (0..count.min(limit)).map(|i| (start + i) % limit).collect()
}

/// The anonymous heap and how much of it has been written.
struct Heap {
    region: AnonRegion,
    salt: u64,
    /// Pseudo-random words after the canary at a page's first write.
    random_words: usize,
    filled: AtomicUsize,
    label: String,
}

impl Heap {
    /// A heap in `region`, none of it written yet.
    fn new(region: AnonRegion, salt: u64, random_words: usize, label: &str) -> Heap {
        Heap {
            region,
            salt,
            random_words,
            filled: AtomicUsize::new(0),
            label: label.to_string(),
        }
    }

    fn words(&self) -> &[AtomicU64] {
        self.region.words()
    }

    fn filled(&self) -> usize {
        self.filled.load(Ordering::Acquire)
    }

    fn fill_to(&self, pages: usize) {
        self.fill_range(self.filled(), pages);
        self.filled.fetch_max(pages, Ordering::Release);
    }

    /// fill_to() with the new pages split into `threads` contiguous shares,
    /// each written by a thread of its own; what each of those threads
    /// spent. With one share the calling thread fills it and nothing is
    /// returned: its own figures hold the fill.
    fn fill_to_parallel(&self, pages: usize, threads: usize) -> Vec<Spent> {
        let from = self.filled();
        let threads = threads.clamp(1, pages.saturating_sub(from).max(1));
        if threads == 1 {
            self.fill_to(pages);
            return Vec::new();
        }
        let share = (pages - from).div_ceil(threads);
        let spent = std::thread::scope(|s| {
            let fills: Vec<_> = (from..pages)
                .step_by(share)
                .map(|start| {
                    s.spawn(move || {
                        Spent::measure(|| self.fill_range(start, (start + share).min(pages)))
                    })
                })
                .collect();
            fills
                .into_iter()
                .map(|f| f.join().expect("a heap fill thread panicked"))
                .collect()
        });
        self.filled.fetch_max(pages, Ordering::Release);
        spent
    }

    /// The first write of pages `from..to`: the canary word, then
    /// `random_words` of data derived from it (the rest stays zero).
    fn fill_range(&self, from: usize, to: usize) {
        for page in from..to {
            let words = &self.words()[page * WORDS_PER_PAGE..][..=self.random_words];
            let mut x = pattern::word(self.salt, page, 0);
            words[0].store(x, Ordering::Relaxed);
            for w in &words[1..] {
                x = pattern::splitmix64(x);
                w.store(x, Ordering::Relaxed);
            }
        }
    }

    /// Read and check `page`'s word: the word found.
    fn check(&self, page: usize) -> Result<u64> {
        let found = self.words()[page * WORDS_PER_PAGE].load(Ordering::Relaxed);
        if !pattern::verify(self.salt, page, found) {
            bail!(
                "data corruption: {} heap page {page} holds {found:#018x}, expected {:#018x} \
                 (any generation)",
                self.label,
                pattern::word(self.salt, page, 0)
            );
        }
        Ok(found)
    }

    /// Read and check `page`'s word, then store `new(found)`.
    fn access(&self, page: usize, new: impl Fn(u64) -> u64) -> Result<()> {
        let found = self.check(page)?;
        self.words()[page * WORDS_PER_PAGE].store(new(found), Ordering::Relaxed);
        Ok(())
    }

    /// Read and check pages without writing them.
    fn read(&self, pages: impl IntoIterator<Item = usize>) -> Result<()> {
        pages.into_iter().try_for_each(|p| self.check(p).map(drop))
    }

    fn touch(&self, pages: impl IntoIterator<Item = usize>) -> Result<()> {
        pages
            .into_iter()
            .try_for_each(|p| self.access(p, |found| found))
    }

    fn rewrite(&self, pages: impl IntoIterator<Item = usize>, generation: u8) -> Result<()> {
        pages
            .into_iter()
            .try_for_each(|p| self.access(p, |_| pattern::word(self.salt, p, generation)))
    }
}

/// The process's files, mapped; pages are numbered across files in order.
struct Files {
    maps: Vec<(FileMapping, u64)>,
    label: String,
}

impl Files {
    fn map(model: &ProcessModel, dir: &Path) -> Result<Files> {
        let maps = model
            .files
            .iter()
            .map(|f| Ok((FileMapping::open(&f.path(dir))?, f.salt)))
            .collect::<Result<_>>()?;
        Ok(Files {
            maps,
            label: model.label.clone(),
        })
    }

    fn pages(&self) -> usize {
        self.maps.iter().map(|(m, _)| m.pages()).sum()
    }

    /// Read (and check) the first `count` pages.
    fn read(&self, mut count: usize) -> Result<()> {
        for (map, salt) in &self.maps {
            for page in 0..map.pages().min(count) {
                let found = map.first_word(page);
                ensure!(
                    pattern::verify(*salt, page, found),
                    "data corruption: {} file page {page} holds {found:#018x}",
                    self.label
                );
            }
            count = count.saturating_sub(map.pages());
        }
        Ok(())
    }
}

/// What the first word of a page of shared objects' data tells of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SoPage {
    /// Its relocation word: the process's own copy, as it wrote it.
    Relocated,
    /// The file's word: the page reads the file (not yet relocated, or its
    /// copy was swap-cleaned).
    File,
    /// Anything else: data corruption.
    Corrupt,
}

/// The state of page `page` of a file whose words are under `file_salt`,
/// relocated under `reloc_salt`, whose first word is `found`.
pub fn so_page(file_salt: u64, reloc_salt: u64, page: usize, found: u64) -> SoPage {
    if found == pattern::word(reloc_salt, page, 0) {
        SoPage::Relocated
    } else if found == pattern::word(file_salt, page, 0) {
        SoPage::File
    } else {
        SoPage::Corrupt
    }
}

/// One file's pages of shared objects' data.
struct SoFile {
    map: PrivateFileMapping,
    index: usize,
    file_salt: u64,
    reloc_salt: u64,
}

/// The process's shared objects' data: the first `so_pages` of its files,
/// mapped private and writable; pages are numbered across files in order.
struct SoPages {
    maps: Vec<SoFile>,
    reloc_iters: u64,
    label: String,
}

impl SoPages {
    /// Map the model's `so_pages` from its files in `dir` (none if 0).
    fn map(model: &ProcessModel, dir: &Path) -> Result<SoPages> {
        let mut left = model.so_pages;
        let mut maps = Vec::new();
        for f in &model.files {
            if left == 0 {
                break;
            }
            let pages = f.pages.min(left);
            maps.push(SoFile {
                map: PrivateFileMapping::open(&f.path(dir), pages)?,
                index: f.index,
                file_salt: f.salt,
                reloc_salt: app_files::reloc_salt(&model.app, f.index),
            });
            left -= pages;
        }
        Ok(SoPages {
            maps,
            reloc_iters: model.so_reloc_iters,
            label: model.label.clone(),
        })
    }

    fn pages(&self) -> usize {
        self.maps.iter().map(|f| f.map.pages()).sum()
    }

    /// Relocate `page` of `f`: the symbol lookup's CPU work, then the
    /// relocation word written (a private copy of the page, if it was not).
    fn relocate(&self, f: &SoFile, page: usize) {
        if self.reloc_iters > 0 {
            cpu_work(self.reloc_iters);
        }
        f.map
            .first_word(page)
            .store(pattern::word(f.reloc_salt, page, 0), Ordering::Relaxed);
    }

    /// Read the first `count` pages and relocate those that hold the
    /// file's word: at a cold launch (`fresh`) every page must (a fresh
    /// mapping reads the file); later a page holds its relocation, or the
    /// file's word where swap-clean dropped its copy. The pages relocated;
    /// any other word is data corruption.
    fn touch(&self, mut count: usize, fresh: bool) -> Result<usize> {
        let mut relocated = 0;
        for f in &self.maps {
            for page in 0..f.map.pages().min(count) {
                let found = f.map.first_word(page).load(Ordering::Relaxed);
                match so_page(f.file_salt, f.reloc_salt, page, found) {
                    SoPage::Relocated if !fresh => {}
                    SoPage::File => {
                        self.relocate(f, page);
                        relocated += 1;
                    }
                    state => {
                        let expected = if fresh {
                            "the file's word"
                        } else {
                            "its relocation or the file's word"
                        };
                        bail!(
                            "data corruption: {} SO page {page} of res-{:03}.bin holds \
                             {found:#018x}, not {expected} ({state:?})",
                            self.label,
                            f.index
                        );
                    }
                }
            }
            count = count.saturating_sub(f.map.pages());
        }
        Ok(relocated)
    }
}

/// A launched app process: what the command loop and the activity thread share.
struct Process {
    model: ProcessModel,
    heap: Heap,
    files: Files,
    so: SoPages,
    /// Bumped on every `fg`/`bg`; odd while foreground.
    mode: AtomicU64,
}

impl Process {
    /// The process, and what its launch cost (launch_cost.rs).
    fn cold_launch(
        model: ProcessModel,
        data_dir: &Path,
        region: AnonRegion,
        preload: &Preload<'_>,
    ) -> Result<(Process, Costs)> {
        ensure!(
            region.words().len() >= model.peak_pages * WORDS_PER_PAGE,
            "{}: the zygote left room for {} heap pages, not {}",
            model.label,
            region.words().len() / WORDS_PER_PAGE,
            model.peak_pages
        );
        let mut meter = CostMeter::start();
        let dir = app_files::app_dir(data_dir, &model.app);
        let files = Files::map(&model, &dir)?;
        files.read(files.pages())?;
        meter.step("files");
        let so = SoPages::map(&model, &dir)?;
        if so.pages() > 0 {
            so.touch(so.pages(), true)?;
            meter.step("so");
        }
        preload.check()?;
        cpu_work(model.init_iters);
        meter.step("init");
        let heap = Heap::new(region, model.salt, model.random_words, &model.label);
        let fill = heap.fill_to_parallel(model.launch_pages, model.launch_threads);
        meter.step("heap");
        meter.fill_threads(fill);
        let process = Process {
            model,
            heap,
            files,
            so,
            mode: AtomicU64::new(0),
        };
        Ok((process, meter.finish()))
    }

    fn touch_working_set(&self) -> Result<()> {
        self.touch_heap_working_set()?;
        self.read_files_working_set()?;
        self.touch_so_working_set().map(drop)
    }

    fn touch_heap_working_set(&self) -> Result<()> {
        let ws = fraction_of(self.model.heap_pages, self.model.ws_fraction).min(self.heap.filled());
        self.heap.touch(0..ws)
    }

    fn read_files_working_set(&self) -> Result<()> {
        self.files
            .read(fraction_of(self.files.pages(), self.model.ws_fraction))
    }

    /// Read the working set's fraction of the shared objects' data; the
    /// pages found swap-cleaned and relocated again.
    fn touch_so_working_set(&self) -> Result<usize> {
        self.so
            .touch(fraction_of(self.so.pages(), self.model.ws_fraction), false)
    }

    /// A hot launch: the resume work, then the working set touched; what it cost.
    fn hot_launch(&self) -> Result<Costs> {
        let mut meter = CostMeter::start();
        if self.model.resume_iters > 0 {
            cpu_work(self.model.resume_iters);
            meter.step("resume");
        }
        self.touch_heap_working_set()?;
        meter.step("heap");
        self.read_files_working_set()?;
        meter.step("files");
        if self.so.pages() > 0 {
            let regenerated = self.touch_so_working_set()?;
            meter.step("so");
            meter.count("so_regenerated", regenerated as f64);
        }
        Ok(meter.finish())
    }

    /// One frame: its buffers, its CPU work, then its heap reads from
    /// `cursor` on.
    fn frame(&self, f: &FrameModel, buffers: &mut FrameBuffers, cursor: &mut usize) -> Result<()> {
        buffers.allocate()?;
        if f.work_iters > 0 {
            cpu_work(f.work_iters);
        }
        self.heap
            .read(rotating(cursor, f.touch_pages, self.heap.filled()))
    }

    fn set_foreground(&self, fg: bool) {
        let mode = self.mode.load(Ordering::Acquire);
        if (mode % 2 == 1) != fg {
            self.mode.store(mode + 1, Ordering::Release);
        }
    }

    /// The activity thread: heap growth, then foreground or background
    /// work; background periods are logged in `ticks` (an app with
    /// `bg_touch` has one).
    fn activity(&self, ticks: Option<&TickLog>) -> Result<()> {
        let m = &self.model;
        let steps = (m.growth.as_secs_f64() / GROWTH_STEP.as_secs_f64())
            .ceil()
            .max(1.0) as u32;
        let step = m.growth / steps;
        let start = Instant::now();
        let mut grown = 0;
        let (mut seen_mode, mut next_tick) = (u64::MAX, start);
        let (mut churn_cursor, mut bg_cursor, mut generation) = (0, 0, 0u8);
        // foreground growth owed but not yet a whole page
        let mut growth_owed = 0.0;
        loop {
            let now = Instant::now();
            let mut wake = now + ACTIVITY_TICK;
            if grown < steps {
                let due = start + step * (grown + 1);
                if now >= due {
                    grown += 1;
                    let extra = (m.heap_pages - m.launch_pages) * grown as usize / steps as usize;
                    self.heap.fill_to(m.launch_pages + extra);
                    continue;
                }
                wake = wake.min(due);
            }
            let mode = self.mode.load(Ordering::Acquire);
            let foreground = mode % 2 == 1;
            let period = if foreground {
                Some(m.fg_period)
            } else {
                m.bg_touch.map(|b| b.period)
            };
            if mode != seen_mode {
                seen_mode = mode;
                next_tick = now + period.unwrap_or_default();
            }
            if let Some(period) = period {
                if now >= next_tick {
                    let scheduled = next_tick;
                    // A period that overran is not made up for.
                    while next_tick <= now {
                        next_tick += period;
                    }
                    if foreground && grown >= steps {
                        let (pages, owed) = use_growth(
                            m,
                            self.heap.filled(),
                            growth_owed + m.fg_growth_pages_per_s * period.as_secs_f64(),
                        );
                        growth_owed = owed;
                        self.heap.fill_to(pages);
                    }
                    let filled = self.heap.filled();
                    if foreground {
                        self.touch_working_set()?;
                        generation = generation.wrapping_add(1);
                        self.heap.rewrite(
                            rotating(&mut churn_cursor, m.churn_pages, filled),
                            generation,
                        )?;
                    } else if let Some(bg) = m.bg_touch {
                        self.heap
                            .touch(rotating(&mut bg_cursor, bg.pages, filled))?;
                        if bg.iters > 0 {
                            cpu_work(bg.iters);
                        }
                        if let Some(ticks) = ticks {
                            let done = Instant::now();
                            ticks.push(ticks::Kind::Bg, done, done - scheduled, period);
                        }
                    }
                    continue;
                }
                wake = wake.min(next_tick);
            }
            std::thread::sleep(wake.saturating_duration_since(Instant::now()));
        }
    }
}

/// Serve the line protocol until stdin closes, with the heap in `region`
/// (zygote.rs); `clock` is when the workload started (ticks.csv's times).
pub fn serve(
    spec: &Spec,
    data_dir: &Path,
    name: &str,
    index: u32,
    region: AnonRegion,
    preload: &Preload<'_>,
    clock: Instant,
) -> Result<()> {
    let app = spec
        .app(name)
        .with_context(|| format!("no app {name:?} in the spec"))?;
    ensure!(
        index < app.processes,
        "app {name} has {} processes, not {}",
        app.processes,
        index + 1
    );
    let model = ProcessModel::new(spec, app, index);

    let mut lines = std::io::stdin().lock().lines();
    let mut out = std::io::stdout().lock();
    let mut reply = |costs: Costs| -> Result<()> {
        writeln!(out, "{}", protocol::ready_line(&costs))?;
        out.flush().context("cannot answer the activity manager")
    };

    let Some(first) = lines.next() else {
        return Ok(());
    };
    ensure!(
        Command::parse(&first?)? == Command::Cold,
        "the first command must be `cold`"
    );
    let (process, costs) = Process::cold_launch(model, data_dir, region, preload)?;
    let process = Arc::new(process);
    reply(costs)?;

    let m = &process.model;
    let ticks = if m.bg_touch.is_some() || m.frame.is_some() {
        let log = TickLog::open(&spec.out_dir, &m.app, clock)?;
        log.spawn_writer(&m.label)?;
        Some(log)
    } else {
        None
    };
    let worker = Arc::clone(&process);
    let bg_ticks = ticks.clone().filter(|_| m.bg_touch.is_some());
    std::thread::Builder::new()
        .name("activity".into())
        .spawn(move || {
            // The app must not live on without its activity: any error or
            // panic ends the process.
            let outcome =
                std::panic::catch_unwind(AssertUnwindSafe(|| worker.activity(bg_ticks.as_ref())));
            if let Ok(Err(e)) = &outcome {
                eprintln!("pmr-guest app {}: error: {e:#}", worker.model.label);
            }
            if !matches!(outcome, Ok(Ok(()))) {
                std::process::exit(1);
            }
        })?;

    let mut renderer: Option<Renderer> = None;
    for line in lines {
        let costs = match Command::parse(&line?)? {
            Command::Cold => bail!("`cold` sent to a running app"),
            Command::Hot => process.hot_launch()?,
            Command::Fg => {
                process.set_foreground(true);
                if let (Some(f), Some(ticks), None) = (process.model.frame, &ticks, &renderer) {
                    let drawer = Arc::clone(&process);
                    let mut cursor = 0;
                    // Freed when the app leaves the front, with the thread.
                    let mut buffers = FrameBuffers::new(f.alloc_pages, buffer_slots(f.period))?;
                    renderer = Some(Renderer::start(
                        f,
                        &process.model.label,
                        ticks.clone(),
                        move || drawer.frame(&f, &mut buffers, &mut cursor),
                    )?);
                }
                Costs::new()
            }
            Command::Bg => {
                process.set_foreground(false);
                if let Some(r) = renderer.take() {
                    r.stop();
                }
                if let Some(ticks) = &ticks {
                    ticks.flush()?;
                }
                Costs::new()
            }
        };
        reply(costs)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::PAGE_SIZE;

    fn fixture() -> Spec {
        Spec::parse(include_str!("../../tests/fixtures/spec.json")).unwrap()
    }

    #[test]
    fn model_splits_footprint_among_processes() {
        let spec = fixture();
        let youtube = spec.app("youtube").unwrap(); // 2 processes, 100 MB, 6 MB churn
        let m = ProcessModel::new(&spec, youtube, 1);
        assert_eq!(m.label, "youtube[1]");
        assert_eq!(m.heap_pages, 50 * 256);
        assert_eq!(m.launch_pages, 25 * 256);
        assert_eq!(m.churn_pages, 3 * 256);
        assert_eq!(m.init_iters, (250.0 * 123456.0) as u64);
        assert_ne!(m.salt, ProcessModel::new(&spec, youtube, 0).salt);
        let whatsapp = ProcessModel::new(&spec, spec.app("whatsapp").unwrap(), 0);
        assert_eq!(
            whatsapp.bg_touch,
            Some(BgWork {
                period: Duration::from_secs(1),
                pages: 512,
                iters: 0
            })
        );
        assert_eq!(whatsapp.frame, None);
    }

    #[test]
    fn levers_scale_per_process() {
        let spec = fixture();
        let mut youtube = spec.app("youtube").unwrap().clone(); // 2 processes, 100 MB
        youtube.peak_anon_mb = Some(160.0);
        youtube.fg_growth_mb_per_s = 4.0;
        youtube.launch_threads = 3;
        youtube.resume_work_ms = 10.0;
        let m = ProcessModel::new(&spec, &youtube, 0);
        assert_eq!(m.peak_pages, 80 * 256);
        assert_eq!(m.fg_growth_pages_per_s, 2.0 * 256.0);
        assert_eq!(m.launch_threads, 3);
        assert_eq!(m.resume_iters, (10.0 * 123456.0) as u64);
        // without the levers: no growth past the start-up footprint
        let plain = ProcessModel::new(&spec, spec.app("youtube").unwrap(), 0);
        assert_eq!(plain.peak_pages, plain.heap_pages);
        assert_eq!(plain.resume_iters, 0);
    }

    #[test]
    fn frames_are_the_first_process_s_and_bg_cpu_is_per_process() {
        let spec = fixture();
        let mut youtube = spec.app("youtube").unwrap().clone(); // 2 processes
        youtube.frame = Some(crate::spec::FrameLoop {
            period_ms: 16.0,
            work_ms: 6.0,
            touch_mb: 2.0,
            alloc_kb: 256.0,
        });
        youtube.bg_touch = Some(crate::spec::BgTouch {
            period_ms: 1000.0,
            mb: 4.0,
            cpu_ms: 20.0,
        });
        let first = ProcessModel::new(&spec, &youtube, 0);
        assert_eq!(
            first.frame,
            Some(FrameModel {
                period: Duration::from_millis(16),
                work_iters: (6.0 * 123456.0) as u64,
                touch_pages: 512,
                alloc_pages: 64,
            }),
            "touch_mb and alloc_kb whole in the first process"
        );
        assert_eq!(ProcessModel::new(&spec, &youtube, 1).frame, None);
        let bg = first.bg_touch.unwrap();
        assert_eq!((bg.pages, bg.iters), (512, (20.0 * 123456.0) as u64));
    }

    #[test]
    fn so_pages_are_split_like_the_files_and_costed_in_work_iterations() {
        let spec = fixture();
        let mut youtube = spec.app("youtube").unwrap().clone(); // 2 processes, 16 MB of files
        youtube.so_mb = 4.0;
        youtube.so_reloc_us_per_page = 40.0;
        let m = ProcessModel::new(&spec, &youtube, 1);
        assert_eq!(m.so_pages, 2 * 256);
        assert_eq!(m.so_reloc_iters, (40.0 / 1e3 * 123456.0) as u64);
        // never more than the process's files (two of 4 MB)
        youtube.so_mb = 64.0;
        assert_eq!(ProcessModel::new(&spec, &youtube, 0).so_pages, 8 * 256);
        let plain = ProcessModel::new(&spec, spec.app("youtube").unwrap(), 0);
        assert_eq!((plain.so_pages, plain.so_reloc_iters), (0, 0));
    }

    #[test]
    fn an_so_page_holds_its_relocation_the_files_word_or_is_corrupt() {
        let (file, reloc) = (11, 12);
        let state = |found| so_page(file, reloc, 3, found);
        assert_eq!(state(pattern::word(reloc, 3, 0)), SoPage::Relocated);
        assert_eq!(state(pattern::word(file, 3, 0)), SoPage::File);
        for found in [
            0,
            pattern::word(reloc, 4, 0),
            pattern::word(file, 4, 0),
            pattern::word(reloc, 3, 1),
            pattern::word(file, 3, 1),
        ] {
            assert_eq!(state(found), SoPage::Corrupt, "{found:#x}");
        }
    }

    /// Files of `pages` pages each (file `i` under salt 77 + i) in a
    /// directory of their own, and a model of chrome[0] that maps them and
    /// takes their first `so_pages` as its shared objects' data.
    fn so_fixture(
        name: &str,
        pages: &[usize],
        so_pages: usize,
    ) -> (std::path::PathBuf, ProcessModel) {
        let dir = std::env::temp_dir().join(format!("pmr-so-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let files: Vec<AppFile> = pages
            .iter()
            .enumerate()
            .map(|(index, &n)| AppFile {
                index,
                pages: n,
                salt: 77 + index as u64,
            })
            .collect();
        for f in &files {
            let mut data = vec![0u8; f.pages * PAGE_SIZE];
            for (page, buf) in data.chunks_exact_mut(PAGE_SIZE).enumerate() {
                pattern::fill_file_page(buf, f.salt, page);
            }
            std::fs::write(f.path(&dir), &data).unwrap();
        }
        let spec = fixture();
        let mut m = ProcessModel::new(&spec, spec.app("chrome").unwrap(), 0);
        m.files = files;
        m.so_pages = so_pages;
        m.so_reloc_iters = 10;
        (dir, m)
    }

    #[test]
    fn so_pages_span_the_first_files() {
        let (dir, m) = so_fixture("span", &[4, 4, 4], 6);
        let so = SoPages::map(&m, &dir).unwrap();
        let mapped: Vec<(usize, usize)> =
            so.maps.iter().map(|f| (f.index, f.map.pages())).collect();
        assert_eq!(mapped, vec![(0, 4), (1, 2)]);
        assert_eq!(so.pages(), 6);
        assert_eq!(so.maps[1].reloc_salt, app_files::reloc_salt("chrome", 1));
        let (none_dir, mut none) = so_fixture("none", &[4], 0);
        assert_eq!(SoPages::map(&none, &none_dir).unwrap().pages(), 0);
        none.files.clear();
        none.so_pages = 3;
        assert_eq!(
            SoPages::map(&none, &none_dir).unwrap().pages(),
            0,
            "no files"
        );
        std::fs::remove_dir_all(dir).unwrap();
        std::fs::remove_dir_all(none_dir).unwrap();
    }

    #[test]
    fn swap_cleaned_so_pages_are_relocated_again_and_counted() {
        let (dir, m) = so_fixture("clean", &[8], 6);
        let so = SoPages::map(&m, &dir).unwrap();
        assert_eq!(
            so.touch(6, true).unwrap(),
            6,
            "a cold launch relocates every page"
        );
        assert_eq!(so.touch(6, false).unwrap(), 0);
        // swap-clean drops the copies of pages 2 and 4: they read the file again
        let f = &so.maps[0];
        for page in [2, 4] {
            f.map.revert(page).unwrap();
            let found = f.map.first_word(page).load(Ordering::Relaxed);
            assert_eq!(
                so_page(f.file_salt, f.reloc_salt, page, found),
                SoPage::File
            );
        }
        assert_eq!(
            so.touch(3, false).unwrap(),
            1,
            "the working set's pages only"
        );
        assert_eq!(so.touch(6, false).unwrap(), 1);
        assert_eq!(so.touch(6, false).unwrap(), 0);
        // relocated pages where a fresh mapping must read the file
        let err = so.touch(1, true).unwrap_err().to_string();
        assert!(
            err.contains("data corruption: chrome[0] SO page 0 of res-000.bin"),
            "{err}"
        );
        f.map.first_word(5).store(0, Ordering::Relaxed);
        let err = so.touch(6, false).unwrap_err().to_string();
        let expected =
            "data corruption: chrome[0] SO page 5 of res-000.bin holds 0x0000000000000000";
        assert!(err.contains(expected), "{err}");
        // the file itself is untouched: a new mapping reads it
        let again = SoPages::map(&m, &dir).unwrap();
        assert_eq!(again.touch(6, true).unwrap(), 6);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn use_growth_carries_fractions_and_stops_at_the_peak() {
        let spec = fixture();
        let mut m = ProcessModel::new(&spec, spec.app("chrome").unwrap(), 0);
        m.heap_pages = 100;
        m.peak_pages = 110;
        assert_eq!(use_growth(&m, 100, 2.5), (102, 0.5));
        assert_eq!(use_growth(&m, 102, 0.75), (102, 0.75));
        assert_eq!(use_growth(&m, 108, 5.0), (110, 0.0));
        assert_eq!(
            use_growth(&m, 110, 5.0),
            (110, 0.0),
            "nothing owed at the peak"
        );
    }

    #[test]
    fn parallel_fill_writes_every_page_once() {
        let heap = Heap::new(AnonRegion::new(103 * PAGE_SIZE).unwrap(), 11, 0, "t[0]");
        heap.fill_to(5);
        let spent = heap.fill_to_parallel(103, 4);
        assert_eq!(spent.len(), 4, "98 pages in shares of 25");
        assert_eq!(heap.filled(), 103);
        heap.touch(0..103).unwrap();
        // more threads than pages, and nothing to fill
        assert!(heap.fill_to_parallel(103, 16).is_empty(), "filled here");
        assert_eq!(heap.filled(), 103);
    }

    #[test]
    fn a_page_gets_its_canary_then_random_words_then_zeros() {
        let heap = Heap::new(AnonRegion::new(2 * PAGE_SIZE).unwrap(), 5, 204, "t[0]");
        heap.fill_to(2);
        for page in 0..2 {
            let words = &heap.words()[page * WORDS_PER_PAGE..][..WORDS_PER_PAGE];
            let values: Vec<u64> = words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
            assert!(pattern::verify(5, page, values[0]));
            assert!(values[1..=204].iter().all(|&v| v != 0));
            let distinct: std::collections::HashSet<u64> = values[..=204].iter().copied().collect();
            assert_eq!(distinct.len(), 205, "the random words repeat");
            assert!(values[205..].iter().all(|&v| v == 0));
        }
        heap.touch(0..2).unwrap();
    }

    #[test]
    fn rotating_wraps_and_advances() {
        let mut cursor = 0;
        assert_eq!(rotating(&mut cursor, 3, 5), vec![0, 1, 2]);
        assert_eq!(rotating(&mut cursor, 3, 5), vec![3, 4, 0]);
        assert_eq!(cursor, 1);
        assert_eq!(
            rotating(&mut cursor, 9, 4),
            vec![1, 2, 3, 0],
            "never more than the limit"
        );
        assert!(rotating(&mut cursor, 3, 0).is_empty());
    }

    #[test]
    fn heap_canary_detects_corruption() {
        let heap = Heap::new(AnonRegion::new(8 * PAGE_SIZE).unwrap(), 7, 0, "t[0]");
        heap.fill_to(8);
        heap.touch(0..8).unwrap();
        heap.rewrite([2, 3], 5).unwrap();
        heap.touch(0..8).unwrap();
        heap.read(0..8).unwrap();
        heap.words()[4 * WORDS_PER_PAGE].store(0, Ordering::Relaxed);
        let err = heap.touch(0..8).unwrap_err().to_string();
        assert!(
            err.contains("data corruption") && err.contains("page 4"),
            "{err}"
        );
        let err = heap.read(3..5).unwrap_err().to_string();
        assert!(err.contains("page 4"), "{err}");
    }
}
