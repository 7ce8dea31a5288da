//! Errors returned to users. Every variant names where the problem is (a
//! config field, a file and line) so the CLI can print one clear line.

use std::path::PathBuf;

/// Everything that can go wrong before or during a run because of user input.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A config value is invalid; `field` is its dotted TOML path.
    #[error("{field}: {msg}")]
    Config {
        /// Dotted path of the offending field, e.g. `topology.host_rate`.
        field: String,
        /// What is wrong with it.
        msg: String,
    },
    /// A config file could not be parsed (syntax, unknown field, wrong type).
    #[error("{file}:{line}: {msg}")]
    Parse {
        /// The config file (or `<string>`).
        file: String,
        /// 1-based line number.
        line: usize,
        /// The parser's message, including the field name.
        msg: String,
    },
    /// An input file (CDF, flow list) has a bad line.
    #[error("{}:{line}: {msg}", file.display())]
    FileLine {
        /// The input file.
        file: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        msg: String,
    },
    /// An input file could not be read.
    #[error("{}: {msg}", file.display())]
    File {
        /// The input file.
        file: PathBuf,
        /// Why it could not be read.
        msg: String,
    },
    /// The topology is unusable (disconnected, a host with no link, ...).
    #[error("topology: {0}")]
    Topology(String),
    /// Writing results failed.
    #[error("output: {0}")]
    Output(String),
    /// The results directory cannot be used (it is a file, or cannot be
    /// written); found before anything runs.
    #[error("{}: {msg}", dir.display())]
    OutDir {
        /// The directory given for the results.
        dir: PathBuf,
        /// What is wrong with it.
        msg: String,
    },
}

impl Error {
    /// A config error on `field`.
    pub fn config(field: impl Into<String>, msg: impl Into<String>) -> Error {
        Error::Config {
            field: field.into(),
            msg: msg.into(),
        }
    }
}

/// Result alias for the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
