//! The six kmem page tracepoints (`include/trace/events/kmem.h`), as their `TP_printk` text.
//!
//! | event | payload format |
//! |---|---|
//! | `mm_page_alloc` | `page=%p pfn=0x%lx order=%d migratetype=%d gfp_flags=%s` |
//! | `mm_page_free` | `page=%p pfn=0x%lx order=%d` |
//! | `mm_page_free_batched` | `page=%p pfn=0x%lx order=0` (literal 0) |
//! | `mm_page_alloc_zone_locked` | `page=%p pfn=0x%lx order=%u migratetype=%d percpu_refill=%d` |
//! | `mm_page_pcpu_drain` | `page=%p pfn=0x%lx order=%d migratetype=%d` |
//! | `mm_page_alloc_extfrag` | `page=%p pfn=0x%lx alloc_order=%d fallback_order=%d pageblock_order=%d alloc_migratetype=%d fallback_migratetype=%d fragmenting=%d change_ownership=%d` |
//!
//! The payload is what follows `name: ` in an ftrace line (see [`crate::ftrace`]).
//!
//! * `page=%p` is a **hashed** pointer on modern kernels (16 hex digits, upper 32 bits zero),
//!   a raw vmemmap address with `no_hash_pointers`, and `0x<pfn>` / `(nil)` in libtraceevent
//!   output. It is kept verbatim as a [`PagePtr`]; pair events by `pfn`, never by `page`.
//! * A failed `mm_page_alloc` (or `_zone_locked`) records pfn −1, which prints as
//!   `page=0000000000000000 pfn=0x0`: the model keeps the printed `pfn` (0) and a null page.
//! * `mm_page_alloc_extfrag` computes `pageblock_order` and `fragmenting` inside its print fmt;
//!   they are kept as the printed values (perf/libtraceevent print `fragmenting=10`, a known
//!   libtraceevent bug, and that round-trips too).
//!
//! Parsing splits the payload on spaces into `key=value` fields. [`KmemEvent::parse`] is
//! strict: exactly the kernel's fields in the kernel's order, so that the text re-renders
//! byte for byte; an extra field (vendor kernels add e.g. `nr_free=`) is an error naming it.
//! [`KmemEvent::parse_tolerant`] accepts the fields in any order, skips unknown ones and
//! accepts a decimal `pfn=` (pre-4.x kernels); its result re-renders in the mainline layout.

use std::fmt;

use crate::gfp::Gfp;
use crate::text::{self, quote};
use crate::ParseError;

mod events;
mod page_ptr;

pub use events::{
    MmPageAlloc, MmPageAllocExtfrag, MmPageAllocZoneLocked, MmPageFree, MmPageFreeBatched, MmPagePcpuDrain,
};
pub use page_ptr::PagePtr;

/// One kmem page event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KmemEvent {
    /// `mm_page_alloc`.
    PageAlloc(MmPageAlloc),
    /// `mm_page_free`.
    PageFree(MmPageFree),
    /// `mm_page_free_batched`.
    PageFreeBatched(MmPageFreeBatched),
    /// `mm_page_alloc_zone_locked`.
    PageAllocZoneLocked(MmPageAllocZoneLocked),
    /// `mm_page_pcpu_drain`.
    PagePcpuDrain(MmPagePcpuDrain),
    /// `mm_page_alloc_extfrag`.
    PageAllocExtfrag(MmPageAllocExtfrag),
}

/// The six event names, in the order of [`KmemEvent`]'s variants.
pub const KMEM_EVENT_NAMES: [&str; 6] = [
    "mm_page_alloc",
    "mm_page_free",
    "mm_page_free_batched",
    "mm_page_alloc_zone_locked",
    "mm_page_pcpu_drain",
    "mm_page_alloc_extfrag",
];

