//! `/proc/meminfo`: the memory available without swapping, which bounds what pageblock may
//! take on this machine (a ring buffer while recording, a simulated machine's memmap).

/// `MemAvailable` in bytes (`None`: unreadable, or no such line).
pub fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
