//! Flow lists from CSV: a header `src,dst,size_bytes,start_ns`, then one flow
//! per line. Hosts are given by index or by name; `start_ns` may have a
//! fractional part (picosecond resolution). An error names the line, and
//! the column and its name when one value is wrong
//! (`flows.csv:7: column 4 (start_ns): ...`).

use super::{Gen, RawFlow};
use crate::error::{Error, Result};
use crate::net::topology::node_by_text;
use crate::packet::NodeId;
use crate::time::{Time, MAX_DURATION, MAX_DURATION_DAYS};
use std::path::{Path, PathBuf};

/// The header every flow list starts with.
const COLUMNS: [&str; 4] = ["src", "dst", "size_bytes", "start_ns"];

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
    if cols != COLUMNS {
        return Err(err(
            hl + 1,
            format!("header must be `src,dst,size_bytes,start_ns`, got {header:?}"),
        ));
    }
    // 1-based column numbers, as editors and spreadsheets count them.
    let at = |line: usize, col: usize, msg: String| {
        err(
            line,
            format!("column {} ({}): {msg}", col + 1, COLUMNS[col]),
        )
    };
    // Hosts by index or name, one rule with the rest of pktsim
    // (`node_by_text`: a number that is another host's name is ambiguous).
    let host = |s: &str, line: usize, col: usize| -> Result<NodeId> {
        node_by_text(s, g.env.n_hosts as usize, g.env.host_names, "host")
            .map(NodeId)
            .map_err(|msg| at(line, col, msg))
    };
    let mut out = Vec::new();
    for (i, l) in lines {
        let line = i + 1;
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != 4 {
            return Err(err(line, format!("expected 4 fields, got {}", f.len())));
        }
        let src = host(f[0], line, 0)?;
        let dst = host(f[1], line, 1)?;
        if src == dst {
            return Err(at(line, 1, "the same host as the source (column 1)".into()));
        }
        let size: u64 = f[2]
            .parse()
            .map_err(|_| at(line, 2, format!("{:?} is not a whole number", f[2])))?;
        if size == 0 {
            return Err(at(line, 2, "must be at least 1".into()));
        }
        let ns: f64 = f[3]
            .parse()
            .map_err(|_| at(line, 3, format!("{:?} is not a number", f[3])))?;
        if !(ns.is_finite() && ns >= 0.0) {
            return Err(at(line, 3, format!("{ns} must be ≥ 0")));
        }
        // Checked before the conversion, which would saturate at 2^64 ps
        // and leave the error to blame whatever checks the time range next.
        let ps = (ns * 1000.0).round();
        if ps > MAX_DURATION.ps() as f64 {
            return Err(at(
                line,
                3,
                format!(
                    "{} ns is beyond the simulator's time range of {MAX_DURATION_DAYS} days",
                    f[3]
                ),
            ));
        }
        out.push((src, dst, size, Time(ps as u64)));
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

    #[test]
    fn a_number_that_is_another_hosts_name_is_ambiguous() {
        // Hosts named "1" and "0": "0" is index 0 but the name of host 1.
        let names: Vec<String> = ["1", "0", "2"].iter().map(|s| s.to_string()).collect();
        let e = env(3, &names);
        let g = Gen { env: &e, index: 0 };
        let p = Path::new("f.csv");
        let got = parse(
            &g,
            "src,dst,size_bytes,start_ns
0,2,100,0
",
            p,
        )
        .unwrap_err()
        .to_string();
        assert!(
            got.starts_with(
                "f.csv:2: column 1 (src): \"0\" is ambiguous: host 0 is named \"1\", \
                 and host 1 is named \"0\""
            ),
            "{got}"
        );
        // A number that names itself is no ambiguity.
        let ok = parse(
            &g,
            "src,dst,size_bytes,start_ns
2,1,100,0
",
            p,
        );
        assert!(
            ok.is_err(),
            "\"1\" names host 0, index 1 is \"0\": ambiguous too"
        );
        let names: Vec<String> = ["h0", "x", "2"].iter().map(|s| s.to_string()).collect();
        let e = env(3, &names);
        let g = Gen { env: &e, index: 0 };
        let ok = parse(
            &g,
            "src,dst,size_bytes,start_ns
2,x,100,0
",
            p,
        )
        .unwrap();
        assert_eq!((ok[0].0, ok[0].1), (NodeId(2), NodeId(1)));
    }

    #[test]
    fn a_bad_value_names_its_line_and_column() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let e = env(3, &names);
        let g = Gen { env: &e, index: 0 };
        let p = Path::new("f.csv");
        let head = "src,dst,size_bytes,start_ns\na,c,100,0\n";
        for (row, want) in [
            (
                "a,b,100,1e20",
                "f.csv:3: column 4 (start_ns): 1e20 ns is beyond",
            ),
            ("a,b,100,-1", "f.csv:3: column 4 (start_ns): -1 must be"),
            ("a,b,x,0", "f.csv:3: column 3 (size_bytes): \"x\" is not"),
            (
                "a,b,0,0",
                "f.csv:3: column 3 (size_bytes): must be at least 1",
            ),
            ("a,9,1,0", "f.csv:3: column 2 (dst): host 9 does not exist"),
            (
                "q,b,1,0",
                "f.csv:3: column 1 (src): no host is named \"q\" (the hosts are a, b, c)",
            ),
            ("b,b,1,0", "f.csv:3: column 2 (dst): the same host"),
        ] {
            let got = parse(&g, &format!("{head}{row}\n"), p)
                .unwrap_err()
                .to_string();
            assert!(got.starts_with(want), "{row}: {got}");
        }
        // A start near the end of the range is kept.
        let ok = parse(&g, &format!("{head}a,b,1,9e15\n"), p).unwrap();
        assert_eq!(ok[1].3, Time(9_000_000_000_000_000_000));
    }
}
