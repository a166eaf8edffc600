//! The child reaper thread: waits for every child of the `run` process
//! (the app processes), removes it from lmkd's registry at once, and tells
//! the activity manager how it ended. An app killed by lmkd or the kernel
//! ends with SIGKILL; anything else is an app failure.

use crate::control::{spawn_thread, Control};
use crate::lmkd::proc_registry::ProcRegistry;
use crate::sys::{self, Exit};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the reaper sleeps when the process has no children.
const IDLE: Duration = Duration::from_millis(10);

#[derive(Debug, Clone, Copy)]
pub struct Death {
    pub pid: i32,
    pub exit: Exit,
}

pub fn spawn(
    registry: Arc<ProcRegistry>,
    control: Arc<Control>,
) -> std::io::Result<(JoinHandle<()>, Receiver<Death>)> {
    let (tx, rx) = channel();
    let handle = spawn_thread(&control.clone(), "child-reaper", move || loop {
        match sys::wait_any_child() {
            Ok(Some((pid, exit))) => {
                registry.remove(pid);
                // The activity manager is gone at shutdown; nothing to tell.
                let _ = tx.send(Death { pid, exit });
            }
            Ok(None) if control.stopped() => return,
            Ok(None) => std::thread::sleep(IDLE),
            Err(e) => {
                control.fail(format!("child reaper: waitpid failed: {e}"));
                return;
            }
        }
    })?;
    Ok((handle, rx))
}
