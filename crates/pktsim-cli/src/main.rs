//! `pktsim`: a thin command line over the pktsim library (the commands
//! themselves live in the crate's library so the Python package can offer
//! the same ones).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(pktsim_cli::main_with_args(std::env::args_os()))
}
