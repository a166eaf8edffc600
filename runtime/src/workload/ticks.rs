//! `ticks.csv`: one row per frame an app drew (frames.rs) and per
//! background period it did (`bg_touch`), for the host's frame rates and
//! background deadlines.
//!
//! The runtime creates the file with its header before any app starts
//! (`create`); every app process that has rows opens it with O_APPEND and
//! appends whole lines. Rows are collected in memory by the threads that
//! time them (a push holds a lock for a string copy, never for I/O, so the
//! render thread's frame times do not include the log) and written by a
//! writer thread of the process every `FLUSH_EVERY`, and at once when the
//! app goes to the background. Each write() is at most `MAX_WRITE` bytes
//! of whole lines, so that the rows of concurrent processes never
//! interleave within a line; a SIGKILLed app loses at most its last
//! `FLUSH_EVERY` of rows.
//!
//! Times are on the events.jsonl clock (the workload's start, `clock`):
//! `t_ms` when the frame or period completed, `dur_ms` its frame time or
//! its completion less its scheduled start, `late` 1 if `dur_ms` exceeds
//! the period.

use anyhow::{Context, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const FILE: &str = "ticks.csv";
pub const HEADER: &str = "t_ms,app,pid,kind,dur_ms,late";
/// How often the writer thread writes the rows collected.
pub const FLUSH_EVERY: Duration = Duration::from_millis(250);
/// The most one write() carries.
pub const MAX_WRITE: usize = 4096;

/// What a row times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A frame, from its vsync to its completion.
    Frame,
    /// A background period, from its scheduled start to its completion.
    Bg,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Frame => "frame",
            Kind::Bg => "bg",
        }
    }
}

/// Create `out_dir/ticks.csv` with its header (the runtime, at the start).
pub fn create(out_dir: &Path) -> Result<()> {
    let path = out_dir.join(FILE);
    std::fs::write(&path, format!("{HEADER}\n"))
        .with_context(|| format!("cannot create {}", path.display()))
}

/// One row: `t` since the workload started, `dur` against `period`.
pub fn row(
    t: Duration,
    app: &str,
    pid: u32,
    kind: Kind,
    dur: Duration,
    period: Duration,
) -> String {
    format!(
        "{:.3},{app},{pid},{},{:.3},{}\n",
        t.as_secs_f64() * 1e3,
        kind.as_str(),
        dur.as_secs_f64() * 1e3,
        u8::from(dur > period)
    )
}

/// `text` (whole lines) cut into pieces of whole lines of at most `max`
/// bytes; a line longer than `max` is a piece of its own.
pub fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut end = 0;
    for (i, _) in text.match_indices('\n') {
        let next = i + 1;
        if next - start > max && end > start {
            out.push(&text[start..end]);
            start = end;
        }
        end = next;
    }
    if end > start {
        out.push(&text[start..end]);
    }
    out
}

/// An app process's rows: what its threads push, written by a writer
/// thread (`spawn_writer`) and by `flush`.
#[derive(Clone)]
pub struct TickLog {
    shared: Arc<Shared>,
}

struct Shared {
    app: String,
    pid: u32,
    clock: Instant,
    pending: Mutex<String>,
    file: File,
}

impl TickLog {
    /// Open `out_dir/ticks.csv` (made by the runtime) for appending the
    /// rows of `app`'s process; `clock` is when the workload started.
    pub fn open(out_dir: &Path, app: &str, clock: Instant) -> Result<TickLog> {
        let path = out_dir.join(FILE);
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {} to append", path.display()))?;
        Ok(TickLog {
            shared: Arc::new(Shared {
                app: app.to_string(),
                pid: std::process::id(),
                clock,
                pending: Mutex::new(String::new()),
                file,
            }),
        })
    }

