//! The VMAs whose pages skew rectification tracks: a process's private,
//! writable anonymous mappings from /proc/PID/maps (the heap, the stack,
//! plain and named anonymous mappings), where an app's anonymous memory
//! lives. File mappings, shared memory and special mappings (`[vdso]`, ...)
//! are left out.

use crate::sys::proc_files::parse_maps_line;
use std::ops::Range;

/// The address range of the mapping a /proc/PID/maps line describes, if
/// it is a private writable anonymous one.
pub fn private_anon(line: &str) -> Option<Range<u64>> {
    let vma = parse_maps_line(line)?;
    let anon = vma.path.is_empty()
        || vma.path == "[heap]"
        || vma.path == "[stack]"
        || vma.path.starts_with("[anon:");
    (anon && vma.private_writable()).then_some(vma.range)
}

/// The private anonymous VMAs of `pid`, in address order.
pub fn read(pid: i32) -> std::io::Result<Vec<Range<u64>>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    Ok(text.lines().filter_map(private_anon).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_private_writable_anonymous_mappings() {
        for (line, kept) in [
            ("7f0000000000-7f0000004000 rw-p 00000000 00:00 0 ", Some(0x7f0000000000..0x7f0000004000)),
            ("55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]", Some(0x55d0c0a00000..0x55d0c0a21000)),
            ("7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0                          [stack]", Some(0x7ffd1c000000..0x7ffd1c021000)),
            ("7f1000000000-7f1000001000 rw-p 00000000 00:00 0                          [anon:dalvik heap]", Some(0x7f1000000000..0x7f1000001000)),
            ("7f0000000000-7f0000004000 rw-p 00000000 00:00 0", Some(0x7f0000000000..0x7f0000004000)),
        ] {
            assert_eq!(private_anon(line), kept, "{line}");
        }
    }

    #[test]
    fn leaves_out_everything_else() {
        for line in [
            // read-only, guard pages, shared anonymous memory
            "7f0000000000-7f0000004000 r--p 00000000 00:00 0 ",
            "7f0000000000-7f0000004000 ---p 00000000 00:00 0 ",
            "7f0000000000-7f0000004000 rw-s 00000000 00:01 1024                       /dev/zero (deleted)",
            "7f0000000000-7f0000004000 rw-s 00000000 00:00 0 ",
            // file mappings, even private writable ones
            "7f2000000000-7f2000002000 rw-p 0001f000 fd:01 131                        /usr/lib/libc.so.6",
            "7f3000000000-7f3000100000 r--s 00000000 fe:10 12                         /data/app/chrome/file0",
            // special mappings
            "7ffd1c100000-7ffd1c102000 r-xp 00000000 00:00 0                          [vdso]",
            "7ffd1c0fc000-7ffd1c100000 rw-p 00000000 00:00 0                          [vvar]",
            // malformed
            "",
            "zz-7f00 rw-p 00000000 00:00 0",
            "7f0000004000-7f0000000000 rw-p 00000000 00:00 0",
        ] {
            assert_eq!(private_anon(line), None, "{line:?}");
        }
    }

    #[test]
    fn reads_this_process() {
        let vmas = read(std::process::id() as i32).unwrap();
        assert!(!vmas.is_empty());
        assert!(vmas.windows(2).all(|w| w[0].end <= w[1].start));
    }
}
