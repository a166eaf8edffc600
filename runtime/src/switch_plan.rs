//! The seeded plan of app switches: for each of `rounds` rounds, every
//! foreground app once in a shuffled order, each with a dwell time drawn
//! uniformly from `dwell_ms`. The plan depends only on the seed and the
//! scenario, so every scheme sees the same switches.
//!
//! Order and dwell times come from separate ChaCha8 streams, so changing
//! `dwell_ms` does not change the order. A round never starts with the app
//! the previous round ended with (a "switch" to the app already in front
//! would be no switch): if the shuffle does that, the first app swaps
//! places with a randomly chosen other one.

use crate::spec::Scenario;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct PlannedSwitch {
    pub round: u32,
    /// Position within the round.
    pub index: u32,
    pub app: String,
    pub dwell: Duration,
}

pub fn plan(seed: u64, scenario: &Scenario) -> Vec<PlannedSwitch> {
    let mut order_rng = ChaCha8Rng::seed_from_u64(seed);
    order_rng.set_stream(1);
    let mut dwell_rng = ChaCha8Rng::seed_from_u64(seed);
    dwell_rng.set_stream(2);
    let [low, high] = scenario.dwell_ms;

    let mut switches = Vec::new();
    let mut last: Option<String> = None;
    for round in 0..scenario.rounds {
        let mut apps = scenario.foreground.clone();
        apps.shuffle(&mut order_rng);
        if apps.len() > 1 && last.as_ref() == apps.first() {
            let other = order_rng.gen_range(1..apps.len());
            apps.swap(0, other);
        }
        for (index, app) in apps.into_iter().enumerate() {
            let dwell_ms = if low < high {
                dwell_rng.gen_range(low..=high)
            } else {
                low
            };
            last = Some(app.clone());
            switches.push(PlannedSwitch {
                round,
                index: index as u32,
                app,
                dwell: Duration::from_secs_f64(dwell_ms / 1e3),
            });
        }
    }
    switches
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

    fn scenario(foreground: &[&str], rounds: u32) -> Scenario {
        let spec = Spec::parse(include_str!("../tests/fixtures/spec.json")).unwrap();
        Scenario {
            foreground: foreground.iter().map(|s| s.to_string()).collect(),
            rounds,
            ..spec.scenario
        }
    }

    #[test]
    fn same_seed_same_plan_other_seed_other_plan() {
        let s = scenario(&["a", "b", "c", "d", "e", "f"], 5);
        assert_eq!(plan(42, &s), plan(42, &s));
        let order = |seed| {
            plan(seed, &s)
                .into_iter()
                .map(|p| p.app)
                .collect::<Vec<_>>()
        };
        assert_ne!(order(42), order(43));
    }

    #[test]
    fn every_app_once_per_round_and_dwell_in_range() {
        let s = scenario(&["a", "b", "c", "d"], 10);
        let p = plan(7, &s);
        assert_eq!(p.len(), 40);
        for round in 0..10 {
            let mut apps: Vec<&str> = p
                .iter()
                .filter(|x| x.round == round)
                .map(|x| x.app.as_str())
                .collect();
            apps.sort();
            assert_eq!(apps, ["a", "b", "c", "d"]);
        }
        assert!(p
            .iter()
            .all(|x| (1.5..=3.0).contains(&x.dwell.as_secs_f64())));
        assert!(p.windows(2).any(|w| w[0].dwell != w[1].dwell));
        assert_eq!(p[5].index, 1);
    }

    #[test]
    fn never_the_same_app_twice_in_a_row() {
        for seed in 0..50 {
            let p = plan(seed, &scenario(&["a", "b"], 20));
            assert!(p.windows(2).all(|w| w[0].app != w[1].app), "seed {seed}");
        }
    }

    #[test]
    fn dwell_changes_do_not_change_the_order() {
        let s1 = scenario(&["a", "b", "c"], 4);
        let s2 = Scenario {
            dwell_ms: [100.0, 200.0],
            ..s1.clone()
        };
        let order = |s: &Scenario| plan(9, s).into_iter().map(|p| p.app).collect::<Vec<_>>();
        assert_eq!(order(&s1), order(&s2));
    }
}
