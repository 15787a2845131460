//! The wasm build's global allocator: power-of-two size classes, one intrusive free list per class, new
//! blocks carved from a bump pointer over `memory.grow`. Under 1 KB of wasm where std's `dlmalloc`
//! costs ~8 KB. The wasm instance is single-threaded, so there is no locking.
//!
//! Memory use, the trade-off taken for size: a request is rounded up to the next power of two (at worst
//! just under 2x), freed blocks are never split or merged (a freed 1 MB block serves only 1 MB
//! requests), and memory is never given back (wasm cannot shrink). For this crate's steady pattern (the
//! same few sizes over and over: request strings, the signer's I/O buffer, record bodies) the free lists
//! settle and memory stops growing; `bench/README.md` has the measurement.
//!
//! Generic over where memory comes from (`Memory`), so the native tests drive the same code over a plain
//! arena. It must never hand out overlapping or misaligned blocks: every block of class `k` is `2^k`
//! bytes at an address that is a multiple of `2^k`, which covers every alignment up to its size.

use core::alloc::Layout;
use core::ptr;

/// wasm's page size: `memory.grow` works in these.
const PAGE: usize = 64 * 1024;
/// The smallest class: a block must hold a free-list link (a `usize`).
const MIN_CLASS: u32 = usize::BITS.trailing_zeros() - 3;
/// One class per bit of an address: class `k` holds `2^k`-byte blocks.
const CLASSES: usize = usize::BITS as usize;
/// "No block": a free list's end. No block starts at address 0 (memory grows above the static data).
const NONE: usize = 0;

/// Where the heap's memory comes from.
pub(crate) trait Memory {
    /// Adds `bytes` (a multiple of `PAGE`) of memory and returns the address where they begin, or `None`
    /// when there is no more.
    fn grow(&mut self, bytes: usize) -> Option<usize>;
}

pub(crate) struct Heap<M> {
    /// Per class, the address of the first free block (its first word links to the next), or `NONE`.
    free: [usize; CLASSES],
    /// The unused memory still to carve: `bump..end`.
    bump: usize,
    end: usize,
    memory: M,
}

/// The class serving `layout`: the power of two at least as large as its size and its alignment.
fn class_of(size: usize, align: usize) -> Option<u32> {
    let block = size.max(align).checked_next_power_of_two()?;
    Some(block.trailing_zeros().max(MIN_CLASS))
}

impl<M: Memory> Heap<M> {
    pub(crate) const fn new(memory: M) -> Self {
        Heap { free: [NONE; CLASSES], bump: NONE, end: NONE, memory }
    }

    /// A block for `layout`, or null when memory is exhausted.
    pub(crate) fn alloc(&mut self, layout: Layout) -> *mut u8 {
        match class_of(layout.size(), layout.align()) {
            Some(class) => self.take(class).map_or(ptr::null_mut(), |at| at as *mut u8),
            None => ptr::null_mut(),
        }
    }

    /// Gives a block back to its class's free list.
    ///
    /// # Safety
    /// `block` came from `alloc`/`realloc` of this heap with this `layout`, and is not used again.
    pub(crate) unsafe fn dealloc(&mut self, block: *mut u8, layout: Layout) {
        if let Some(class) = class_of(layout.size(), layout.align()) {
            // SAFETY: the block is ours, free, and at least a `usize` long and aligned (`MIN_CLASS`).
            unsafe { self.push(class, block as usize) };
        }
    }

    /// Resizes a block: the same block while the class stays the same, else a new one with the old
    /// contents (as much as fits) and the old block freed. Null (the old block untouched) on exhaustion.
    ///
    /// # Safety
    /// As `dealloc`; `new_size`, rounded up to `layout.align()`, does not overflow `isize`.
    pub(crate) unsafe fn realloc(&mut self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if class_of(layout.size(), layout.align()) == class_of(new_size, layout.align()) {
            return block;
        }
        // SAFETY: the caller guarantees that size and alignment form a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let moved = self.alloc(new_layout);
        if !moved.is_null() {
            // SAFETY: both blocks are ours and live, distinct (the old one is not free), and each holds at
            // least the bytes copied.
            unsafe {
                ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                self.dealloc(block, layout);
            }
        }
        moved
    }

