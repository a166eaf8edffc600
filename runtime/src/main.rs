//! The `pmr-guest` command line: `run`, `app`, `app-files`, `reliability`, `checker`,
//! `bench`, `alloc` and `schema`.

use clap::{Parser, Subcommand, ValueEnum};
use pmr_guest::reliability::{self, checker};
use pmr_guest::spec::{self, Spec};
use pmr_guest::workload::{bench, max_rate, zygote};
use pmr_guest::{run, setup};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "pmr-guest",
    version,
    about = "In-guest runtime of the PMR testbed"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Set up the phone, run the scenario, write the results (guest only, as root).
    Run {
        /// The run directory's spec.json.
        #[arg(long)]
        spec: PathBuf,
    },
    /// The zygote, spawned by `run`: forks the app processes.
    #[command(hide = true)]
    Zygote {
        #[arg(long)]
        spec: PathBuf,
        /// Where the apps' files are (the data disk's mount point).
        #[arg(long)]
        data_dir: PathBuf,
    },
    /// Write every app's files under DIR: the data disk's content, which the
    /// host makes into the ext4 image that `run` mounts read-only.
    AppFiles {
        /// A run directory's spec.json.
        #[arg(long)]
        spec: PathBuf,
        /// An empty or missing directory.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Data integrity and kernel reliability under heavy swapping (guest only, as root);
    /// writes reliability.json into the spec's out_dir.
    Reliability {
        /// The reliability spec (spec.json in the output directory).
        #[arg(long)]
        spec: PathBuf,
    },
    /// One checker process, spawned by `reliability`.
    #[command(hide = true)]
    Checker {
        #[arg(long)]
        label: String,
        #[arg(long)]
        seed: u64,
        /// Anonymous memory to check, in 4 KiB pages.
        #[arg(long)]
        pages: usize,
    },
    /// Time-dilation microbenchmark; prints {"ns_per_page": .., "work_iters_per_ms": ..}.
    Bench {
        /// Size of the anonymous buffer, in 4 KiB pages.
        #[arg(long, default_value_t = 16384)]
        pages: usize,
        /// Rounds to take the median over.
        #[arg(long, default_value_t = 7)]
        rounds: usize,
    },
    /// Max-rate allocator (max_rate.rs): keeps MB of fresh anonymous memory
    /// turning over for SECONDS; prints {"pages": .., "seconds": .., "mbps": ..}.
    Alloc {
        #[arg(long)]
        mb: usize,
        #[arg(long, default_value_t = 2)]
        threads: usize,
        #[arg(long)]
        seconds: f64,
    },
    /// Print the JSON Schema of a spec.json, generated from the types that
    /// parse it: the repository's schemas/ holds them, and the host checks
    /// what it writes against them.
    Schema {
        #[arg(value_enum)]
        of: SchemaOf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum SchemaOf {
    /// `run`'s spec.json (schemas/spec.schema.json)
    Spec,
    /// `reliability`'s spec.json (schemas/reliability-spec.schema.json)
    ReliabilitySpec,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Cmd::Run { spec } => run::main(&spec),
        Cmd::Zygote { spec, data_dir } => match zygote::main(&spec, &data_dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("pmr-guest zygote: error: {e:#}");
                ExitCode::from(1)
            }
        },
        Cmd::AppFiles { spec, dir } => {
            match Spec::load(&spec).and_then(|spec| setup::write_app_files(&dir, &spec)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("pmr-guest app-files: error: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        Cmd::Reliability { spec } => reliability::main(&spec),
        Cmd::Checker { label, seed, pages } => match checker::main(&label, seed, pages) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("pmr-guest {label}: error: {e:#}");
                ExitCode::from(1)
            }
        },
        Cmd::Alloc {
            mb,
            threads,
            seconds,
        } => match max_rate::run(mb, threads, seconds) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("pmr-guest: error: {e:#}");
                ExitCode::from(1)
            }
        },
        Cmd::Bench { pages, rounds } => match bench::run(pages, rounds) {
            Ok(result) => {
                println!("{}", result.to_line());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("pmr-guest: error: {e:#}");
                ExitCode::from(1)
            }
        },
        Cmd::Schema { of } => {
            let schema = match of {
                SchemaOf::Spec => spec::json_schema(),
                SchemaOf::ReliabilitySpec => reliability::spec::json_schema(),
            };
            print!("{schema}");
            ExitCode::SUCCESS
        }
    }
}
