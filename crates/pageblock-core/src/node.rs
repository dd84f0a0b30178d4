//! A node (`pg_data_t`): its zones, the order a request tries them in (the zonelist), and
//! what the whole node decides at boot — `min_free_kbytes` and the watermarks it sets,
//! `lowmem_reserve`, whether pages are grouped by mobility.
//!
//! [`NodeShared`] is the part of a node anyone may read without a lock: the configuration,
//! each zone's [`ZoneShared`] half, node-wide event counters and the trace hub. The zones
//! themselves (what `zone->lock` guards) and the per-CPU lists are owned by a driver — the
//! single-threaded simulator [`crate::Node`] or the thread-safe `pageblock::Allocator` —
//! which hands them to the one allocation path ([`crate::page_alloc`]) through
//! [`crate::NodeLocks`]. Also here: [`AllocContext`] (`struct alloc_context`, what
//! `prepare_alloc_pages` makes of a request against the node's zonelist) and [`Daemons`]
//! (the node's kswapd and kcompactd wake-up fields).
//!
//! # Invariants
//!
//! * `zones[i].config().zone_type` strictly ascends with `i`;
//! * the zonelist holds every zone once, highest zone type first (`build_zonelists` of a
//!   single node); `Zonelist::start[t]` is the first zonelist entry of type `<= t`.

use std::sync::Arc;

use crate::config::{ConfigError, NodeConfig, ZoneType, MAX_NR_ZONES};
use crate::gfp::{self, AllocFlags, Gfp, NoFragmentRule};
use crate::migratetype::MigrateType;
use crate::policy::Policy;
use crate::stats::{Counter, EventCounters, VmEvent};
use crate::trace::TraceHub;
use crate::zone::alloc::AllocError;
use crate::zone::watermark::{lowmem_reserve, NodeWatermarks, WatermarkRequest};
use crate::zone::{Zone, ZoneSetup, ZoneShared};

/// What a request is (`struct alloc_context` plus its mask and order): set once by
/// `prepare_alloc_pages` and read by every step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocContext {
    /// The request's GFP mask.
    pub gfp: Gfp,
    /// The request's order.
    pub order: u32,
    /// `gfp_migratetype()`.
    pub migratetype: MigrateType,
    /// `gfp_zone()`: the highest zone type the request may use.
    pub highest_zoneidx: ZoneType,
    pub(crate) zonelist_start: u8,
    pub(crate) zonelist_len: u8,
}

impl AllocContext {
    /// The watermark question this request asks of a zone with `flags`.
    #[inline]
    pub fn watermark_request(&self, flags: AllocFlags) -> WatermarkRequest {
        WatermarkRequest { order: self.order, flags, highest_zoneidx: self.highest_zoneidx }
    }
}

/// kswapd's and kcompactd's wake-up state (`pgdat->kswapd_order`, `kswapd_highest_zoneidx`,
/// `kswapd_failures`, `kcompactd_max_order`, `kcompactd_highest_zoneidx`, the wait queues).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Daemons {
    /// kswapd is awake: woken (or still unbalanced after its last run) and due to run.
    pub kswapd_woken: bool,
    /// The largest order asked of kswapd since it last ran.
    pub kswapd_order: u32,
    /// The highest zone type asked of kswapd since it last ran.
    pub kswapd_highest_zoneidx: Option<ZoneType>,
    /// Consecutive kswapd runs that reclaimed nothing.
    pub kswapd_failures: u32,
    /// kcompactd has been woken and has not run yet.
    pub kcompactd_woken: bool,
    /// The largest order asked of kcompactd.
    pub kcompactd_max_order: u32,
    /// The lowest highest-zone asked of kcompactd (`None`: every zone).
    pub kcompactd_highest_zoneidx: Option<ZoneType>,
    /// `PGDAT_WRITEBACK`: a kswapd pass took only pages under writeback; until the node is
    /// balanced, kswapd meeting such pages again counts them `nr_immediate` and is throttled.
    pub pgdat_writeback: bool,
    /// kswapd's `balance_pgdat` run in progress, between two of its priority passes.
    pub kswapd_balancing: Option<Box<crate::scan_control::BalanceRun>>,
}

/// Node-wide event counters: events of the allocation path outside any zone lock (slow-path
/// steps, failures), counted with atomic adds since any CPU may count them.
#[derive(Debug, Default)]
pub struct NodeCounters {
    events: EventCounters,
    /// `ALLOCSTALL_<zone>`: direct reclaim entries, by the request's highest zone type.
    allocstall: [Counter; MAX_NR_ZONES],
}

