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
//!
//! With `background_use`, every `every`-th switch is followed by the use
//! of a background app: its `apps` in shuffled cycles (each used once per
//! cycle), dwell times from `background_use.dwell_ms`. Their
//! order and dwells have streams of their own, so the switches are the
//! same with or without them.

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
    /// The background app used after this switch's dwell, if any.
    pub then_use: Option<PlannedUse>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlannedUse {
    pub app: String,
    pub dwell: Duration,
}

fn stream(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

fn draw_dwell(rng: &mut ChaCha8Rng, [low, high]: [f64; 2]) -> Duration {
    let dwell_ms = if low < high {
        rng.gen_range(low..=high)
    } else {
        low
    };
    Duration::from_secs_f64(dwell_ms / 1e3)
}

pub fn plan(seed: u64, scenario: &Scenario) -> Vec<PlannedSwitch> {
    let mut order_rng = stream(seed, 1);
    let mut dwell_rng = stream(seed, 2);
    let mut use_order_rng = stream(seed, 3);
    let mut use_dwell_rng = stream(seed, 4);
    let mut use_queue: Vec<String> = Vec::new();

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
            let dwell = draw_dwell(&mut dwell_rng, scenario.dwell_ms);
            last = Some(app.clone());
            let then_use = scenario
                .background_use
                .as_ref()
                .filter(|u| (switches.len() as u32 + 1).is_multiple_of(u.every))
                .map(|u| {
                    if use_queue.is_empty() {
                        use_queue = u.apps.clone();
                        use_queue.shuffle(&mut use_order_rng);
                    }
                    PlannedUse {
                        app: use_queue.remove(0),
                        dwell: draw_dwell(&mut use_dwell_rng, u.dwell_ms),
                    }
                });
            switches.push(PlannedSwitch {
                round,
                index: index as u32,
                app,
                dwell,
                then_use,
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
        let spec = Spec::parse(include_str!("../../tests/fixtures/spec.json")).unwrap();
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
    fn background_use_cycles_through_every_background_app() {
        use crate::spec::BackgroundUse;
        let plain = scenario(&["a", "b", "c"], 4);
        let with_use = Scenario {
            background_use: Some(BackgroundUse {
                every: 2,
                dwell_ms: [100.0, 200.0],
                apps: ["x", "y", "z", "w"].map(String::from).to_vec(),
            }),
            ..plain.clone()
        };
        let p = plan(5, &with_use);
        let uses: Vec<&PlannedUse> = p.iter().filter_map(|s| s.then_use.as_ref()).collect();
        // after switches 2, 4, ..., 12
        assert_eq!(uses.len(), 6);
        assert!(p.iter().step_by(2).all(|s| s.then_use.is_none()));
        let mut cycle: Vec<&str> = uses[..4].iter().map(|u| u.app.as_str()).collect();
        cycle.sort();
        assert_eq!(cycle, ["w", "x", "y", "z"]);
        assert!(uses
            .iter()
            .all(|u| (0.1..=0.2).contains(&u.dwell.as_secs_f64())));
        // the switches themselves do not change
        let strip =
            |p: Vec<PlannedSwitch>| p.into_iter().map(|s| (s.app, s.dwell)).collect::<Vec<_>>();
        assert_eq!(strip(p), strip(plan(5, &plain)));
        assert!(plan(5, &plain).iter().all(|s| s.then_use.is_none()));
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
