//! The wasm heap: a size-class allocator in place of std's dlmalloc, which was ~8 KB of the module (a
//! fifth of the signer's share). Every block is a power of two (16 B .. 2 GiB) and a freed block goes on
//! its class's free list, to be reused by the next allocation of that class. Blocks up to 64 KiB are cut
//! from 64 KiB pages given to one class (so each is aligned to its size); larger ones take whole pages.
//! Memory is never returned (wasm memory cannot shrink anyway): at most 2x the live bytes of each class
//! plus one partly used page per small class. It must stay single-threaded, which wasm32-unknown-unknown
//! without the atomics feature is; it never touches memory it did not get from `memory.grow`.

use std::alloc::{GlobalAlloc, Layout};
use std::arch::wasm32;
use std::cell::UnsafeCell;
use std::ptr;

const PAGE_LOG: u32 = 16;
const PAGE: usize = 1 << PAGE_LOG;
/// Smallest class: 16-byte blocks (room for the free-list link and 16-byte alignment).
const MIN_LOG: u32 = 4;

/// Free-list heads by class (log2 of the block size); 0 = empty (page 0 holds the stack, never a block).
pub struct Heap(UnsafeCell<[usize; usize::BITS as usize]>);

// SAFETY: wasm32-unknown-unknown without atomics runs one thread; nothing else reaches the free lists.
unsafe impl Sync for Heap {}

#[global_allocator]
static HEAP: Heap = Heap(UnsafeCell::new([0; usize::BITS as usize]));

/// The class of a layout: log2 of the smallest power of two holding its size and alignment.
fn class(size: usize, align: usize) -> u32 {
    // A Layout's size is at most isize::MAX, so the result is at most 31: within the table.
    let n = size.max(align).max(1 << MIN_LOG);
    usize::BITS - (n - 1).leading_zeros()
}

unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > PAGE {
            return ptr::null_mut();
        }
        let k = class(layout.size(), layout.align());
        // SAFETY: single-threaded (see above), and no reference to the table outlives this call.
        let free = unsafe { &mut *self.0.get() };
        let head = free[k as usize];
        if head != 0 {
            // SAFETY: `head` is a free block of this class; its first word is the link `dealloc` wrote.
            free[k as usize] = unsafe { *(head as *const usize) };
            return head as *mut u8;
        }
        let pages = if k <= PAGE_LOG { 1 } else { 1 << (k - PAGE_LOG) };
        let first_page = wasm32::memory_grow(0, pages);
        if first_page == usize::MAX {
            return ptr::null_mut();
        }
        let base = first_page << PAGE_LOG;
        if k < PAGE_LOG {
            // The page's other blocks go on the free list, each aligned to its size.
            let size = 1usize << k;
            for i in 1..PAGE >> k {
                let block = base + i * size;
                // SAFETY: `block` lies in the page just obtained from memory.grow, owned by this heap.
                unsafe { *(block as *mut usize) = free[k as usize] };
                free[k as usize] = block;
            }
        }
        base as *mut u8
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        let k = class(layout.size(), layout.align()) as usize;
        // SAFETY: single-threaded; `block` came from `alloc` with this layout, so it is a class-k block
        // nobody uses any more, at least 16 bytes long and aligned for the link.
        unsafe {
            let free = &mut *self.0.get();
            *(block as *mut usize) = free[k];
            free[k] = block as usize;
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if class(new_size, layout.align()) == class(layout.size(), layout.align()) {
            return block; // the block already has room
        }
        // SAFETY: the caller guarantees `new_size` with this alignment is a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: `block` is live with `layout`; the new block is distinct and at least the copied length.
        unsafe {
            let moved = self.alloc(new_layout);
            if !moved.is_null() {
                ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                self.dealloc(block, layout);
            }
            moved
        }
    }
}
