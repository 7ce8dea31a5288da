//! Flow lists from CSV: a header `src,dst,size_bytes,start_ns`, then one flow
//! per line. Hosts are given by index or by name; `start_ns` may have a
//! fractional part (picosecond resolution).

use super::{Gen, RawFlow};
use crate::error::{Error, Result};
use crate::packet::NodeId;
use crate::time::Time;
use std::path::{Path, PathBuf};

/// Read a flow list.
pub fn load(g: &Gen, file: &str) -> Result<Vec<RawFlow>> {
    let p = PathBuf::from(file);
    let candidates = if p.is_absolute() {
        vec![p.clone()]
    } else {
        vec![g.env.base_dir.join(&p), p.clone()]
    };
    let (path, text) = candidates
        .iter()
        .find_map(|c| std::fs::read_to_string(c).ok().map(|t| (c.clone(), t)))
        .ok_or_else(|| Error::File {
            file: candidates[0].clone(),
            msg: format!("cannot read flow list (from {})", g.field("file")),
        })?;
    parse(g, &text, &path)
}

fn parse(g: &Gen, text: &str, path: &Path) -> Result<Vec<RawFlow>> {
    let err = |line: usize, msg: String| Error::FileLine {
        file: path.to_path_buf(),
        line,
        msg,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let Some((hl, header)) = lines.next() else {
        return Err(err(1, "empty flow list".into()));
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    if cols != ["src", "dst", "size_bytes", "start_ns"] {
        return Err(err(
            hl + 1,
            format!("header must be `src,dst,size_bytes,start_ns`, got {header:?}"),
        ));
    }
    let host = |s: &str, line: usize| -> Result<NodeId> {
        if let Ok(i) = s.parse::<u32>() {
            if i < g.env.n_hosts {
                return Ok(NodeId(i));
            }
            return Err(err(
                line,
                format!(
                    "host {i} does not exist (hosts are 0..{})",
                    g.env.n_hosts - 1
                ),
            ));
        }
        g.env
            .host_names
            .iter()
            .position(|n| n == s)
            .map(|i| NodeId(i as u32))
            .ok_or_else(|| err(line, format!("unknown host {s:?}")))
    };
    let mut out = Vec::new();
    for (i, l) in lines {
        let line = i + 1;
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != 4 {
            return Err(err(line, format!("expected 4 fields, got {}", f.len())));
        }
        let src = host(f[0], line)?;
        let dst = host(f[1], line)?;
        if src == dst {
            return Err(err(line, "source and destination are the same host".into()));
        }
        let size: u64 = f[2]
            .parse()
            .map_err(|_| err(line, format!("size_bytes {:?} is not a whole number", f[2])))?;
        if size == 0 {
            return Err(err(line, "size_bytes must be at least 1".into()));
        }
        let ns: f64 = f[3]
            .parse()
            .map_err(|_| err(line, format!("start_ns {:?} is not a number", f[3])))?;
        if !(ns.is_finite() && ns >= 0.0) {
            return Err(err(line, format!("start_ns {ns} must be ≥ 0")));
        }
        out.push((src, dst, size, Time((ns * 1000.0).round() as u64)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tests::env;

    #[test]
    fn reads_indices_and_names_and_names_bad_lines() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let e = env(3, &names);
        let g = Gen { env: &e, index: 0 };
        let p = Path::new("f.csv");
        let ok = parse(&g, "src,dst,size_bytes,start_ns\na,c,100,0\n1,2,5,1.5\n", p).unwrap();
        assert_eq!(ok[1], (NodeId(1), NodeId(2), 5, Time(1500)));
        let e1 = parse(&g, "src,dst,size_bytes,start_ns\na,c,100,0\nb,zed,1,0\n", p)
            .unwrap_err()
            .to_string();
        assert!(e1.starts_with("f.csv:3:") && e1.contains("zed"), "{e1}");
        let e2 = parse(&g, "src,dst,size_bytes,start_ns\na,c,x,0\n", p)
            .unwrap_err()
            .to_string();
        assert!(e2.starts_with("f.csv:2:"), "{e2}");
        assert!(parse(&g, "s,d\n", p).is_err());
        assert!(parse(&g, "src,dst,size_bytes,start_ns\na,a,1,0\n", p).is_err());
    }
}
