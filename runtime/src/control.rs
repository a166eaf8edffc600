//! How the runtime's threads are told to stop and how a background thread
//! (lmkd, the sampler, the child reaper) reports a failure that must fail
//! the run: the activity manager checks `failure` while it waits.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest a periodic thread sleeps before it checks for the end of
/// the run (`Control::every`).
const WAKE: Duration = Duration::from_millis(100);

#[derive(Default)]
pub struct Control {
    stop: AtomicBool,
    failure: Mutex<Option<String>>,
}

impl Control {
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Record a failure; the first one wins.
    pub fn fail(&self, what: String) {
        self.failure
            .lock()
            .expect("failure lock")
            .get_or_insert(what);
    }

    pub fn failure(&self) -> Option<String> {
        self.failure.lock().expect("failure lock").clone()
    }

    /// Call `tick` at `first`, `first + period`, ... until the run stops,
    /// skipping the slots it fell behind on; the first error ends it.
    pub fn every<E>(
        &self,
        first: Instant,
        period: Duration,
        mut tick: impl FnMut() -> Result<(), E>,
    ) -> Result<(), E> {
        let mut next = first;
        loop {
            while !self.stopped() && Instant::now() < next {
                std::thread::sleep((next - Instant::now()).min(WAKE));
            }
            if self.stopped() {
                return Ok(());
            }
            tick()?;
            next += period;
            while next < Instant::now() {
                next += period;
            }
        }
    }
}

/// Spawn a runtime thread with a small stack (the `run` process is
/// mlockall'd, so every stack page is locked memory). A panic in the
/// thread fails the run instead of silently ending the thread.
pub fn spawn_thread(
    control: &Arc<Control>,
    name: &str,
    f: impl FnOnce() + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    let control = Arc::clone(control);
    let label = name.to_string();
    std::thread::Builder::new()
        .name(label.clone())
        .stack_size(256 << 10)
        .spawn(move || {
            if std::panic::catch_unwind(AssertUnwindSafe(f)).is_err() {
                control.fail(format!(
                    "the {label} thread panicked (message in console.log)"
                ));
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_failure_wins() {
        let c = Control::default();
        assert_eq!(c.failure(), None);
        c.fail("a".into());
        c.fail("b".into());
        assert_eq!(c.failure().as_deref(), Some("a"));
        assert!(!c.stopped());
        c.stop();
        assert!(c.stopped());
    }

    #[test]
    fn every_ticks_until_stopped_and_ends_at_the_first_error() {
        let c = Control::default();
        let mut ticks = 0;
        let period = Duration::from_millis(1);
        c.every(Instant::now(), period, || {
            ticks += 1;
            if ticks == 3 {
                c.stop();
            }
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(ticks, 3);
        let c = Control::default();
        assert_eq!(c.every(Instant::now(), period, || Err("bad")), Err("bad"));
    }

    #[test]
    fn a_panicking_thread_fails_the_run() {
        let c = Arc::new(Control::default());
        spawn_thread(&c, "doomed", || panic!("boom"))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(
            c.failure().as_deref(),
            Some("the doomed thread panicked (message in console.log)")
        );
    }
}