    /// The address of a free block of `class`: from its free list, else carved from fresh memory.
    fn take(&mut self, class: u32) -> Option<usize> {
        let head = self.free[class as usize];
        if head != NONE {
            // SAFETY: `head` is a free block of this heap: its first word is the link `push` wrote.
            self.free[class as usize] = unsafe { ptr::read(head as *const usize) };
            return Some(head);
        }
        self.carve(class)
    }

    /// A new block of `class` from the bump region. Aligning the bump pointer to the block size skips a
    /// gap; the gap is carved into smaller aligned blocks for their free lists, not lost.
    fn carve(&mut self, class: u32) -> Option<usize> {
        let size = 1usize << class;
        let start = self.bump.checked_next_multiple_of(size)?;
        if start.checked_add(size)? > self.end {
            let fresh = start.checked_add(size)? - self.end;
            let grow = fresh.checked_next_multiple_of(PAGE)?;
            let at = self.memory.grow(grow)?;
            if at != self.end {
                // Not contiguous with what we had (only in tests, or if something else grew the memory):
                // start over in the new region, abandoning the old one's tail.
                self.bump = at;
                self.end = at + grow;
                return self.carve(class);
            }
            self.end += grow;
        }
        while self.bump < start {
            // The largest aligned block that starts here: its size is the address's lowest set bit, and it
            // ends at or before `start` (a multiple of a larger power of two).
            let gap_class = self.bump.trailing_zeros();
            // SAFETY: `bump..start` is memory we own that no block covers; it is aligned to its size, which
            // is at least a `usize` (every block and region boundary is a multiple of `2^MIN_CLASS`).
            unsafe { self.push(gap_class, self.bump) };
            self.bump += 1 << gap_class;
        }
        self.bump = start + size;
        Some(start)
    }

    /// Links the free block at `at` into the free list of `class`.
    ///
    /// # Safety
    /// `at` is a `2^class`-byte block of this heap, aligned to its size, that nothing uses.
    unsafe fn push(&mut self, class: u32, at: usize) {
        // SAFETY: the caller guarantees the block is ours, unused, and holds an aligned `usize`.
        unsafe { ptr::write(at as *mut usize, self.free[class as usize]) };
        self.free[class as usize] = at;
    }
}

/// The wasm instance's own linear memory.
#[cfg(target_arch = "wasm32")]
pub(crate) struct WasmMemory;

#[cfg(target_arch = "wasm32")]
impl Memory for WasmMemory {
    fn grow(&mut self, bytes: usize) -> Option<usize> {
        let old_pages = core::arch::wasm32::memory_grow(0, bytes / PAGE);
        (old_pages != usize::MAX).then(|| old_pages * PAGE)
    }
}

/// The `#[global_allocator]`: the heap over wasm memory.
#[cfg(target_arch = "wasm32")]
pub(crate) struct Global(core::cell::UnsafeCell<Heap<WasmMemory>>);

// SAFETY: the wasm build has no threads (no `atomics` target feature), so the heap is never shared.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
unsafe impl Sync for Global {}

#[cfg(target_arch = "wasm32")]
impl Global {
    pub(crate) const fn new() -> Self {
        Global(core::cell::UnsafeCell::new(Heap::new(WasmMemory)))
    }
}

