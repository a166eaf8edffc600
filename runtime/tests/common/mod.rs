//! Helpers shared by the host-side integration tests: a scratch directory
//! with a small spec (the fixture with footprints of a few MB, the
//! directory as its out_dir, with ticks.csv made) and the apps' files
//! written as `pmr-guest app-files` writes them.

// Each test crate compiles this module and uses only part of it.
#![allow(dead_code)]

use pmr_guest::setup::write_app_files;
use pmr_guest::spec::Spec;
use pmr_guest::workload::zygote::Zygote;
use std::path::{Path, PathBuf};

pub struct Scratch {
    pub dir: PathBuf,
    pub spec_path: PathBuf,
    pub spec: Spec,
    pub data_dir: PathBuf,
}

impl Scratch {
    /// `tweak` may change the fixture (as JSON) before it is shrunk.
    pub fn new(name: &str, tweak: impl FnOnce(&mut serde_json::Value)) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pmr-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spec.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
        v["out_dir"] = dir.to_str().unwrap().into();
        tweak(&mut v);
        for app in v["apps"].as_array_mut().unwrap() {
            app["anon_mb"] = 4.into();
            app["file_mb"] = 1.into();
            app["init_work_ms"] = 1.into();
            app["growth_ms"] = 200.into();
            app["fg_period_ms"] = 50.into();
            app["fg_churn_mb"] = 1.into();
        }
        let spec_path = dir.join("spec.json");
        std::fs::write(&spec_path, v.to_string()).unwrap();
        let spec = Spec::load(&spec_path).unwrap();
        let data_dir = dir.join("data");
        write_app_files(&data_dir, &spec).unwrap();
        pmr_guest::workload::ticks::create(&dir).unwrap();
        Scratch {
            dir,
            spec_path,
            spec,
            data_dir,
        }
    }
}

impl Scratch {
    /// A zygote for this spec, in a stand-in cgroup of its own; the test
    /// process becomes a child subreaper, so that the app processes it
    /// forks are the test's children.
    pub fn zygote(&self) -> Zygote {
        pmr_guest::sys::set_child_subreaper().unwrap();
        let cgroup = self.dir.join("zygote");
        std::fs::create_dir_all(&cgroup).unwrap();
        std::fs::write(cgroup.join("cgroup.procs"), "").unwrap();
        Zygote::start(
            Path::new(env!("CARGO_BIN_EXE_pmr-guest")),
            &self.spec_path,
            &self.data_dir,
            &cgroup,
        )
        .unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
