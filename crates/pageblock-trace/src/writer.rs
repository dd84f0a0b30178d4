//! A [`TraceSink`] that writes the allocator's kmem events as ftrace text, the format of
//! `/sys/kernel/tracing/trace`, so kernel tools and this project's own reader can consume a
//! simulated run like a recorded one.
//!
//! The simulated machine has no tasks: every line names the task `pageblock-1` with flags
//! `.....`, on the CPU the event happened on, stamped with the node's simulated clock — so a
//! run's trace is byte-identical for a given seed.

use std::io::Write;

use pageblock_core::trace::{TraceContext, TraceEvent, TraceSink};
use pageblock_core::{show, NodeConfig};
use pageblock_formats::ftrace::{Timestamp, TraceLine};

/// Writes one ftrace line per event.
pub struct FtraceWriter<W: Write + Send> {
    out: W,
    config_cma: bool,
    pageblock_order: u32,
    events: u64,
    error: Option<std::io::Error>,
}

impl<W: Write + Send> FtraceWriter<W> {
    /// A writer for events of a node built from `config` (which fixes the migratetype
    /// numbering and the pageblock order), writing to `out`.
    pub fn new(out: W, config: &NodeConfig) -> Self {
        let (config_cma, pageblock_order) = config
            .zones
            .first()
            .map_or((false, pageblock_core::types::PAGEBLOCK_ORDER), |z| (z.config_cma, z.pageblock_order));
        FtraceWriter { out, config_cma, pageblock_order, events: 0, error: None }
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Flush, and report the first write error met (events after it were dropped).
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The underlying writer, to complete it after [`FtraceWriter::finish`].
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

impl<W: Write + Send + 'static> TraceSink for FtraceWriter<W> {
    fn emit(&mut self, ctx: TraceContext, ev: &TraceEvent) {
        if self.error.is_some() {
            return;
        }
        self.events += 1;
        let kmem = show::kmem_event(self.config_cma, self.pageblock_order, ev);
        let line = TraceLine::from_kmem(
            "pageblock",
            1,
            ctx.cpu,
            Some("....."),
            Timestamp::from_micros(ctx.time_us),
            &kmem,
        );
        if let Err(e) = writeln!(self.out, "{}", line.render()) {
            self.error = Some(e);
        }
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageblock_core::{Gfp, Node, Policy, ZoneConfig};
    use pageblock_formats::ftrace::{FtraceReader, Line};
    use pageblock_formats::kmem::KmemEvent;

    #[test]
    fn a_simulated_trace_reads_back_as_kernel_events() {
        let cfg = NodeConfig::single(ZoneConfig::normal(64 << 20));
        let mut node = Node::new(cfg.clone(), Policy::default()).unwrap();
        node.shared().trace().set_sink(Some(Box::new(FtraceWriter::new(Vec::<u8>::new(), &cfg))));
        node.advance_to(5);
        let p = node.alloc_pages(1, 4, Gfp::KERNEL).unwrap();
        node.free_pages(1, p, 4).unwrap();
        let mut sink = node.shared().trace().take_sink().unwrap();
        let writer = sink.as_any().downcast_mut::<FtraceWriter<Vec<u8>>>().unwrap();
        writer.finish().unwrap();
        let text = String::from_utf8(writer.get_ref().clone()).unwrap();
        let names: Vec<String> = FtraceReader::new(text.as_bytes())
            .map(|r| match r.unwrap().1 {
                Line::Event(l) => {
                    let ev = l.kmem().unwrap();
                    if let KmemEvent::PageAllocExtfrag(x) = &ev {
                        assert_eq!((x.fallback_order, x.change_ownership, x.fragmenting), (10, 1, 0));
                    }
                    l.event
                }
                other => panic!("unexpected line {other}"),
            })
            .collect();
        // A whole-block claim hands the page out directly: no mm_page_alloc_zone_locked, as
        // in the kernel's try_to_claim_block.
        assert_eq!(names, ["mm_page_alloc_extfrag", "mm_page_alloc", "mm_page_free"], "{text}");
        assert!(
            text.starts_with(
                "       pageblock-1       [001] .....     0.000005: mm_page_alloc_extfrag: page="
            ),
            "{text}"
        );
    }
}
