//! The data disk's content: `pmr-guest app-files` writes every app's files,
//! and the guest's setup refuses a disk that lacks one or holds it cut short.

mod common;

use common::Scratch;
use pmr_guest::setup::check_app_files;
use std::process::Command;

#[test]
fn app_files_command_writes_what_setup_checks() {
    let s = Scratch::new("app-files-command", |_| {});
    let dir = s.dir.join("written");
    let status = Command::new(env!("CARGO_BIN_EXE_pmr-guest"))
        .args(["app-files", "--spec"])
        .arg(&s.spec_path)
        .arg("--dir")
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success());
    check_app_files(&dir, &s.spec).unwrap();
    // the same bytes as the files the other tests' apps map
    for app in &s.spec.apps {
        let ours = std::fs::read_dir(dir.join(&app.name)).unwrap().count();
        assert!(ours > 0, "{} has no files", app.name);
        for entry in std::fs::read_dir(dir.join(&app.name)).unwrap() {
            let path = entry.unwrap().path();
            let theirs = s.data_dir.join(&app.name).join(path.file_name().unwrap());
            assert!(std::fs::read(&path).unwrap() == std::fs::read(theirs).unwrap());
        }
    }
}

#[test]
fn setup_refuses_a_missing_or_short_app_file() {
    let s = Scratch::new("app-files-check", |_| {});
    check_app_files(&s.data_dir, &s.spec).unwrap();
    let app = &s.spec.apps[0].name;
    let file = std::fs::read_dir(s.data_dir.join(app))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let len = std::fs::metadata(&file).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(len - 4096)
        .unwrap();
    let err = check_app_files(&s.data_dir, &s.spec)
        .unwrap_err()
        .to_string();
    assert!(err.contains(file.to_str().unwrap()), "{err}");
    std::fs::remove_file(&file).unwrap();
    assert!(check_app_files(&s.data_dir, &s.spec).is_err());
}