impl KmemEvent {
    /// The tracepoint name (`mm_page_alloc`, …).
    pub fn name(&self) -> &'static str {
        match self {
            KmemEvent::PageAlloc(_) => KMEM_EVENT_NAMES[0],
            KmemEvent::PageFree(_) => KMEM_EVENT_NAMES[1],
            KmemEvent::PageFreeBatched(_) => KMEM_EVENT_NAMES[2],
            KmemEvent::PageAllocZoneLocked(_) => KMEM_EVENT_NAMES[3],
            KmemEvent::PagePcpuDrain(_) => KMEM_EVENT_NAMES[4],
            KmemEvent::PageAllocExtfrag(_) => KMEM_EVENT_NAMES[5],
        }
    }

    /// True if `name` is one of the six kmem page events.
    pub fn is_kmem_event(name: &str) -> bool {
        KMEM_EVENT_NAMES.contains(&name)
    }

    /// The printed page pointer.
    pub fn page(&self) -> &PagePtr {
        match self {
            KmemEvent::PageAlloc(e) => &e.page,
            KmemEvent::PageFree(e) => &e.page,
            KmemEvent::PageFreeBatched(e) => &e.page,
            KmemEvent::PageAllocZoneLocked(e) => &e.page,
            KmemEvent::PagePcpuDrain(e) => &e.page,
            KmemEvent::PageAllocExtfrag(e) => &e.page,
        }
    }

    /// The printed pfn (0 for a failed allocation).
    pub fn pfn(&self) -> u64 {
        match self {
            KmemEvent::PageAlloc(e) => e.pfn,
            KmemEvent::PageFree(e) => e.pfn,
            KmemEvent::PageFreeBatched(e) => e.pfn,
            KmemEvent::PageAllocZoneLocked(e) => e.pfn,
            KmemEvent::PagePcpuDrain(e) => e.pfn,
            KmemEvent::PageAllocExtfrag(e) => e.pfn,
        }
    }

    /// The `TP_printk` text: everything after `name: ` on the trace line.
    pub fn render_payload(&self) -> String {
        self.to_string()
    }

    /// Parses the payload of event `name`, strictly (see the module docs). Errors report
    /// line 1; use [`ParseError::at_line`] to place them in a file.
    pub fn parse(name: &str, payload: &str) -> Result<Self, ParseError> {
        parse_event(name, payload, false)
    }

    /// Parses the payload of event `name`, tolerating unknown fields, any field order and a
    /// decimal pfn (see the module docs).
    pub fn parse_tolerant(name: &str, payload: &str) -> Result<Self, ParseError> {
        parse_event(name, payload, true)
    }
}

impl fmt::Display for KmemEvent {
    /// Writes the payload (as [`KmemEvent::render_payload`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KmemEvent::PageAlloc(e) => e.fmt(f),
            KmemEvent::PageFree(e) => e.fmt(f),
            KmemEvent::PageFreeBatched(e) => e.fmt(f),
            KmemEvent::PageAllocZoneLocked(e) => e.fmt(f),
            KmemEvent::PagePcpuDrain(e) => e.fmt(f),
            KmemEvent::PageAllocExtfrag(e) => e.fmt(f),
        }
    }
}

/// At most this many fields in any of the six events.
const MAX_FIELDS: usize = 9;

/// The `key=value` fields of one payload, matched against an event's key list.
struct Fields<'a> {
    values: [&'a str; MAX_FIELDS],
    tolerant: bool,
}

impl<'a> Fields<'a> {
    /// Splits `payload` and assigns values to `keys`; see the module docs for both modes.
    fn split(event: &str, keys: &[&str], payload: &'a str, tolerant: bool) -> Result<Self, ParseError> {
        let mut values = [""; MAX_FIELDS];
        let mut seen = [false; MAX_FIELDS];
        let mut i = 0usize;
        for tok in text::split_byte(payload, b' ').filter(|t| !t.is_empty()) {
            let eq = text::find_byte(tok, 0, b'=').ok_or_else(|| {
                ParseError::new(1, format!("{event}: field {} is not `key=value`", quote(tok)))
            })?;
            let (key, value) = (&tok[..eq], &tok[eq + 1..]);
            let slot = if tolerant {
                match keys.iter().position(|k| *k == key) {
                    Some(s) => s,
                    None => continue,
                }
            } else {
                match keys.get(i) {
                    Some(k) if *k == key => i,
                    Some(k) => {
                        return Err(ParseError::new(
                            1,
                            format!(
                                "{event}: expected field `{k}=`, found {} (vendor-patched kernel?)",
                                quote(tok)
                            ),
                        ))
                    }
                    None => {
                        return Err(ParseError::new(
                            1,
                            format!(
                                "{event}: unexpected extra field {} (vendor-patched kernel?)",
                                quote(tok)
                            ),
                        ))
                    }
                }
            };
            values[slot] = value;
            seen[slot] = true;
            i += 1;
        }
        if let Some(missing) = keys.iter().zip(seen).find(|(_, s)| !s).map(|(k, _)| k) {
            return Err(ParseError::new(1, format!("{event}: field `{missing}=` is missing")));
        }
        Ok(Fields { values, tolerant })
    }

