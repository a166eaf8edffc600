//! End-to-end test of a checker process on the host: spawn `pmr-guest
//! checker` the way `reliability` does (a directory with a regular
//! `cgroup.procs` file stands in for its cgroup), let it sweep, stop it,
//! check its final verification, and let it go.

use pmr_guest::reliability::checker_handle::Checker;
use pmr_guest::sys::Exit;
use std::time::{Duration, Instant};

const PAGES: usize = 3000;

fn until(c: &mut Checker, what: &str, done: impl Fn(&Checker) -> bool) {
    let start = Instant::now();
    while !done(c) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no {what} within 30 s"
        );
        c.poll(Duration::from_millis(50)).unwrap();
        assert!(c.mismatch.is_none(), "{:?}", c.mismatch);
    }
}

#[test]
fn a_checker_sweeps_verifies_on_stop_and_exits_when_released() {
    let cgroup = std::env::temp_dir().join(format!("pmr-checker-{}", std::process::id()));
    std::fs::create_dir_all(&cgroup).unwrap();
    std::fs::write(cgroup.join("cgroup.procs"), "").unwrap();
    let exe = env!("CARGO_BIN_EXE_pmr-guest");
    let mut c = Checker::spawn(exe.as_ref(), 3, 77, PAGES, cgroup.clone()).unwrap();
    assert_eq!(c.bytes(), (PAGES * 4096) as u64);

    until(&mut c, "two sweeps", |c| c.filled && c.sweeps >= 2);
    assert!(c.stop());
    until(&mut c, "final verification", |c| c.verified.is_some());
    assert_eq!(c.verified, Some(PAGES as u64));
    assert!(c.page_checks() >= 3 * PAGES as u64);
    assert_eq!(c.exit, None, "it holds its memory until released");

    c.release();
    assert_eq!(
        c.wait_exit(Duration::from_secs(10)).unwrap(),
        Some(Exit::Code(0))
    );
    assert_eq!(
        std::fs::read_to_string(cgroup.join("cgroup.procs")).unwrap(),
        "0",
        "the child joined its cgroup before exec"
    );
    std::fs::remove_dir_all(cgroup).unwrap();
}
