//! Stamps the build with the git revision so native libraries loaded by the JVM can be told apart.
use std::process::Command;

fn main() {
    let rev = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=FORST_GIT_REV={rev}");
    println!("cargo:rerun-if-changed=.git/HEAD");
}