    fn page(&self, i: usize) -> Result<PagePtr, ParseError> {
        PagePtr::new(self.values[i]).ok_or_else(|| ParseError::new(1, "page= is empty"))
    }

    fn pfn(&self, i: usize) -> Result<u64, ParseError> {
        let v = self.values[i];
        match v.strip_prefix("0x") {
            Some(hex) => text::hex_u64(hex, 1, "pfn"),
            None if self.tolerant => text::dec_u64(v, 1, "pfn"),
            None => Err(ParseError::new(1, format!("pfn: expected `0x<hex>`, found {}", quote(v)))),
        }
    }

    /// A `%d` field.
    fn int(&self, i: usize, what: &str) -> Result<i32, ParseError> {
        text::dec_i32(self.values[i], 1, what)
    }

    /// An `unsigned int` field printed with `%d` (so values above `i32::MAX` print negative).
    fn uint_as_int(&self, i: usize, what: &str) -> Result<u32, ParseError> {
        self.int(i, what).map(|v| v as u32)
    }

    /// A `%u` field.
    fn uint(&self, i: usize, what: &str) -> Result<u32, ParseError> {
        text::dec_u32(self.values[i], 1, what)
    }

    fn gfp(&self, i: usize) -> Result<Gfp, ParseError> {
        Gfp::parse(self.values[i])
    }

    fn literal(&self, i: usize, want: &str, what: &str) -> Result<(), ParseError> {
        if self.values[i] == want {
            Ok(())
        } else {
            Err(ParseError::new(1, format!("{what}: expected `{want}`, found {}", quote(self.values[i]))))
        }
    }
}

fn parse_event(name: &str, payload: &str, tolerant: bool) -> Result<KmemEvent, ParseError> {
    let ev = match name {
        "mm_page_alloc" => {
            let f = Fields::split(name, events::ALLOC_KEYS, payload, tolerant)?;
            KmemEvent::PageAlloc(MmPageAlloc {
                page: f.page(0)?,
                pfn: f.pfn(1)?,
                order: f.uint_as_int(2, "order")?,
                migratetype: f.int(3, "migratetype")?,
                gfp_flags: f.gfp(4)?,
            })
        }
        "mm_page_free" => {
            let f = Fields::split(name, events::FREE_KEYS, payload, tolerant)?;
            KmemEvent::PageFree(MmPageFree {
                page: f.page(0)?,
                pfn: f.pfn(1)?,
                order: f.uint_as_int(2, "order")?,
            })
        }
        "mm_page_free_batched" => {
            let f = Fields::split(name, events::FREE_KEYS, payload, tolerant)?;
            f.literal(2, "0", "order")?;
            KmemEvent::PageFreeBatched(MmPageFreeBatched { page: f.page(0)?, pfn: f.pfn(1)? })
        }
        "mm_page_alloc_zone_locked" => {
            let f = Fields::split(name, events::ZONE_LOCKED_KEYS, payload, tolerant)?;
            KmemEvent::PageAllocZoneLocked(MmPageAllocZoneLocked {
                page: f.page(0)?,
                pfn: f.pfn(1)?,
                order: f.uint(2, "order")?,
                migratetype: f.int(3, "migratetype")?,
                percpu_refill: f.int(4, "percpu_refill")?,
            })
        }
        "mm_page_pcpu_drain" => {
            let f = Fields::split(name, events::PCPU_DRAIN_KEYS, payload, tolerant)?;
            KmemEvent::PagePcpuDrain(MmPagePcpuDrain {
                page: f.page(0)?,
                pfn: f.pfn(1)?,
                order: f.uint_as_int(2, "order")?,
                migratetype: f.int(3, "migratetype")?,
            })
        }
        "mm_page_alloc_extfrag" => {
            let f = Fields::split(name, events::EXTFRAG_KEYS, payload, tolerant)?;
            KmemEvent::PageAllocExtfrag(MmPageAllocExtfrag {
                page: f.page(0)?,
                pfn: f.pfn(1)?,
                alloc_order: f.int(2, "alloc_order")?,
                fallback_order: f.int(3, "fallback_order")?,
                pageblock_order: f.int(4, "pageblock_order")?,
                alloc_migratetype: f.int(5, "alloc_migratetype")?,
                fallback_migratetype: f.int(6, "fallback_migratetype")?,
                fragmenting: f.int(7, "fragmenting")?,
                change_ownership: f.int(8, "change_ownership")?,
            })
        }
        _ => return Err(ParseError::new(1, format!("{} is not a kmem page event", quote(name)))),
    };
    Ok(ev)
}