    /// Record a frame or period that completed at `done` after `dur`.
    pub fn push(&self, kind: Kind, done: Instant, dur: Duration, period: Duration) {
        let s = &self.shared;
        let line = row(
            done.saturating_duration_since(s.clock),
            &s.app,
            s.pid,
            kind,
            dur,
            period,
        );
        s.pending.lock().expect("ticks lock").push_str(&line);
    }

    /// Write the rows pushed so far.
    pub fn flush(&self) -> Result<()> {
        let rows = std::mem::take(&mut *self.shared.pending.lock().expect("ticks lock"));
        for piece in pieces(&rows, MAX_WRITE) {
            (&self.shared.file)
                .write_all(piece.as_bytes())
                .with_context(|| format!("cannot append to {FILE}"))?;
        }
        Ok(())
    }

    /// The writer thread: `flush` every `FLUSH_EVERY` for the life of the
    /// process; a failed write ends the process.
    pub fn spawn_writer(&self, label: &str) -> Result<()> {
        let log = self.clone();
        let label = label.to_string();
        std::thread::Builder::new()
            .name("ticks".into())
            .spawn(move || loop {
                std::thread::sleep(FLUSH_EVERY);
                if let Err(e) = log.flush() {
                    eprintln!("pmr-guest app {label}: error: {e:#}");
                    std::process::exit(1);
                }
            })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_the_header_columns() {
        let ms = Duration::from_micros;
        assert_eq!(
            row(
                ms(12_345_678),
                "chrome",
                42,
                Kind::Frame,
                ms(16_700),
                ms(16_667)
            ),
            "12345.678,chrome,42,frame,16.700,1\n"
        );
        assert_eq!(
            row(ms(1_000), "whatsapp", 7, Kind::Bg, ms(3_000), ms(1_000_000)),
            "1.000,whatsapp,7,bg,3.000,0\n"
        );
        assert_eq!(HEADER.split(',').count(), 6);
    }

    #[test]
    fn a_period_exactly_met_is_not_late() {
        let p = Duration::from_millis(16);
        assert!(row(p, "a", 1, Kind::Frame, p, p).ends_with(",0\n"));
    }

    #[test]
    fn pieces_are_whole_lines_within_the_limit() {
        let text = "aaaa\nbb\ncccccc\nd\n";
        assert_eq!(pieces(text, 8), vec!["aaaa\nbb\n", "cccccc\n", "d\n"]);
        assert_eq!(pieces(text, 100), vec![text]);
        assert_eq!(
            pieces(text, 3),
            vec!["aaaa\n", "bb\n", "cccccc\n", "d\n"],
            "a line too long alone"
        );
        assert!(pieces("", 8).is_empty());
        let many: String = (0..2000).map(|i| format!("{i},row\n")).collect();
        let cut = pieces(&many, MAX_WRITE);
        assert!(cut.len() > 1 && cut.iter().all(|p| p.len() <= MAX_WRITE));
        assert!(cut.iter().all(|p| p.ends_with('\n')));
        assert_eq!(cut.concat(), many);
    }

    #[test]
    fn rows_are_appended_after_the_header() {
        let dir = std::env::temp_dir().join(format!("pmr-ticks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(
            TickLog::open(&dir, "x", Instant::now()).is_err(),
            "no file yet"
        );
        create(&dir).unwrap();
        let clock = Instant::now();
        let log = TickLog::open(&dir, "chrome", clock).unwrap();
        let other = TickLog::open(&dir, "whatsapp", clock).unwrap();
        let p = Duration::from_millis(10);
        log.push(Kind::Frame, clock + Duration::from_millis(5), p / 2, p);
        other.push(Kind::Bg, clock + Duration::from_millis(7), p * 2, p);
        log.flush().unwrap();
        other.flush().unwrap();
        log.flush().unwrap();
        let text = std::fs::read_to_string(dir.join(FILE)).unwrap();
        let pid = std::process::id();
        assert_eq!(
            text,
            format!(
                "{HEADER}\n5.000,chrome,{pid},frame,5.000,0\n7.000,whatsapp,{pid},bg,20.000,1\n"
            )
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