impl NodeCounters {
    /// The node-level part of `ev` (zones count the rest).
    pub fn event(&self, ev: VmEvent) -> u64 {
        self.events[ev as usize].get()
    }

    /// `allocstall_<zone type>`.
    pub fn allocstall(&self, t: ZoneType) -> u64 {
        self.allocstall[t.index()].get()
    }
}

/// The zones a request may use, highest first (`zonelist` of a single node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Zonelist {
    /// Indices into the node's zones, highest zone type first.
    zones: [u8; MAX_NR_ZONES],
    len: u8,
    /// Per highest usable zone type: the first zonelist position a request may use.
    start: [u8; MAX_NR_ZONES],
}

impl Zonelist {
    fn build(types: &[ZoneType]) -> Zonelist {
        let mut zones = [0u8; MAX_NR_ZONES];
        for (pos, i) in (0..types.len()).rev().enumerate() {
            zones[pos] = i as u8;
        }
        let len = types.len() as u8;
        let start = std::array::from_fn(|h| {
            (0..len).find(|&pos| types[zones[pos as usize] as usize].index() <= h).unwrap_or(len)
        });
        Zonelist { zones, len, start }
    }
}

/// The lock-free half of a node.
#[derive(Debug)]
pub struct NodeShared {
    config: NodeConfig,
    policy: Policy,
    zones: Box<[Arc<ZoneShared>]>,
    /// Each zone's pfns `[start, end)`, kept here so that a free finds its zone without
    /// following a pointer per zone (`page_zone`).
    spans: [(u64, u64); MAX_NR_ZONES],
    zonelist: Zonelist,
    /// `alloc_flags_nofragment`'s inputs for a request by its highest usable zone type
    /// (fixed at boot: the preferred zone's type and the policy).
    nofragment: [NoFragmentRule; MAX_NR_ZONES],
    /// `nofragment[h].applies()`, read by every request's fast-path flags.
    nofragment_fast: [bool; MAX_NR_ZONES],
    /// `MAX_PAGE_ORDER` of every zone.
    max_order: u32,
    counters: NodeCounters,
    trace: Arc<TraceHub>,
    min_free_kbytes: Counter,
    group_by_mobility: bool,
    /// kswapd's and kcompactd's wake-up state.
    daemons: std::sync::Mutex<Daemons>,
}

impl NodeShared {
    /// Boot a node: validate, compute the node-wide settings, build and populate every zone.
    /// Returns the lock-free half and the zones, lowest first, for a driver to own.
    pub fn boot(config: NodeConfig, policy: Policy) -> Result<(NodeShared, Vec<Zone>), ConfigError> {
        config.validate()?;
        let wm = NodeWatermarks::compute(&config, &policy);
        let reserves = lowmem_reserve(&config);
        let group_by_mobility = policy.boot.group_by_mobility && Self::roomy_enough(&config);
        let trace = Arc::new(TraceHub::default());
        let zones: Vec<Zone> = config
            .zones
            .iter()
            .zip(wm.zones.iter().zip(&reserves))
            .map(|(zc, (w, r))| {
                let setup = ZoneSetup {
                    watermarks: *w,
                    lowmem_reserve: *r,
                    group_by_mobility,
                    trace: Arc::clone(&trace),
                };
                Zone::new(zc.clone(), policy.clone(), setup)
            })
            .collect();
        let types: Vec<ZoneType> = config.zones.iter().map(|z| z.zone_type).collect();
        let mut spans = [(0, 0); MAX_NR_ZONES];
        for (span, z) in spans.iter_mut().zip(&config.zones) {
            *span = (z.start_pfn, z.start_pfn + z.nr_pages());
        }
        let zonelist = Zonelist::build(&types);
        let nofragment = std::array::from_fn(|h| {
            let start = zonelist.start[h];
            NoFragmentRule {
                configured: policy.boot.config_zone_dma32,
                zone_is_normal: start < zonelist.len
                    && types[zonelist.zones[start as usize] as usize] == ZoneType::Normal,
                defrag_mode: policy.sysctls.defrag_mode(),
            }
        });
        let shared = NodeShared {
            zones: zones.iter().map(|z| Arc::clone(z.shared())).collect(),
            spans,
            zonelist,
            nofragment_fast: nofragment.map(NoFragmentRule::applies),
            nofragment,
            max_order: config.zones[0].max_order,
            counters: NodeCounters::default(),
            trace,
            min_free_kbytes: Counter::new(wm.min_free_kbytes),
            group_by_mobility,
            daemons: Default::default(),
            config,
            policy,
        };
        Ok((shared, zones))
    }

