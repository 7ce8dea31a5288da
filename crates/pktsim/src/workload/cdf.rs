//! Empirical flow-size distributions: parsing, validation and sampling.
//! The file format is documented in `workloads/README.md`.

use crate::engine::Rng;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Built-in distributions, shipped in `workloads/` and compiled in.
const BUILTIN: &[(&str, &str)] = &[
    (
        "websearch",
        include_str!("../../../../workloads/websearch.cdf"),
    ),
    (
        "datamining",
        include_str!("../../../../workloads/datamining.cdf"),
    ),
    ("imc10", include_str!("../../../../workloads/imc10.cdf")),
    (
        "cache_follower",
        include_str!("../../../../workloads/cache_follower.cdf"),
    ),
];

/// The largest flow size a CDF may give: 2^53 bytes, the largest whole
/// number an f64 holds exactly.
pub const MAX_FLOW_BYTES: f64 = 9_007_199_254_740_992.0;

/// A piecewise-linear CDF over flow sizes in bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Cdf {
    /// (size, cumulative probability) points, both non-decreasing, last p = 1.
    points: Vec<(f64, f64)>,
}

impl Cdf {
    /// Parse CDF text; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<Cdf> {
        let err = |line: usize, msg: String| Error::FileLine {
            file: file.to_path_buf(),
            line,
            msg,
        };
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let t = raw.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = t
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|s| !s.is_empty())
                .collect();
            if fields.len() != 2 {
                return Err(err(
                    line,
                    format!("expected `<size_bytes> <probability>`, got {t:?}"),
                ));
            }
            let size: f64 = fields[0]
                .parse()
                .map_err(|_| err(line, format!("size {:?} is not a number", fields[0])))?;
            let p: f64 = fields[1]
                .parse()
                .map_err(|_| err(line, format!("probability {:?} is not a number", fields[1])))?;
            if !size.is_finite() || size < 1.0 {
                return Err(err(line, format!("size {size} must be at least 1 byte")));
            }
            // Sizes are whole bytes drawn through f64: above 2^53 they are
            // no longer exact, and a flow of 9 PB is not a datacenter flow.
            if size > MAX_FLOW_BYTES {
                return Err(err(
                    line,
                    format!("size {size} is out of range (at most 2^53 bytes, about 9e15)"),
                ));
            }
            if !(0.0..=1.0).contains(&p) {
                return Err(err(line, format!("probability {p} is outside [0, 1]")));
            }
            if let Some(&(ps, pp)) = points.last() {
                if size < ps {
                    return Err(err(line, format!("size {size} is below the previous {ps}")));
                }
                if p < pp {
                    return Err(err(
                        line,
                        format!("probability {p} is below the previous {pp}"),
                    ));
                }
            }
            points.push((size, p));
            last_line = line;
        }
        match points.last() {
            None => Err(Error::File {
                file: file.to_path_buf(),
                msg: "no data lines".into(),
            }),
            Some(&(_, p)) if p != 1.0 => Err(err(
                last_line,
                format!("the last probability must be 1, got {p}"),
            )),
            _ => Ok(Cdf { points }),
        }
    }

    /// Load a built-in distribution by name, or a file: relative paths are
    /// tried against `base_dir` first, then the working directory.
    pub fn load(name: &str, base_dir: &Path) -> Result<Cdf> {
        if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name) {
            return Cdf::parse(text, Path::new(&format!("workloads/{name}.cdf")));
        }
        let p = PathBuf::from(name);
        let candidates = if p.is_absolute() {
            vec![p.clone()]
        } else {
            vec![base_dir.join(&p), p.clone()]
        };
        for c in &candidates {
            if let Ok(text) = std::fs::read_to_string(c) {
                return Cdf::parse(&text, c);
            }
        }
        Err(Error::File {
            file: candidates[0].clone(),
            msg: format!(
                "cannot read CDF file (built-in names: {})",
                BUILTIN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }

    /// The size at cumulative probability `u` in [0, 1) (inverse CDF with
    /// linear interpolation), rounded to a whole byte, at least 1.
    pub fn quantile(&self, u: f64) -> u64 {
        let pts = &self.points;
        // First point whose probability exceeds u.
        let i = pts.partition_point(|&(_, p)| p <= u);
        let v = if i == 0 {
            pts[0].0
        } else if i >= pts.len() {
            pts[pts.len() - 1].0
        } else {
            let (s0, p0) = pts[i - 1];
            let (s1, p1) = pts[i];
            s0 + (s1 - s0) * (u - p0) / (p1 - p0)
        };
        (v.round() as u64).max(1)
    }

    /// Draw one size.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        self.quantile(rng.uniform())
    }

    /// Mean of the piecewise-linear distribution (before rounding).
    pub fn mean(&self) -> f64 {
        let pts = &self.points;
        let mut m = pts[0].0 * pts[0].1;
        for w in pts.windows(2) {
            m += (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0;
        }
        m
    }

    /// The (size, probability) points.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cdf(t: &str) -> Result<Cdf> {
        Cdf::parse(t, Path::new("t.cdf"))
    }

    #[test]
    fn quantiles_and_mean_of_a_small_cdf() {
        let c = cdf("# x\n100 0.5\n200 0.5\n1000 1.0\n").unwrap();
        assert_eq!(c.quantile(0.0), 100);
        assert_eq!(c.quantile(0.49), 100);
        assert_eq!(c.quantile(0.5), 200);
        assert_eq!(c.quantile(0.75), 600);
        assert_eq!(c.quantile(0.999_999), 1000);
        assert!((c.mean() - (0.5 * 100.0 + 0.5 * 600.0)).abs() < 1e-9);
    }

    #[test]
    fn bad_lines_name_their_line() {
        let e = cdf("100 0\n200 x\n").unwrap_err().to_string();
        assert!(e.starts_with("t.cdf:2:"), "{e}");
        let e = cdf("100 0\n200 0.6\n300 0.5\n400 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.cdf:3:"), "{e}");
        let e = cdf("100 0\n50 0.6\n400 1\n").unwrap_err().to_string();
        assert!(e.starts_with("t.cdf:2:"), "{e}");
        let e = cdf("100 0\n400 0.9\n").unwrap_err().to_string();
        assert!(e.starts_with("t.cdf:2:") && e.contains("last"), "{e}");
        let e = cdf("100 0\n1e30 1\n").unwrap_err().to_string();
        assert!(
            e.starts_with("t.cdf:2:") && e.contains("out of range"),
            "{e}"
        );
        let e = cdf("100 0 7\n").unwrap_err().to_string();
        assert!(e.starts_with("t.cdf:1:"), "{e}");
        assert!(cdf("100 1.5\n").is_err());
    }

    #[test]
    fn sample_mean_matches_analytic_mean() {
        let c = Cdf::load("websearch", Path::new(".")).unwrap();
        let mut rng = Rng::from_seed_u64(3);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| c.sample(&mut rng) as f64).sum::<f64>() / n as f64;
        assert!((m / c.mean() - 1.0).abs() < 0.03, "{m} vs {}", c.mean());
    }

    /// The folder of public CDF copies, `../shared/workloads` beside the
    /// clone. Absent outside CI: `None` and a note on stderr (a clone on
    /// its own can run the tests). Absent in CI (`CI=true`): an error, so
    /// that CI cannot pass without checking the shipped files.
    fn public_copies(dir: &Path, ci: bool) -> std::result::Result<Option<PathBuf>, String> {
        if dir.is_dir() {
            return Ok(Some(dir.to_path_buf()));
        }
        let msg = format!(
            "{} is missing: the shared folder must sit beside the repository \
             (../shared) to check the shipped CDFs against the public copies",
            dir.display()
        );
        if ci {
            Err(msg)
        } else {
            eprintln!("note: shipped_files_match_the_public_copies checks nothing here: {msg}");
            Ok(None)
        }
    }

    #[test]
    fn a_missing_shared_folder_fails_only_in_ci() {
        let nowhere = Path::new("/nonexistent/shared/workloads");
        assert_eq!(public_copies(nowhere, false), Ok(None));
        let e = public_copies(nowhere, true).unwrap_err();
        assert!(e.contains("../shared") && e.contains("/nonexistent"), "{e}");
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(public_copies(here, true), Ok(Some(here.to_path_buf())));
    }

    /// The shipped files equal the public copies (in 1460-byte packets).
    #[test]
    fn shipped_files_match_the_public_copies() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/workloads");
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        let Some(shared) = public_copies(&dir, ci).unwrap_or_else(|e| panic!("{e}")) else {
            return;
        };
        for (name, public) in [
            ("websearch", "netsys__CDF_dctcp.txt"),
            ("datamining", "netsys__CDF_datamining.txt"),
            ("imc10", "netsys__CDF_aditya.txt"),
        ] {
            let ours = Cdf::load(name, Path::new(".")).unwrap();
            let text = std::fs::read_to_string(shared.join(public)).unwrap();
            let theirs: Vec<(f64, f64)> = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    let f: Vec<f64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
                    (f[0] * 1460.0, f[2])
                })
                .collect();
            assert_eq!(ours.points(), &theirs[..], "{name}");
        }
        // Sizes in bytes there: `size 1 probability` per line.
        let ours = Cdf::load("cache_follower", Path::new(".")).unwrap();
        let text =
            std::fs::read_to_string(shared.join("xpass__workload_cachefollower.tcl")).unwrap();
        let theirs: Vec<(f64, f64)> = text
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f.len() == 3 && !f[0].starts_with('#'))
            .map(|f| (f[0].parse().unwrap(), f[2].parse().unwrap()))
            .collect();
        assert_eq!(ours.points(), &theirs[..], "cache_follower");
        // FlashPass' Alibaba WAN sizes, in bytes already.
        let ours = Cdf::load(
            "workloads/ali_wan.cdf",
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
        )
        .unwrap();
        let text = std::fs::read_to_string(shared.join("gzeng-wanns3__ali_wan.cdf")).unwrap();
        let theirs: Vec<(f64, f64)> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let f: Vec<f64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
                (f[0].max(1.0), f[1])
            })
            .collect();
        assert_eq!(ours.points(), &theirs[..], "ali_wan");
        // The paper's Table V: about 15.8 % of flows below 10 MB, mean ≈ 65 MB.
        assert!((ours.mean() - 65.4e6).abs() < 1e6, "{}", ours.mean());
    }
}
