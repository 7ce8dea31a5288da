//! Embed the git commit (if any) so results can name the code that made them.
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/refs/heads");
    if let Ok(out) = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
    {
        if out.status.success() {
            let c = String::from_utf8_lossy(&out.stdout).trim().to_string();
            println!("cargo:rustc-env=PKTSIM_GIT_COMMIT={c}");
        }
    }
}
