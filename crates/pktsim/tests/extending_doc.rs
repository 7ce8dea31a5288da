//! docs/extending.md quotes registry lines in `text` blocks whose first line
//! names a source file; each quoted line must still be in that file, so the
//! guide's "add one line here" cannot drift from the code. (Its `rust`
//! blocks are doctests of the crate.)

/// Every `text` block of the guide that starts with `// <path>`: the path
/// and the lines quoted after it.
fn quoted_blocks(guide: &str) -> Vec<(String, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut lines = guide.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```text" {
            continue;
        }
        let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        if let Some(path) = body.first().and_then(|l| l.strip_prefix("// ")) {
            let quoted = body[1..].iter().map(|l| l.trim().to_string()).collect();
            blocks.push((path.to_string(), quoted));
        }
    }
    blocks
}

#[test]
fn every_line_the_guide_quotes_is_in_its_file() {
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(format!("{root}/docs/extending.md")).expect("guide");
    let blocks = quoted_blocks(&guide);
    assert!(blocks.len() >= 3, "the guide quotes the registries");
    for (path, quoted) in blocks {
        let text = std::fs::read_to_string(format!("{root}/{path}")).expect(&path);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for q in quoted.iter().filter(|q| !q.is_empty()) {
            assert!(lines.contains(&q.as_str()), "{path} no longer has `{q}`");
        }
    }
}
