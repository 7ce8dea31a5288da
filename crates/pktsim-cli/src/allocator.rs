//! The memory allocator of the `pktsim` command and of the Python module
//! (both link this crate): jemalloc, asked to back its memory with
//! transparent huge pages (2 MiB) where Linux offers them.
//!
//! Why: a packet hop touches a port, a link inbox, a routing entry, an
//! event-queue bucket and the flow's transport state, each somewhere else
//! in a working set that grows with the fabric (hundreds of MB at k = 32).
//! With 4 KiB pages nearly every one of those touches also misses the TLB;
//! with 2 MiB pages the page walks mostly go away. Measured side by side
//! (BENCHMARKS.md, "Huge pages"): the k = 32 fat-tree bench needs about a
//! third less CPU, k = 16 about a sixth, so the per-hop cost grows less
//! with the network. Results are unchanged: nothing in a run depends on
//! where memory lies.
//!
//! On a machine whose transparent huge pages are `never`, jemalloc asks
//! and gets small pages: the same as before. `_RJEM_MALLOC_CONF=thp:default`
//! in the environment turns the request off for one run (jemalloc reads
//! it at start).

/// jemalloc as the global allocator.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts: every mapping it makes (user
/// memory and its own metadata) asked to be backed by huge pages
/// (`madvise(MADV_HUGEPAGE)`, which the kernel's default `madvise` mode of
/// transparent huge pages honours).
#[allow(non_upper_case_globals)]
#[used]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8; 31] = b"thp:always,metadata_thp:always\0";

#[cfg(test)]
mod tests {
    /// Kilobytes of this process's memory backed by transparent huge pages.
    fn anon_huge_kb() -> Option<u64> {
        let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
        let line = rollup.lines().find(|l| l.starts_with("AnonHugePages:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// The options above are read: memory jemalloc hands out is backed by
    /// huge pages. With the kernel's `madvise` mode (the default) the
    /// system allocator gets none, so this tells the two apart; where the
    /// kernel offers no huge pages at all there is nothing to check.
    #[test]
    fn a_large_allocation_is_backed_by_huge_pages_where_the_kernel_offers_them() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        let Some(before) = anon_huge_kb() else {
            eprintln!("no /proc/self/smaps_rollup: nothing to check");
            return;
        };
        if !(mode.contains("[madvise]") || mode.contains("[always]")) {
            eprintln!(
                "transparent huge pages are off here ({}): nothing to check",
                mode.trim()
            );
            return;
        }
        // Written in full, so every page is faulted in.
        let block = std::hint::black_box(vec![1u8; 64 << 20]);
        let after = anon_huge_kb().unwrap_or(0);
        assert_eq!(block[12345], 1);
        assert!(
            after >= before + 16 * 1024,
            "64 MiB allocated, AnonHugePages {before} -> {after} kB"
        );
    }
}
