//! The memory the operating system lets this process have, which can be
//! far below the machine's: the address-space limit (`ulimit -v`,
//! `RLIMIT_AS`) and the cgroup memory limit (containers, batch jobs). An
//! allocation beyond either aborts the process (and a Python interpreter
//! with it), so the resource estimate must stay under both.
//!
//! Read from `/proc` and `/sys`, so pktsim needs no `libc`; on systems
//! without them (or where they say "unlimited") there is no such limit.

use std::path::Path;

/// A limit of the process's memory and where it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryCap {
    /// Bytes the run may still allocate under this limit.
    pub bytes: u64,
    /// The limit, in words for an error message.
    pub source: &'static str,
}

/// Values at or above this are "no limit" (cgroup v1 writes 2^63 rounded
/// down to a page for an unlimited group).
const UNLIMITED: u64 = 1 << 60;

/// The soft address-space limit from the text of `/proc/self/limits`,
/// bytes (`None`: unlimited or not found).
pub fn parse_address_space_limit(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft = line["Max address space".len()..]
        .split_whitespace()
        .next()?;
    soft.parse::<u64>().ok().filter(|&b| b < UNLIMITED)
}

/// `VmSize` from the text of `/proc/self/status`, bytes: the address space
/// the process already uses (code, libraries, an interpreter), which counts
/// against the address-space limit.
pub fn parse_vm_size(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// A cgroup memory limit from the text of `memory.max` (v2: a number or
/// `max`) or `memory.limit_in_bytes` (v1), bytes.
pub fn parse_cgroup_limit(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|&b| b < UNLIMITED)
}

/// The room left under the address-space limit, if there is one.
pub fn address_space() -> Option<MemoryCap> {
    let limit = parse_address_space_limit(&std::fs::read_to_string("/proc/self/limits").ok()?)?;
    let used = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| parse_vm_size(&s))
        .unwrap_or(0);
    Some(MemoryCap {
        bytes: limit.saturating_sub(used),
        source: "the process's address-space limit (ulimit -v) less what it already maps",
    })
}

/// The cgroup memory limit of this process, if there is one: the group's
/// own file first (`/proc/self/cgroup` names it), then the mount's root.
pub fn cgroup() -> Option<MemoryCap> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut files: Vec<String> = Vec::new();
    for line in own.lines() {
        // v2: "0::/path"; v1: "4:memory:/path".
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next(), parts.next());
        let Some(path) = path.map(|p| p.trim_start_matches('/')) else {
            continue;
        };
        match controllers {
            Some("") if !path.is_empty() => files.push(format!("/sys/fs/cgroup/{path}/memory.max")),
            Some(c) if c.split(',').any(|c| c == "memory") && !path.is_empty() => files.push(
                format!("/sys/fs/cgroup/memory/{path}/memory.limit_in_bytes"),
            ),
            _ => {}
        }
    }
    files.push("/sys/fs/cgroup/memory.max".into());
    files.push("/sys/fs/cgroup/memory/memory.limit_in_bytes".into());
    let bytes = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(Path::new(f)).ok())
        .filter_map(|t| parse_cgroup_limit(&t))
        .min()?;
    Some(MemoryCap {
        bytes,
        source: "the cgroup memory limit (/sys/fs/cgroup)",
    })
}

/// The tightest of the operating system's limits, if any.
pub fn tightest() -> Option<MemoryCap> {
    [address_space(), cgroup()]
        .into_iter()
        .flatten()
        .min_by_key(|c| c.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_space_limit_is_read_from_proc_limits() {
        let unlimited = "Limit                     Soft Limit           Hard Limit           Units\n\
                         Max stack size            8388608              unlimited            bytes\n\
                         Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(parse_address_space_limit(unlimited), None);
        let four_gb = unlimited.replace(
            "Max address space         unlimited            unlimited",
            "Max address space         4294967296           unlimited",
        );
        assert_eq!(parse_address_space_limit(&four_gb), Some(4 << 30));
        assert_eq!(parse_address_space_limit(""), None);
    }

    #[test]
    fn vm_size_and_cgroup_files_parse() {
        assert_eq!(
            parse_vm_size("Name:\tpktsim\nVmPeak:\t  20000 kB\nVmSize:\t   12000 kB\n"),
            Some(12000 * 1024)
        );
        assert_eq!(parse_cgroup_limit("max\n"), None);
        assert_eq!(parse_cgroup_limit("9223372036854771712\n"), None);
        assert_eq!(parse_cgroup_limit("2147483648\n"), Some(2 << 30));
    }
}