    /// `build_all_zonelists()` turns grouping by mobility off when the node has fewer pages
    /// than one pageblock per migratetype. It runs before any watermark exists, so it counts
    /// every managed page of the zones a movable request may use; `MIGRATE_TYPES` is 5
    /// without CONFIG_CMA, 6 with it.
    fn roomy_enough(config: &NodeConfig) -> bool {
        let Some(first) = config.zones.first() else {
            return false;
        };
        let types = 5 + u64::from(first.config_cma);
        config.managed_pages() >= types << first.pageblock_order
    }

    /// The node's configuration.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// The policy every zone runs with.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The populated zones, lowest zone type first.
    #[inline]
    pub fn zones(&self) -> &[Arc<ZoneShared>] {
        &self.zones
    }

    /// Zone `i` (an index into [`NodeShared::zones`]).
    #[inline]
    pub fn zone(&self, i: usize) -> &ZoneShared {
        &self.zones[i]
    }

    /// Where a driver keeps CPU `cpu`'s lists for zone `zone` (see
    /// [`crate::pcp::PerCpuPages::for_node`]).
    #[inline]
    pub fn pcp_index(&self, cpu: usize, zone: usize) -> usize {
        cpu * self.zones.len() + zone
    }

    /// The zone holding `pfn` among its managed pages (`page_zone`).
    #[inline]
    pub fn zone_of(&self, pfn: u64) -> Option<usize> {
        self.spans[..self.zones.len()].iter().position(|&(start, end)| pfn.wrapping_sub(start) < end - start)
    }

    /// The zone of type `t`, if populated.
    pub fn zone_index(&self, t: ZoneType) -> Option<usize> {
        self.zones.iter().position(|z| z.config().zone_type == t)
    }

    /// Pin or unpin an allocated block ([`ZoneShared::set_pinned`]).
    pub fn set_pinned(&self, pfn: crate::Pfn, order: u32, pinned: bool) -> Result<(), crate::FreeError> {
        match self.zone_of(pfn.0) {
            Some(z) => self.zones[z].set_pinned(pfn, order, pinned),
            None => Err(crate::FreeError::OutOfRange { pfn }),
        }
    }

    /// Node-wide counters.
    pub fn counters(&self) -> &NodeCounters {
        &self.counters
    }

    /// kswapd's and kcompactd's wake-up state, locked.
    pub fn daemons(&self) -> std::sync::MutexGuard<'_, Daemons> {
        // A panic while holding it left plain data behind: keep using it.
        self.daemons.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Count `n` node-level occurrences of `ev` (also for events the memory's owner sees:
    /// swap-ins, refaults, huge page faults).
    #[inline]
    pub fn count(&self, ev: VmEvent, n: u64) {
        self.counters.events[ev as usize].add_shared(n);
    }

    /// Count a direct reclaim entry for a request up to zone type `t`.
    pub(crate) fn count_allocstall(&self, t: ZoneType) {
        self.counters.allocstall[t.index()].add_shared(1);
    }

    /// An event summed over the node and every zone (what `/proc/vmstat` prints).
    pub fn event(&self, ev: VmEvent) -> u64 {
        self.counters.event(ev) + self.zones.iter().map(|z| z.counters().event(ev)).sum::<u64>()
    }

    /// The trace hub all zones share.
    #[inline]
    pub fn trace(&self) -> &Arc<TraceHub> {
        &self.trace
    }

    /// `vm.min_free_kbytes` as the node computed it (recomputed when memory is onlined).
    pub fn min_free_kbytes(&self) -> u64 {
        self.min_free_kbytes.get()
    }

    pub(crate) fn set_min_free_kbytes(&self, kb: u64) {
        self.min_free_kbytes.set(kb);
    }

    /// Whether pages are grouped by mobility (false if the policy or the node's size disables
    /// it: `page_group_by_mobility_disabled`).
    #[inline]
    pub fn group_by_mobility(&self) -> bool {
        self.group_by_mobility
    }

    /// Online CPUs.
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.zones[0].config().nr_cpus as usize
    }

    /// `MAX_PAGE_ORDER`.
    #[inline]
    pub fn max_order(&self) -> u32 {
        self.max_order
    }

    /// `pageblock_order`.
    #[inline]
    pub fn pageblock_order(&self) -> u32 {
        self.zones[0].config().pageblock_order
    }

