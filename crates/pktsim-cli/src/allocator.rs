//! The memory allocator of the `pktsim` command and of the Python module:
//! jemalloc, asked to back its memory with transparent huge pages (2 MiB)
//! where Linux offers them. Each of the two final artifacts installs it
//! with [`huge_page_allocator!`](crate::huge_page_allocator) (a library cannot choose the allocator
//! of the program that links it).
//!
//! Why: a packet hop touches a port, a link inbox, a routing entry, an
//! event-queue bucket and the flow's transport state, each somewhere else
//! in a working set that grows with the fabric (hundreds of MB at k = 32).
//! With 4 KiB pages nearly every one of those touches also misses the TLB;
//! with 2 MiB pages the page walks mostly go away. Measured side by side
//! (BENCHMARKS.md, "Huge pages"): the 20,000-flow fat-tree benches need
//! about a third less CPU. Results are unchanged: nothing in a run depends
//! on where memory lies.
//!
//! The Python module is loaded with `dlopen`, which cannot give jemalloc
//! the initial-exec thread-local storage it uses by default ("cannot
//! allocate memory in static TLS block" at `import pktsim`); the module
//! builds it with `disable_initial_exec_tls` (its Cargo.toml).
//!
//! On a machine whose transparent huge pages are `never`, jemalloc asks
//! and gets small pages: the same as before. `_RJEM_MALLOC_CONF=thp:default`
//! in the environment turns the request off for one run (jemalloc reads
//! it at start).

#[cfg(all(target_os = "linux", not(target_env = "musl")))]
pub use tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts: every mapping it makes (user
/// memory and its own metadata) asked to be backed by huge pages
/// (`madvise(MADV_HUGEPAGE)`, which the kernel's default `madvise` mode of
/// transparent huge pages honours). Exported by
/// [`huge_page_allocator!`](crate::huge_page_allocator) under the name jemalloc looks for.
pub const MALLOC_CONF: [u8; 31] = *b"thp:always,metadata_thp:always\0";

/// Make jemalloc with [`MALLOC_CONF`] the global allocator of the binary
/// or `cdylib` this is invoked in, at its crate root, on Linux with glibc;
/// elsewhere it does nothing and the system allocator stays.
#[macro_export]
macro_rules! huge_page_allocator {
    () => {
        #[cfg(all(target_os = "linux", not(target_env = "musl")))]
        #[global_allocator]
        static GLOBAL_ALLOCATOR: $crate::allocator::Jemalloc = $crate::allocator::Jemalloc;

        /// jemalloc's options ([`pktsim_cli::allocator::MALLOC_CONF`]).
        #[cfg(all(target_os = "linux", not(target_env = "musl")))]
        #[allow(non_upper_case_globals)]
        #[used]
        #[export_name = "_rjem_malloc_conf"]
        static _rjem_malloc_conf: &[u8; 31] = &$crate::allocator::MALLOC_CONF;
    };
}

#[cfg(test)]
mod tests {
    // This test binary allocates as the command does.
    crate::huge_page_allocator!();

    /// Kilobytes of this process's memory backed by transparent huge pages.
    fn anon_huge_kb() -> Option<u64> {
        let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
        let line = rollup.lines().find(|l| l.starts_with("AnonHugePages:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// The options are read: memory jemalloc hands out is backed by huge
    /// pages. With the kernel's `madvise` mode (the default) the system
    /// allocator gets none, so this tells the two apart; where the kernel
    /// offers no huge pages at all there is nothing to check.
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
