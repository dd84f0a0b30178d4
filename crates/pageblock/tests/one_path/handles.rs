//! Movable blocks compaction may move, on each driver: the library's movable handles, and
//! for the simulator a table of the same blocks with the mover that repoints them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use pageblock::{Allocator, Gfp, Movable, Pfn};
use pageblock_core::compaction::{MigrateFail, MigrateMode, Mover};
use pageblock_core::{page_alloc, Node, Owner};

/// Movable blocks under keys `0, 1, 2, …` in allocation order.
pub trait Handles {
    /// Allocate a movable block of `order` on `cpu` under the next key: the key and the pfn.
    fn alloc(&self, cpu: usize, order: u32) -> Option<(usize, Pfn)>;
    /// Free the block of `key` on `cpu`.
    fn free(&self, cpu: usize, key: usize);
    /// Where the block of `key` is now (`None`: freed).
    fn pfn(&self, key: usize) -> Option<Pfn>;
}

/// The library's handles.
pub struct LibHandles<'a> {
    pub lib: &'a Allocator,
    pub slots: RefCell<Vec<Option<Movable>>>,
}

impl Handles for LibHandles<'_> {
    fn alloc(&self, cpu: usize, order: u32) -> Option<(usize, Pfn)> {
        let mut m = self.lib.on_cpu(cpu).unwrap().alloc_movable(order, Gfp::HIGHUSER_MOVABLE).ok()?;
        let pfn = self.lib.pin(&mut m).unwrap().pfn();
        let mut slots = self.slots.borrow_mut();
        slots.push(Some(m));
        Some((slots.len() - 1, pfn))
    }

    fn free(&self, cpu: usize, key: usize) {
        let m = self.slots.borrow_mut()[key].take().unwrap();
        self.lib.on_cpu(cpu).unwrap().free_movable(m).unwrap();
    }

    fn pfn(&self, key: usize) -> Option<Pfn> {
        let mut slots = self.slots.borrow_mut();
        let m = slots[key].as_mut()?;
        let pfn = self.lib.pin(m).unwrap().pfn();
        Some(pfn)
    }
}

/// The simulator's blocks: each key's pfn and order, and the reverse map the mover updates.
#[derive(Default)]
pub struct Table {
    slots: RefCell<Vec<Option<(Pfn, u32)>>>,
    rmap: RefCell<HashMap<u64, usize>>,
}

/// The simulator's mover: like the library's, it moves only blocks published as handles.
pub struct TableMover(pub Rc<Table>);

impl Mover for TableMover {
    fn migrate(&self, from: Pfn, to: Pfn, order: u32, _mode: MigrateMode) -> Result<(), MigrateFail> {
        let mut rmap = self.0.rmap.borrow_mut();
        let key = rmap.remove(&from.0).ok_or(MigrateFail::Busy)?;
        rmap.insert(to.0, key);
        self.0.slots.borrow_mut()[key] = Some((to, order));
        Ok(())
    }

    fn moves_handles_only(&self) -> bool {
        true
    }
}

/// The simulator's handles: allocated and freed as the library does it (the block is tagged
/// as a handle's in the memmap, and freed as the handle's).
pub struct SimHandles<'a> {
    pub node: &'a Node,
    pub table: Rc<Table>,
}

impl Handles for SimHandles<'_> {
    fn alloc(&self, cpu: usize, order: u32) -> Option<(usize, Pfn)> {
        let pfn = page_alloc::alloc_pages(self.node, cpu, order, Gfp::HIGHUSER_MOVABLE).ok()?;
        let shared = self.node.shared();
        shared.zone(shared.zone_of(pfn.0).unwrap()).set_handle_owned(pfn, order).unwrap();
        let mut slots = self.table.slots.borrow_mut();
        self.table.rmap.borrow_mut().insert(pfn.0, slots.len());
        slots.push(Some((pfn, order)));
        Some((slots.len() - 1, pfn))
    }

    fn free(&self, cpu: usize, key: usize) {
        let (pfn, order) = self.table.slots.borrow_mut()[key].take().unwrap();
        self.table.rmap.borrow_mut().remove(&pfn.0);
        page_alloc::free_pages_as(self.node, cpu, pfn, order, Owner::Handle).unwrap();
    }

    fn pfn(&self, key: usize) -> Option<Pfn> {
        self.table.slots.borrow()[key].map(|(pfn, _)| pfn)
    }
}