// SAFETY: `Heap` hands out distinct, aligned blocks of at least the size asked for; `GlobalAlloc`'s own
// contract gives `dealloc`/`realloc` the blocks and layouts that `Heap`'s need. The `&mut` taken in each
// method is the only one alive: one thread, and the heap never calls back into the allocator.
#[cfg(target_arch = "wasm32")]
unsafe impl core::alloc::GlobalAlloc for Global {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl's comment.
        unsafe { (*self.0.get()).alloc(layout) }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: see the impl's comment.
        unsafe { (*self.0.get()).dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: see the impl's comment.
        unsafe { (*self.0.get()).realloc(block, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// A fixed arena handed out `PAGE` by `PAGE`, as `memory.grow` would.
    struct Arena {
        base: usize,
        used: usize,
        cap: usize,
    }

    impl Memory for Arena {
        fn grow(&mut self, bytes: usize) -> Option<usize> {
            if self.cap - self.used < bytes {
                return None;
            }
            self.used += bytes;
            Some(self.base + self.used - bytes)
        }
    }

    /// A heap over a fresh arena of `cap` bytes (kept alive by the returned `Vec`). The arena starts at an
    /// odd multiple of 8, as wasm's heap may, so that the gap carving is exercised.
    fn heap(cap: usize) -> (Vec<u64>, Heap<Arena>) {
        let mut backing = vec![0u64; cap / 8 + 2];
        let base = backing.as_mut_ptr() as usize;
        let base = if base % 16 == 0 { base + 8 } else { base };
        (backing, Heap::new(Arena { base, used: 0, cap }))
    }

    /// A live block as the test sees it: where, how long, aligned how, and the byte it was filled with.
    #[derive(Clone, Copy)]
    struct Live {
        at: usize,
        size: usize,
        align: usize,
        fill: u8,
    }

    fn layout(b: &Live) -> Layout {
        Layout::from_size_align(b.size, b.align).unwrap()
    }

    fn write_fill(b: &Live) {
        // SAFETY: `b` is a live block of at least `b.size` bytes in the arena.
        unsafe { ptr::write_bytes(b.at as *mut u8, b.fill, b.size) };
    }

    /// The block's first `len` bytes all hold its fill byte.
    fn intact(b: &Live, len: usize) -> bool {
        // SAFETY: as in `write_fill`.
        let bytes = unsafe { std::slice::from_raw_parts(b.at as *const u8, len) };
        bytes.iter().all(|&x| x == b.fill)
    }

    /// No live block overlaps its neighbours (blocks keyed by start address).
    fn disjoint(live: &BTreeMap<usize, Live>) -> bool {
        live.values().zip(live.values().skip(1)).all(|(a, b)| a.at + a.size <= b.at)
    }

    #[derive(Debug, Clone)]
    enum Op {
        Alloc { size: usize, align_log: u32 },
        Realloc { pick: usize, size: usize },
        Free { pick: usize },
    }

    /// Mostly small sizes (what strings and records are), sometimes up to 300 KB (bodies, the I/O buffer).
    fn size() -> impl Strategy<Value = usize> {
        prop_oneof![4 => 1usize..64, 3 => 1usize..4096, 1 => 1usize..300_000]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (size(), prop_oneof![4 => 0u32..4, 1 => 4u32..13]).prop_map(|(size, align_log)| Op::Alloc { size, align_log }),
            2 => (any::<usize>(), size()).prop_map(|(pick, size)| Op::Realloc { pick, size }),
            2 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Random alloc/realloc/free: every block is aligned, inside the arena, disjoint from every other
        /// live block, and keeps its contents (through reallocs, and while others are freed and reused).
        #[test]
        fn blocks_are_aligned_disjoint_and_keep_their_contents(ops in prop::collection::vec(op(), 1..1500)) {
            let (_backing, mut heap) = heap(256 << 20);
            let (lo, hi) = (heap.memory.base, heap.memory.base + heap.memory.cap);
            let mut live: BTreeMap<usize, Live> = BTreeMap::new();
            for (n, op) in ops.into_iter().enumerate() {
                let fill = n as u8 | 1;
                match op {
                    Op::Alloc { size, align_log } => {
                        let b = Live { at: 0, size, align: 1 << align_log, fill };
                        let at = heap.alloc(layout(&b)) as usize;
                        prop_assert!(at != 0, "arena exhausted");
                        let b = Live { at, ..b };
                        prop_assert_eq!(at % b.align, 0);
                        prop_assert!(lo <= at && at + size <= hi);
                        write_fill(&b);
                        prop_assert!(live.insert(at, b).is_none(), "a live block handed out again");
                    }
                    Op::Realloc { pick, size } if !live.is_empty() => {
                        let old = *live.values().nth(pick % live.len()).unwrap();
                        live.remove(&old.at);
                        // SAFETY: `old` is live, with this layout; the test forgets it now.
                        let at = unsafe { heap.realloc(old.at as *mut u8, layout(&old), size) } as usize;
                        prop_assert!(at != 0, "arena exhausted");
                        let b = Live { at, size, ..old };
                        prop_assert_eq!(at % b.align, 0);
                        prop_assert!(lo <= at && at + size <= hi);
                        prop_assert!(intact(&b, old.size.min(size)), "realloc lost contents");
                        let b = Live { fill, ..b };
                        write_fill(&b);
                        prop_assert!(live.insert(at, b).is_none(), "a live block handed out again");
                    }
                    Op::Free { pick } if !live.is_empty() => {
                        let b = *live.values().nth(pick % live.len()).unwrap();
                        prop_assert!(intact(&b, b.size), "a block was overwritten while live");
                        live.remove(&b.at);
                        // SAFETY: `b` is live, with this layout; the test forgets it now.
                        unsafe { heap.dealloc(b.at as *mut u8, layout(&b)) };
                    }
                    Op::Realloc { .. } | Op::Free { .. } => {}
                }
                prop_assert!(disjoint(&live), "overlapping blocks");
            }
            for b in live.values() {
                prop_assert!(intact(b, b.size), "a block was overwritten while live");
            }
        }
    }

    #[test]
    fn freed_blocks_are_reused_so_a_steady_pattern_stops_growing() {
        let (_backing, mut heap) = heap(8 << 20);
        let sizes = [24usize, 100, 5000, 70_000, 3];
        let cycle = |heap: &mut Heap<Arena>| {
            let blocks: Vec<_> = sizes.iter().map(|&s| (heap.alloc(Layout::from_size_align(s, 1).unwrap()), s)).collect();
            for (at, s) in blocks {
                assert!(!at.is_null());
                // SAFETY: allocated just above with this layout.
                unsafe { heap.dealloc(at, Layout::from_size_align(s, 1).unwrap()) };
            }
        };
        cycle(&mut heap);
        let used = heap.memory.used;
        for _ in 0..1000 {
            cycle(&mut heap);
        }
        assert_eq!(heap.memory.used, used);
    }

    #[test]
    fn realloc_within_a_class_keeps_the_block() {
        let (_backing, mut heap) = heap(1 << 20);
        let l = Layout::from_size_align(33, 8).unwrap();
        let at = heap.alloc(l);
        // SAFETY: `at` is live with layout `l`.
        assert_eq!(unsafe { heap.realloc(at, l, 64) }, at);
        // SAFETY: `at` is live, now 64 bytes long.
        assert_ne!(unsafe { heap.realloc(at, Layout::from_size_align(64, 8).unwrap(), 65) }, at);
    }

    #[test]
    fn exhaustion_and_absurd_sizes_give_null() {
        let (_backing, mut heap) = heap(PAGE);
        assert!(heap.alloc(Layout::from_size_align(PAGE + 1, 1).unwrap()).is_null());
        assert!(heap.alloc(Layout::from_size_align(isize::MAX as usize - 7, 8).unwrap()).is_null());
        assert!(!heap.alloc(Layout::from_size_align(100, 1).unwrap()).is_null());
    }
}
