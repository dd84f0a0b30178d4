//! The text summary of [`TraceStats`] (what `pageblock trace stats` prints).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use pageblock_core::MigrateType;

use super::TraceStats;

/// The migratetype's name when the numbering does not depend on the kernel's configuration
/// (0-3; 4 and 5 are CMA and Isolate or Isolate alone).
fn migratetype(mt: i8) -> String {
    let stable = usize::try_from(mt).ok().filter(|&i| i <= MigrateType::HighAtomic.index());
    stable.and_then(MigrateType::from_index).map_or_else(|| format!("mt {mt}"), |m| m.name().into())
}

/// `0-3,5`: a sorted CPU list, ranges folded.
fn cpu_list(cpus: &[u32]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    out.join(",")
}

fn seconds(us: u64) -> String {
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// The summary text.
pub(super) fn render(s: &TraceStats) -> String {
    let mut o = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        o,
        "lines           {} ({} comments, {} other events, {} bad)",
        s.lines, s.comments, s.other_events, s.bad_lines
    );
    if let Some(bad) = &s.first_bad_line {
        let _ = writeln!(o, "first bad line  {bad}");
    }
    if let Some(cut) = &s.truncated {
        let _ = writeln!(o, "truncated       {cut}");
    }
    let _ = writeln!(o, "dialect         {}", s.dialect.unwrap_or("-"));
    if let (Some(first), Some(last)) = (s.time.first_us, s.time.last_us) {
        let _ =
            writeln!(o, "time            {} .. {} ({:.3} s)", seconds(first), seconds(last), s.time.seconds);
    }
    let _ = writeln!(o, "cpus            {} ({})", cpu_list(&s.cpus), s.cpus.len());
    let _ = writeln!(
        o,
        "lost events     {} ({} markers, {} without a count)",
        s.lost_events, s.lost.markers, s.lost.markers_without_count
    );
    let _ = writeln!(o, "\nevents");
    for (name, n) in &s.events {
        let _ = writeln!(o, "  {name:<38} {n:>10}");
    }
    allocations(&mut o, s);
    lifetimes(&mut o, s);
    let r = &s.refill;
    let _ = writeln!(
        o,
        "\nper-CPU refills {} events, {} pages ({} other zone_locked)",
        r.events, r.pages, r.other_zone_locked
    );
    let by_order: Vec<String> = r.events_by_order.iter().map(|(o, n)| format!("order {o}: {n}")).collect();
    if !by_order.is_empty() {
        let _ = writeln!(o, "  {}", by_order.join(", "));
    }
    let _ = writeln!(o, "per-CPU drains  {} events, {} pages", s.drain.events, s.drain.pages);
    let f = &s.fallbacks;
    let _ = writeln!(
        o,
        "fallbacks       {} ({} fragmenting, {} changed ownership)",
        f.total, f.fragmenting, f.change_ownership
    );
    for p in &f.by_migratetype {
        let (a, b) = (migratetype(p.alloc_migratetype), migratetype(p.fallback_migratetype));
        let _ = writeln!(o, "  {a} from {b}: {}", p.count);
    }
    let _ = writeln!(
        o,
        "\nby task              {:>12} {:>12} {:>12} {:>12}",
        "allocs", "pages", "frees", "pages"
    );
    for t in &s.by_task {
        let _ = writeln!(
            o,
            "  {:<18} {:>12} {:>12} {:>12} {:>12}",
            t.task, t.allocs, t.alloc_pages, t.frees, t.free_pages
        );
    }
    let _ = writeln!(o, "\nread in {:.3} s", s.seconds);
    o
}

fn allocations(o: &mut String, s: &TraceStats) {
    let a = &s.alloc;
    let _ = writeln!(o, "\nallocations     {} ({} failed)", a.total, a.failed);
    let mts: BTreeSet<i8> = a.by_order_migratetype.iter().map(|c| c.migratetype).collect();
    let orders: BTreeSet<u8> = a.by_order_migratetype.iter().map(|c| c.order).collect();
    if !orders.is_empty() {
        let _ = write!(o, "  {:>5}", "order");
        for mt in &mts {
            let _ = write!(o, " {:>12}", migratetype(*mt));
        }
        let _ = writeln!(o, " {:>8}", "failed");
        for order in &orders {
            let _ = write!(o, "  {order:>5}");
            for mt in &mts {
                let n = a.by_order_migratetype.iter().find(|c| c.order == *order && c.migratetype == *mt);
                let _ = write!(o, " {:>12}", n.map_or(0, |c| c.count));
            }
            let _ = writeln!(o, " {:>8}", a.failed_by_order.get(order).copied().unwrap_or(0));
        }
    }
    let _ = writeln!(o, "gfp masks       {} distinct", s.gfp.distinct);
    for g in &s.gfp.top {
        let _ = writeln!(o, "  {:>10}  {}", g.allocs, g.gfp);
    }
}

fn lifetimes(o: &mut String, s: &TraceStats) {
    let l = &s.lifetimes;
    let _ = writeln!(
        o,
        "\nlifetimes       {} paired; {} frees without an allocation, {} allocations never freed, {} of a live pfn",
        l.paired, l.frees_without_alloc, l.allocs_never_freed, l.allocs_of_live_pfn
    );
    let _ = writeln!(
        o,
        "  {} batched frees of a pfn already freed (6.x traces both events)",
        l.batched_of_freed_pfn
    );
    if let Some(p) = &l.us {
        let _ = writeln!(
            o,
            "  µs: min {} p50 {} p90 {} p99 {} p99.9 {} max {} mean {:.1}",
            p.min, p.p50, p.p90, p.p99, p.p999, p.max, p.mean
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ranges() {
        assert_eq!(cpu_list(&[]), "");
        assert_eq!(cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(seconds(495_119_171), "495.119171");
        assert_eq!(migratetype(1), "Movable");
        assert_eq!(migratetype(4), "mt 4");
    }
}
