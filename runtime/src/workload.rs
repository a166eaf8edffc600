//! The phone's workload: the activity manager (activity_manager.rs) driving
//! the apps (app.rs, one process each, over protocol.rs) through the seeded
//! switch plan (switch_plan.rs), with Android's oom_score_adj classes
//! (oom_adj.rs), Acclaim's background marks on their cgroups
//! (background_marks.rs) and skew rectification's pageout of the anonymous
//! memory an app left unused in front (unused_anon.rs) with its swappiness
//! feedback loop (anon_file_balance.rs); the apps' memory (memory.rs) and
//! files (app_files.rs), the calibrated CPU work (bench.rs), what a launch
//! cost (launch_cost.rs), the frames an app in front draws (frames.rs) and
//! the ticks.csv rows of frames and background periods (ticks.rs), Ice's
//! app freezing (ice.rs), SWAM's swap-file daemon (swam.rs), the child
//! reaper, and the max-rate allocator (max_rate.rs).

pub mod activity_manager;
pub mod anon_file_balance;
pub mod app;
pub mod app_files;
pub mod app_process;
pub mod background_marks;
pub mod bench;
pub mod child_reaper;
pub mod frames;
pub mod ice;
pub mod launch_cost;
pub mod max_rate;
pub mod memory;
pub mod oom_adj;
pub mod protocol;
pub mod swam;
pub mod switch_plan;
pub mod ticks;
pub mod unused_anon;
pub mod zygote;
