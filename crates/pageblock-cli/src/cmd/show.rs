//! `pageblock show REPORT`: the kernel file, byte for byte, on stdout.

use pageblock_core::{show, MigrateType};

use crate::cli::{PagetypeinfoMode, Report, ShowArgs};
use crate::spec::{run_spec, DEFAULT_OPS};

/// Run the workload and return the report's text.
pub fn run(args: &ShowArgs) -> Result<String, String> {
    let spec = run_spec(&args.run, args.run.workload.as_deref(), DEFAULT_OPS)?;
    let run = super::run_with_progress(&spec, "running", args.run.trace.as_deref())?;
    let zone = &run.zone;
    let shared = zone.shared();
    Ok(match args.report {
        Report::Pagetypeinfo => {
            let mode = match args.pagetypeinfo_mode {
                PagetypeinfoMode::Counts => show::PagetypeinfoMode::Counts,
                PagetypeinfoMode::CountsCapped => show::PagetypeinfoMode::CountsCapped,
                PagetypeinfoMode::Walk => show::PagetypeinfoMode::Walk,
            };
            if mode != show::PagetypeinfoMode::Walk
                && shared.free_areas().mt_nr_free(0, MigrateType::Movable).is_none()
            {
                return Err(
                    "--free-area-layout plain keeps no per-migratetype counts: use --pagetypeinfo-mode walk"
                        .into(),
                );
            }
            let mut report = show::pagetypeinfo(zone, mode);
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
    })
}
