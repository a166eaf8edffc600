//! The thread that toggles a kernel knob under load: it follows the run's
//! progress (published by the runtime), makes the writes toggle_plan.rs
//! says are due, and records every write that did not go as planned. When
//! told to stop it first makes the writes still due, so a run that reached
//! its end has made them all.

use crate::control::{spawn_thread, Control};
use crate::reliability::knob_effect;
use crate::reliability::toggle_plan::{Toggle, WriteOutcome};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const TICK: Duration = Duration::from_millis(100);

/// The share of the run done, 0..=1 (an f64 in an atomic).
#[derive(Default)]
pub struct Progress(AtomicU64);

impl Progress {
    pub fn set(&self, fraction: f64) {
        self.0.store(fraction.to_bits(), Ordering::Relaxed);
    }

    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ToggleRecord {
    pub planned: u32,
    pub done: u32,
    pub refused_as_expected: u32,
    pub failures: Vec<ToggleFailure>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToggleFailure {
    /// Which write (1-based).
    pub n: u32,
    pub value: String,
    pub t_s: f64,
    pub what: String,
}

pub struct Toggler {
    handle: JoinHandle<()>,
    record: Arc<Mutex<ToggleRecord>>,
    stop: Arc<Control>,
}

impl Toggler {
    pub fn spawn(
        toggle: Toggle,
        progress: Arc<Progress>,
        control: &Arc<Control>,
        start: Instant,
    ) -> std::io::Result<Toggler> {
        let record = Arc::new(Mutex::new(ToggleRecord {
            planned: toggle.count,
            ..ToggleRecord::default()
        }));
        let stop = Arc::new(Control::default());
        let (rec, stopped) = (Arc::clone(&record), Arc::clone(&stop));
        let handle = spawn_thread(control, "knob-toggler", move || loop {
            let last_round = stopped.stopped();
            let due = toggle.due(progress.get());
            loop {
                let n = rec.lock().expect("toggle record").done + 1;
                if n > due {
                    break;
                }
                let value = toggle.value(n);
                let outcome = toggle.judge(value, &std::fs::write(&toggle.path, value));
                // read before the record is locked: it may wait for threads to go
                let effect = match outcome {
                    WriteOutcome::Accepted => knob_effect::check(&toggle.path, value),
                    _ => None,
                };
                let mut r = rec.lock().expect("toggle record");
                r.done = n;
                match outcome {
                    WriteOutcome::Accepted => {
                        if let Some(what) = effect {
                            r.failures.push(ToggleFailure {
                                n,
                                value: value.into(),
                                t_s: start.elapsed().as_secs_f64(),
                                what: format!("accepted, but {what}"),
                            })
                        }
                    }
                    WriteOutcome::RefusedAsExpected => r.refused_as_expected += 1,
                    WriteOutcome::Failed(e) => r.failures.push(ToggleFailure {
                        n,
                        value: value.into(),
                        t_s: start.elapsed().as_secs_f64(),
                        what: format!("write failed: {e}"),
                    }),
                    WriteOutcome::AcceptedUnexpectedly => r.failures.push(ToggleFailure {
                        n,
                        value: value.into(),
                        t_s: start.elapsed().as_secs_f64(),
                        what: "accepted, but the kernel should refuse it".into(),
                    }),
                }
            }
            if last_round {
                return;
            }
            std::thread::sleep(TICK);
        })?;
        Ok(Toggler {
            handle,
            record,
            stop,
        })
    }

    /// Make the writes still due, end the thread and return the record.
    pub fn finish(self) -> ToggleRecord {
        self.stop.stop();
        let _ = self.handle.join();
        let record = self.record.lock().expect("toggle record").clone();
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_the_due_writes_and_records_failures() {
        let dir = std::env::temp_dir().join(format!("pmr-toggle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let knob = dir.join("knob");
        std::fs::write(&knob, "0").unwrap();
        let toggle = Toggle {
            path: knob.clone(),
            values: vec!["0".into(), "1".into(), "2".into()],
            refused: vec!["2".into()],
            count: 6,
        };
        let progress = Arc::new(Progress::default());
        let control = Arc::new(Control::default());
        let t = Toggler::spawn(toggle, Arc::clone(&progress), &control, Instant::now()).unwrap();
        progress.set(0.5); // 3 of 6 due
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(
            std::fs::read_to_string(&knob).unwrap(),
            "0",
            "writes 1, 2, 0"
        );
        progress.set(1.0);
        let record = t.finish();
        assert_eq!((record.planned, record.done), (6, 6));
        // A plain file takes "2" too: both writes of it are unexpected accepts.
        assert_eq!(record.failures.len(), 2);
        assert!(record
            .failures
            .iter()
            .all(|f| f.value == "2" && f.what.contains("refuse")));
        assert_eq!(control.failure(), None);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
