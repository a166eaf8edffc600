//! pmr-guest: the in-guest runtime of the PMR testbed, an emulated Android
//! phone under memory pressure in a QEMU guest. The contract with the host
//! harness is docs/guest-interface.md; `main.rs` is the command line.
//!
//! `run` (run.rs) sets the phone up (setup.rs, sys/cgroup.rs), then runs the
//! activity manager (workload/activity_manager.rs) with lmkd (lmkd.rs), the
//! metrics sampler (metrics.rs) and the child reaper as threads of one
//! mlockall'd process; apps (workload/app.rs) are separate processes driven
//! over a line protocol (workload/protocol.rs).
//!
//! `reliability` (reliability.rs, reliability/) shares the setup and runs a
//! data integrity and kernel reliability check under heavy swapping: checker
//! processes (reliability/checker.rs) verifying self-checking pages,
//! stress-ng, a knob toggled under load, a memcg killed mid-run, accounting
//! checks at the end; with a swap sized to run full the OOM killer may take
//! checkers.
//!
//! The folders: `workload/` (the phone's apps and their driver), `lmkd/`,
//! `reliability/`, `sys/` (the ways into the kernel); spec.json, setup, the
//! sampler and the events log are shared by all.

pub mod control;
pub mod events;
pub mod lmkd;
pub mod metrics;
pub mod pattern;
pub mod reliability;
pub mod run;
pub mod setup;
pub mod spec;
pub mod sys;
pub mod workload;
