//! What every wall-clock measurement shares: the median of repetitions and pinning a thread
//! to a CPU. Used by the seed experiments marked wall-clock and by `pageblock-bench`.

/// The median of `v` (mean of the middle two for even lengths; NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// Pin the calling thread to `cpu` (best effort: benchmarks are steadier pinned).
pub fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
