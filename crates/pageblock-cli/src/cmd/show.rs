//! `pageblock show REPORT`: the kernel file, byte for byte, on stdout.

use pageblock_core::show;

use crate::cli::{PagetypeinfoMode, Report, ShowArgs};
use crate::spec::{run_spec, DEFAULT_OPS};

/// Run the workload and return the report's text.
pub fn run(args: &ShowArgs) -> Result<String, String> {
    let (spec, _) = run_spec(&args.run, args.run.workload.as_deref(), DEFAULT_OPS)?;
    let mode = match args.pagetypeinfo_mode {
        PagetypeinfoMode::Counts => show::PagetypeinfoMode::Counts,
        PagetypeinfoMode::CountsCapped => show::PagetypeinfoMode::CountsCapped,
        PagetypeinfoMode::Walk => show::PagetypeinfoMode::Walk,
    };
    if args.report == Report::Pagetypeinfo
        && mode != show::PagetypeinfoMode::Walk
        && spec.policy.seed_patches.free_area_layout == pageblock_core::FreeAreaLayout::Plain
    {
        return Err(
            "--free-area-layout plain keeps no per-migratetype counts: use --pagetypeinfo-mode walk".into()
        );
    }
    let html = crate::output::create_output(args.html.as_deref())?;
    let run = super::run_with_progress(&spec, "running", args.run.trace.as_deref())?;
    let node = &run.node;
    let shared = node.shared();
    let maps = pageblock_lab::block_map::node_block_kinds(node);
    let text = match args.report {
        Report::Pagetypeinfo => {
            let mut report = show::pagetypeinfo(node, mode);
            if args.page_owner {
                show::add_mixed_blocks(&mut report, shared);
            }
            report.render()
        }
        Report::Buddyinfo => show::buddyinfo(shared).render(),
        Report::Zoneinfo => show::zoneinfo(shared).render(),
        Report::Vmstat => show::vmstat(shared).render(),
        Report::UnusableIndex => show::unusable_index(shared).render(),
        Report::ExtfragIndex => show::extfrag_index(shared).render(),
        Report::Counters => show::all_counters(shared).iter().map(|(n, v)| format!("{n} {v}\n")).collect(),
        Report::Map => {
            let colour = std::io::IsTerminal::is_terminal(&std::io::stdout());
            let labelled = maps.iter().map(|(zone, kinds)| (format!("zone {zone}"), kinds.as_slice()));
            pageblock_view::terminal::terminal_maps(labelled, colour)
        }
    };
    if let Some(out) = html {
        let mut page = pageblock_view::html::Page::new("pageblock show: the simulated node's pageblocks");
        page.heading("Pageblock map (one cell per pageblock, lowest pfn top left)");
        let views: Vec<(String, &[pageblock_view::BlockKind])> =
            maps.iter().map(|(z, k)| (format!("zone {z}"), k.as_slice())).collect();
        page.maps(&views);
        page.heading("The report");
        page.pre(&text);
        out.write_text(&page.render())?;
    }
    Ok(text)
}
