//! `pktsim`: a thin command line over the pktsim library (the commands
//! themselves live in the crate's library so the Python package can offer
//! the same ones).

// jemalloc in transparent huge pages (pktsim_cli::allocator).
pktsim_cli::huge_page_allocator!();

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(pktsim_cli::main_with_args(std::env::args_os()))
}
