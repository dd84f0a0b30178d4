//! The history of an `inspect --watch` run, bounded: every sample's whole free and mixed
//! pageblocks per zone (a few numbers, for the charts) and the pageblock maps of only the last
//! few samples, so that a watch of hours holds, and draws, no more maps than a watch of a minute.

use std::collections::VecDeque;

use pageblock_view::BlockKind;

use super::Inspection;

/// Maps kept by default: the small multiples of the last 12 samples.
pub const DEFAULT_KEPT_MAPS: usize = 12;

/// A watch run's samples, as far as the HTML report needs them.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Samples whose maps are kept.
    keep: usize,
    /// Samples seen.
    samples: usize,
    /// Per zone (by position in the sample): whole free pageblocks of every sample.
    free: Vec<Vec<f64>>,
    /// Per zone: mixed pageblocks of every sample.
    mixed: Vec<Vec<f64>>,
    /// The last `keep` samples: their number (from 1) and each zone's map, if read.
    maps: VecDeque<(usize, Vec<Option<Vec<BlockKind>>>)>,
}

impl History {
    /// An empty history keeping the maps of the last `keep` samples.
    pub fn new(keep: usize) -> History {
        History { keep, ..History::default() }
    }

    /// Samples seen.
    pub fn len(&self) -> usize {
        self.samples
    }

    /// True before the first sample.
    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    /// Add a sample; the oldest kept map goes once `keep` are held.
    pub fn push(&mut self, sample: &Inspection) {
        let zones = sample.zones.len().max(self.free.len());
        for series in [&mut self.free, &mut self.mixed] {
            series.resize(zones, vec![0.0; self.samples]);
        }
        for i in 0..zones {
            let content = sample.zones.get(i).and_then(|z| z.content.as_ref());
            self.free[i].push(content.map_or(0.0, |c| c.free_pageblocks as f64));
            self.mixed[i].push(content.map_or(0.0, |c| c.mixed_pageblocks as f64));
        }
        self.samples += 1;
        if self.keep == 0 {
            return;
        }
        if self.maps.len() == self.keep {
            self.maps.pop_front();
        }
        let maps = sample.zones.iter().map(|z| z.content.as_ref().map(|c| c.kinds.clone())).collect();
        self.maps.push_back((self.samples, maps));
    }

    /// Whole free pageblocks of zone `i` (by position), one value per sample.
    pub fn free(&self, i: usize) -> &[f64] {
        self.free.get(i).map_or(&[], Vec::as_slice)
    }

    /// Mixed pageblocks of zone `i`, one value per sample.
    pub fn mixed(&self, i: usize) -> &[f64] {
        self.mixed.get(i).map_or(&[], Vec::as_slice)
    }

    /// The kept maps of zone `i`: sample number and map, oldest first.
    pub fn maps(&self, i: usize) -> impl Iterator<Item = (usize, &[BlockKind])> {
        self.maps.iter().filter_map(move |(k, zones)| Some((*k, zones.get(i)?.as_deref()?)))
    }

    /// Samples whose maps are kept, at most.
    pub fn kept(&self) -> usize {
        self.keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::{ZoneBlocks, ZoneReport};

    fn sample(free: u64) -> Inspection {
        let flags = vec![1u64 << 10; 512 * free as usize];
        let zone = ZoneReport {
            node: 0,
            zone: "Normal".into(),
            start_pfn: 0,
            spanned: flags.len() as u64,
            managed: flags.len() as u64,
            nr_free_pages: flags.len() as u64,
            buddy_free: None,
            free_by_migratetype: None,
            buddyinfo_free_pageblocks: None,
            blocks_by_migratetype: None,
            content: Some(ZoneBlocks::tally(0, &flags, 9)),
        };
        Inspection {
            pageblock_order: 9,
            zones: vec![zone],
            vmstat: vec![],
            unreadable: vec![],
            sources: vec![],
            seconds: 0.0,
        }
    }

    #[test]
    fn every_sample_is_charted_but_only_the_last_maps_are_kept() {
        let mut h = History::new(3);
        for k in 1..=50 {
            h.push(&sample(k));
        }
        assert_eq!(h.len(), 50);
        assert_eq!(h.free(0).len(), 50);
        assert_eq!(h.free(0)[49], 50.0);
        let kept: Vec<(usize, usize)> = h.maps(0).map(|(k, m)| (k, m.len())).collect();
        assert_eq!(kept, [(48, 48), (49, 49), (50, 50)]);
        let html = sample(50).html(Some(&h));
        assert_eq!(html.matches("<figcaption>sample ").count(), 3, "three maps drawn, not fifty");
    }
}
