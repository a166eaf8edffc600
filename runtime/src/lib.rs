//! pmr-guest: the in-guest runtime of the PMR testbed, an emulated Android
//! phone under memory pressure in a QEMU guest. The contract with the host
//! harness is docs/guest-interface.md; `main.rs` is the command line.
//!
//! `run` (run.rs) sets the phone up (setup.rs, cgroup.rs), then runs the
//! activity manager (activity_manager.rs) with lmkd (lmkd.rs), the metrics
//! sampler (metrics.rs) and the child reaper as threads of one mlockall'd
//! process; apps (app.rs) are separate processes driven over a line
//! protocol (protocol.rs).
//!
//! `reliability` (reliability.rs, reliability_checks.rs) shares the setup and runs a data
//! integrity and kernel reliability check under heavy swapping: checker
//! processes (checker.rs) verifying self-checking pages, stress-ng, a knob
//! toggled under load, a memcg killed mid-run, accounting checks at the end;
//! with a swap sized to run full (swap_watch.rs, checker_fate.rs) the OOM
//! killer may take checkers.

pub mod activity_manager;
pub mod app;
pub mod app_files;
pub mod app_process;
pub mod bench;
pub mod cgroup;
pub mod checked_page;
pub mod checker;
pub mod checker_fate;
pub mod checker_handle;
pub mod child_reaper;
pub mod control;
pub mod events;
pub mod knob_toggler;
pub mod kthread_sched;
pub mod launch_cost;
pub mod lmkd;
pub mod max_rate;
pub mod memcg_lifetime;
pub mod memcg_stat;
pub mod memory;
pub mod metrics;
pub mod oom_adj;
pub mod pattern;
pub mod proc_files;
pub mod proc_registry;
pub mod protocol;
pub mod psi;
pub mod reliability;
pub mod reliability_checks;
pub mod reliability_report;
pub mod reliability_spec;
pub mod run;
pub mod setup;
pub mod spec;
pub mod stress_ng;
pub mod swap_watch;
pub mod switch_plan;
pub mod sys;
pub mod threads_cpu;
pub mod toggle_plan;
pub mod trace_events;
pub mod tracefs;
