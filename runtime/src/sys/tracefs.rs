//! `swap_write_hist.json`: a tracefs hist trigger on `block/block_rq_issue`
//! keyed on `bytes`, filtered on the swap device and on writes, counts the
//! write requests issued to the swap device by size over the workload.
//!
//! The tracepoint records `dev` in the kernel's internal encoding,
//! `(major << 20) | minor`, and `rwbs` as a string such as "W" or "WS".
//! Triggers are appended to the `trigger` file (opening it with O_TRUNC
//! would drop every trigger of the event) and removed by appending the
//! same command prefixed with `!`.

use crate::sys;
use crate::sys::proc_files::mount_point;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";
const EVENT_DIR: &str = "events/block/block_rq_issue";

/// The device number as block tracepoints record it.
pub fn kernel_dev(major: u32, minor: u32) -> u64 {
    (u64::from(major) << 20) | u64::from(minor)
}

pub fn hist_command(major: u32, minor: u32) -> String {
    format!(
        "hist:keys=bytes:vals=hitcount:sort=bytes if dev == {} && rwbs ~ \"*W*\"",
        kernel_dev(major, minor)
    )
}

/// `{ bytes:       4096 } hitcount:        123` lines -> bytes -> hits.
pub fn parse_hist(text: &str) -> Result<BTreeMap<u64, u64>> {
    let mut hist = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with('{')) {
        let parse = || -> Option<(u64, u64)> {
            let (key, rest) = line.strip_prefix('{')?.split_once('}')?;
            let bytes = key.trim().strip_prefix("bytes:")?.trim().parse().ok()?;
            let hits = rest.trim().strip_prefix("hitcount:")?.trim().parse().ok()?;
            Some((bytes, hits))
        };
        let (bytes, hits) = parse().with_context(|| format!("bad hist line {line:?}"))?;
        *hist.entry(bytes).or_insert(0) += hits;
    }
    Ok(hist)
}

/// Where tracefs is mounted; mounted at its usual place if it is not.
pub fn mount_dir() -> Result<PathBuf> {
    match mount_point(&fs::read_to_string("/proc/mounts")?, "tracefs") {
        Some(point) => Ok(point),
        None => {
            sys::mount("tracefs", Path::new(DEFAULT_MOUNT), "tracefs")
                .with_context(|| format!("cannot mount tracefs at {DEFAULT_MOUNT}"))?;
            Ok(PathBuf::from(DEFAULT_MOUNT))
        }
    }
}

#[derive(Serialize)]
pub struct SwapWriteHistFile<'a> {
    pub dev: &'a str,
    pub bytes: BTreeMap<u64, u64>,
}

pub struct SwapWriteHist {
    event: PathBuf,
    command: String,
}

impl SwapWriteHist {
    pub fn install(tracefs: &Path, major: u32, minor: u32) -> Result<SwapWriteHist> {
        let hist = SwapWriteHist {
            event: tracefs.join(EVENT_DIR),
            command: hist_command(major, minor),
        };
        if let Err(e) = hist.append(&hist.command) {
            let log = fs::read_to_string(tracefs.join("error_log")).unwrap_or_default();
            let detail = log.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            bail!(
                "cannot install {:?}: {e:#} (tracefs error_log: {detail})",
                hist.command
            );
        }
        Ok(hist)
    }

    pub fn read(&self) -> Result<BTreeMap<u64, u64>> {
        parse_hist(
            &fs::read_to_string(self.event.join("hist")).context("cannot read the hist file")?,
        )
    }

    pub fn remove(&self) -> Result<()> {
        self.append(&format!("!{}", self.command))
    }

    fn append(&self, line: &str) -> Result<()> {
        let path = self.event.join("trigger");
        let mut f = OpenOptions::new()
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        f.write_all(line.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_encoding_and_command() {
        assert_eq!(kernel_dev(254, 16), 254 * 1048576 + 16);
        assert_eq!(
            hist_command(254, 16),
            "hist:keys=bytes:vals=hitcount:sort=bytes if dev == 266338320 && rwbs ~ \"*W*\""
        );
    }

    #[test]
    fn parses_hist_file() {
        let text = "\
# event histogram
#
# trigger info: hist:keys=bytes:vals=hitcount:sort=bytes:size=2048 if dev == 266338320 [active]
#

{ bytes:       4096 } hitcount:        123
{ bytes:       8192 } hitcount:         12
{ bytes:     524288 } hitcount:          1

Totals:
    Hits: 136
    Entries: 3
    Dropped: 0
";
        let hist = parse_hist(text).unwrap();
        assert_eq!(hist.len(), 3);
        assert_eq!(hist[&4096], 123);
        assert_eq!(hist[&524288], 1);
        let json = serde_json::to_string(&SwapWriteHistFile {
            dev: "vdb",
            bytes: hist,
        })
        .unwrap();
        assert_eq!(
            json,
            r#"{"dev":"vdb","bytes":{"4096":123,"8192":12,"524288":1}}"#
        );
        assert!(parse_hist("{ bytes: x } hitcount: 1\n").is_err());
        assert!(parse_hist("# nothing\n").unwrap().is_empty());
    }
}
