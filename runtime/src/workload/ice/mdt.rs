//! Memory-aware dynamic thawing (Ice §4.2.3): one heartbeat for all the
//! frozen apps. An epoch keeps the selected apps frozen for E_f, then
//! thaws them for E_t, then freezes them again; E_f is computed from the
//! memory available at the epoch's start (Eq. 1):
//!
//! ```text
//! E_f / E_t = delta * 2^ceil(H_wm / S_am)      (at most max_freeze_ms)
//! ```
//!
//! H_wm is the system's high watermark, S_am the available memory (both
//! kB): with delta = 8, E_f is 16 E_t while S_am >= H_wm, 32 E_t down to
//! H_wm / 2 and 64 E_t below.
//!
//! An epoch starts as soon as an app is selected (frozen by RPF) while the
//! heartbeat idles, and the next one right after the freeze that ends the
//! previous one; with no app selected (all came to the front or died) the
//! heartbeat idles. An app RPF freezes during an epoch's freezing period
//! is thawed with the others at its end; one frozen in the thawing period
//! stays frozen until the next epoch's thawing period (the paper's rule).
//! Pure: the daemon (daemon.rs) reads the files and does the freezing.

use crate::spec::Mdt;
use std::time::{Duration, Instant};

/// The largest exponent of Eq. 1 computed (E_f is capped long before).
const MAX_EXPONENT: f64 = 62.0;

/// E_f in ms (Eq. 1) for a high watermark and available memory in kB.
/// No available memory at all counts as the most pressure; a watermark
/// of 0 gives an exponent of 0.
pub fn freeze_ms(mdt: &Mdt, high_wm_kb: i64, available_kb: i64) -> f64 {
    let exponent = if available_kb <= 0 {
        MAX_EXPONENT
    } else {
        (high_wm_kb.max(0) as f64 / available_kb as f64)
            .ceil()
            .min(MAX_EXPONENT)
    };
    (mdt.thaw_ms * mdt.delta * exponent.exp2()).min(mdt.max_freeze_ms)
}

/// Where the heartbeat is in its epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No app selected: no epoch.
    Idle,
    /// The selected apps are frozen until then.
    Freezing { until: Instant },
    /// The selected apps are thawed until then.
    Thawing { until: Instant },
}

/// What the daemon must do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Start an epoch: compute E_f (then `started`).
    StartEpoch,
    /// The freezing period is over: thaw the selected apps (then `thawed`).
    ThawAll,
    /// The thawing period is over: freeze the selected apps that are not
    /// frozen (then `refrozen`).
    RefreezeAll,
}

#[derive(Debug, Clone)]
pub struct Heartbeat {
    phase: Phase,
    thaw: Duration,
}

impl Heartbeat {
    /// A heartbeat whose thawing periods last `thaw` (E_t).
    pub fn new(thaw: Duration) -> Heartbeat {
        Heartbeat {
            phase: Phase::Idle,
            thaw,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The step due at `now`, `selected` telling whether any app is
    /// selected; without one the heartbeat idles.
    pub fn next(&mut self, now: Instant, selected: bool) -> Option<Step> {
        if !selected {
            self.phase = Phase::Idle;
            return None;
        }
        match self.phase {
            Phase::Idle => Some(Step::StartEpoch),
            Phase::Freezing { until } if now >= until => Some(Step::ThawAll),
            Phase::Thawing { until } if now >= until => Some(Step::RefreezeAll),
            _ => None,
        }
    }

    /// An epoch started at `now` with E_f = `freeze`.
    pub fn started(&mut self, now: Instant, freeze: Duration) {
        self.phase = Phase::Freezing {
            until: now + freeze,
        };
    }

    /// The selected apps were thawed at `now`.
    pub fn thawed(&mut self, now: Instant) {
        self.phase = Phase::Thawing {
            until: now + self.thaw,
        };
    }

    /// The selected apps were frozen again: the epoch is over.
    pub fn refrozen(&mut self) {
        self.phase = Phase::Idle;
    }

    /// When the current period ends, if one runs.
    pub fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Idle => None,
            Phase::Freezing { until } | Phase::Thawing { until } => Some(until),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Available;

    fn paper() -> Mdt {
        Mdt {
            delta: 8.0,
            thaw_ms: 1000.0,
            max_freeze_ms: 64_000.0,
            available: Available::MemFree,
        }
    }

    #[test]
    fn eq_1_doubles_e_f_as_available_memory_halves() {
        let m = paper();
        let h = 30_000;
        assert_eq!(freeze_ms(&m, h, 100_000), 16_000.0);
        assert_eq!(freeze_ms(&m, h, h), 16_000.0, "S_am = H_wm");
        assert_eq!(freeze_ms(&m, h, h - 1), 32_000.0);
        assert_eq!(freeze_ms(&m, h, h / 2), 32_000.0, "S_am = H_wm / 2");
        assert_eq!(freeze_ms(&m, h, h / 2 - 1), 64_000.0);
        assert_eq!(freeze_ms(&m, h, 1), 64_000.0, "capped");
        assert_eq!(freeze_ms(&m, h, 0), 64_000.0, "nothing available");
        assert_eq!(freeze_ms(&m, 0, 100_000), 8_000.0, "no watermark");
        let uncapped = Mdt {
            max_freeze_ms: 1e9,
            ..paper()
        };
        assert_eq!(freeze_ms(&uncapped, h, h / 3), 64_000.0);
        assert_eq!(freeze_ms(&uncapped, h, h / 3 - 1), 128_000.0);
        assert_eq!(freeze_ms(&uncapped, h, 0), 1e9);
    }

    #[test]
    fn an_epoch_freezes_thaws_and_freezes_again() {
        let t0 = Instant::now();
        let s = |v: u64| t0 + Duration::from_secs(v);
        let mut hb = Heartbeat::new(Duration::from_secs(1));
        assert_eq!(hb.next(t0, false), None, "nothing selected");
        assert_eq!(hb.next(t0, true), Some(Step::StartEpoch));
        hb.started(t0, Duration::from_secs(16));
        assert_eq!(hb.deadline(), Some(s(16)));
        assert_eq!(hb.next(s(15), true), None);
        assert_eq!(hb.next(s(16), true), Some(Step::ThawAll));
        hb.thawed(s(16));
        assert_eq!(hb.phase(), Phase::Thawing { until: s(17) });
        assert_eq!(hb.next(s(16), true), None);
        assert_eq!(hb.next(s(17), true), Some(Step::RefreezeAll));
        hb.refrozen();
        assert_eq!(hb.deadline(), None);
        assert_eq!(
            hb.next(s(17), true),
            Some(Step::StartEpoch),
            "the next epoch at once"
        );
    }

    #[test]
    fn the_heartbeat_idles_once_no_app_is_selected() {
        let t0 = Instant::now();
        let mut hb = Heartbeat::new(Duration::from_secs(1));
        hb.next(t0, true);
        hb.started(t0, Duration::from_secs(16));
        assert_eq!(hb.next(t0 + Duration::from_secs(3), false), None);
        assert_eq!(hb.phase(), Phase::Idle);
        // an app frozen later starts an epoch of its own
        let later = t0 + Duration::from_secs(5);
        assert_eq!(hb.next(later, true), Some(Step::StartEpoch));
    }
}