    /// Free pages in every zone.
    pub fn nr_free_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.nr_free_pages()).sum()
    }

    /// Each zone's type and managed pages now (onlined memory included).
    pub fn managed_sizes(&self) -> Vec<(ZoneType, u64)> {
        self.zones.iter().map(|z| (z.config().zone_type, z.managed_pages())).collect()
    }

    /// Managed pages in every zone (onlined memory included).
    pub fn managed_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.managed_pages()).sum()
    }

    /// Pages cached on every CPU's lists of every zone.
    pub fn nr_pcp_pages(&self) -> u64 {
        self.zones.iter().map(|z| (0..self.nr_cpus()).map(|c| z.counters().cpu(c).count()).sum::<u64>()).sum()
    }

    /// `prepare_alloc_pages()`: the request's migratetype, highest usable zone and zonelist.
    #[inline]
    pub fn prepare_alloc_pages(&self, gfp: Gfp, order: u32) -> Result<AllocContext, AllocError> {
        let migratetype =
            gfp::gfp_migratetype(gfp, self.group_by_mobility).map_err(|e| AllocError::InvalidGfp(e.0))?;
        let highest_zoneidx = gfp::gfp_zone(gfp).map_err(|e| AllocError::InvalidGfp(e.0))?;
        let z = &self.zonelist;
        // `start <= len` by construction (Zonelist::build).
        let start = z.start[highest_zoneidx.index()];
        Ok(AllocContext {
            gfp,
            order,
            migratetype,
            highest_zoneidx,
            zonelist_start: start,
            zonelist_len: z.len - start,
        })
    }

    /// The zones `ac` may use, preferred (highest) first.
    #[inline]
    pub fn zonelist(&self, ac: &AllocContext) -> &[u8] {
        let start = ac.zonelist_start as usize;
        &self.zonelist.zones[start..start + ac.zonelist_len as usize]
    }

    /// `ac->preferred_zoneref`: the first zone of the request's zonelist.
    #[inline]
    pub fn preferred_zone(&self, ac: &AllocContext) -> Option<usize> {
        self.zonelist(ac).first().map(|&z| z as usize)
    }

    /// Which ALLOC_NOFRAGMENT rule applies to request `ac` (it depends on the type of its
    /// preferred zone).
    #[inline]
    pub fn nofragment_rule(&self, ac: &AllocContext) -> NoFragmentRule {
        self.nofragment[ac.highest_zoneidx.index()]
    }

    /// The fast-path flags of `__alloc_pages` (step 3): low watermark, CMA for movable
    /// requests, `alloc_flags_nofragment` of the preferred zone.
    #[inline]
    pub fn alloc_flags_fast(&self, ac: &AllocContext) -> AllocFlags {
        gfp::alloc_flags_fast(ac.gfp, ac.migratetype, self.nofragment_fast[ac.highest_zoneidx.index()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migratetype::MigrateType;

    #[test]
    fn zonelist_runs_from_the_highest_zone_down() {
        let z = Zonelist::build(&[ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal]);
        assert_eq!(&z.zones[..3], &[2, 1, 0]);
        assert_eq!(z.start, [2, 1, 0, 0, 0], "a DMA request starts at DMA, a movable one at Normal");
        let normal_only = Zonelist::build(&[ZoneType::Normal]);
        assert_eq!(normal_only.start, [1, 1, 0, 0, 0], "no zone for a DMA request");
    }

    /// Regression (divergence D3): grouping by mobility is off only below one pageblock per
    /// migratetype, counted before watermarks exist; a 12 MiB machine is still grouped.
    #[test]
    fn small_machines_keep_grouping_by_mobility() {
        let tiny = |bytes| NodeConfig::single(crate::ZoneConfig::normal(bytes));
        assert!(NodeShared::roomy_enough(&tiny(12 << 20)), "3072 pages >= 5 x 512");
        assert!(!NodeShared::roomy_enough(&tiny((10 << 20) - 4096)), "2559 pages < 5 x 512");
        let (node, zones) = NodeShared::boot(tiny(12 << 20), Policy::default()).unwrap();
        assert!(node.group_by_mobility());
        assert_eq!(zones[0].pageblock_migratetype(zones[0].start_pfn()), MigrateType::Movable);
        let (off, zones) = NodeShared::boot(tiny(8 << 20), Policy::default()).unwrap();
        assert!(!off.group_by_mobility());
        assert_eq!(
            zones[0].pageblock_migratetype(zones[0].start_pfn()),
            MigrateType::Unmovable,
            "with grouping off every mobility type is stored as Unmovable"
        );
    }
}
