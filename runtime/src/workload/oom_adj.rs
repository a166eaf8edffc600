//! oom_score_adj of each live app, as Android's activity manager assigns
//! it (ProcessList.java constants):
//! - the foreground app: 0;
//! - the previous app (the most recent other app, if it is still alive):
//!   700, or its class's adj if lower;
//! - otherwise by `adj_class`: persistent -800 (system processes, which
//!   lmkd never kills), perceptible 200 (the spec's
//!   `perceptible_adj`), service 500, cached 900, 910, 920, ... (at most
//!   999) from the most to the least recently used cached app.
//!
//! The activity manager's cached-slot spreading is simplified to one step
//! of 10 per app, which is what it does with ten or fewer cached apps.

use crate::spec::AdjClass;

pub const FOREGROUND_APP_ADJ: i32 = 0;
pub const PREVIOUS_APP_ADJ: i32 = 700;
pub const SERVICE_ADJ: i32 = 500;
pub const PERSISTENT_PROC_ADJ: i32 = -800;
pub const CACHED_APP_MIN_ADJ: i32 = 900;
pub const CACHED_APP_MAX_ADJ: i32 = 999;
const CACHED_APP_STEP: i32 = 10;

/// An app in recency order (most recently used first).
#[derive(Debug, Clone, Copy)]
pub struct Recency {
    pub app: usize,
    pub class: AdjClass,
    pub alive: bool,
}

/// (app, adj) for every live app.
pub fn oom_adjs(
    recency: &[Recency],
    current: Option<usize>,
    perceptible_adj: i32,
) -> Vec<(usize, i32)> {
    let previous = recency
        .iter()
        .find(|r| Some(r.app) != current)
        .filter(|r| r.alive)
        .map(|r| r.app);
    let mut cached_rank = 0;
    recency
        .iter()
        .filter(|r| r.alive)
        .map(|r| {
            let class_adj = match r.class {
                AdjClass::Perceptible => Some(perceptible_adj),
                AdjClass::Service => Some(SERVICE_ADJ),
                AdjClass::Persistent => Some(PERSISTENT_PROC_ADJ),
                AdjClass::Cached => None,
            };
            let adj = if Some(r.app) == current {
                FOREGROUND_APP_ADJ
            } else if Some(r.app) == previous {
                class_adj.unwrap_or(PREVIOUS_APP_ADJ).min(PREVIOUS_APP_ADJ)
            } else if let Some(adj) = class_adj {
                adj
            } else {
                cached_rank += 1;
                (CACHED_APP_MIN_ADJ + CACHED_APP_STEP * (cached_rank - 1)).min(CACHED_APP_MAX_ADJ)
            };
            (r.app, adj)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use AdjClass::*;

    fn r(app: usize, class: AdjClass, alive: bool) -> Recency {
        Recency { app, class, alive }
    }

    #[test]
    fn foreground_previous_and_cached_by_recency() {
        let recency = [
            r(3, Cached, true),
            r(1, Cached, true),
            r(0, Cached, true),
            r(2, Cached, true),
        ];
        assert_eq!(
            oom_adjs(&recency, Some(3), 200),
            vec![(3, 0), (1, 700), (0, 900), (2, 910)]
        );
    }

    #[test]
    fn classes_keep_their_adj_and_cached_ranks_skip_them() {
        let recency = [
            r(0, Cached, true),
            r(1, Perceptible, true),
            r(2, Service, true),
            r(3, Cached, true),
        ];
        assert_eq!(
            oom_adjs(&recency, Some(0), 200),
            vec![(0, 0), (1, 200), (2, 500), (3, 900)]
        );
        // A perceptible app as the previous app keeps the lower 200.
        assert_eq!(oom_adjs(&recency, None, 200)[0], (0, 700));
        assert_eq!(oom_adjs(&recency, None, 200)[1], (1, 200));
    }

    #[test]
    fn persistent_processes_stay_below_zero_even_as_previous_app() {
        let recency = [r(0, Persistent, true), r(1, Cached, true)];
        assert_eq!(oom_adjs(&recency, Some(1), 200), vec![(0, -800), (1, 0)]);
        assert_eq!(oom_adjs(&recency, None, 200), vec![(0, -800), (1, 900)]);
    }

    #[test]
    fn dead_apps_get_nothing_and_a_dead_previous_app_promotes_no_one() {
        let recency = [r(0, Cached, true), r(1, Cached, false), r(2, Cached, true)];
        assert_eq!(oom_adjs(&recency, Some(0), 200), vec![(0, 0), (2, 900)]);
    }

    #[test]
    fn cached_adj_is_capped() {
        let recency: Vec<Recency> = (0..15).map(|i| r(i, Cached, true)).collect();
        let adjs = oom_adjs(&recency, Some(0), 200);
        assert_eq!(adjs[1], (1, 700));
        assert_eq!(adjs[2], (2, 900));
        assert_eq!(adjs[11], (11, 990));
        assert_eq!(adjs[12], (12, 999));
        assert_eq!(adjs[14], (14, 999));
    }
}
