//! The platforms this machine cannot run: macOS, type-checked. `cargo check
//! --target x86_64-apple-darwin` compiles every line of the host that macOS
//! would (its `cfg`s, its libc's types: a 32-bit signed device number, no
//! `O_PATH`, no `openat2`), without linking. The one C dependency
//! (aws-lc-sys, for signature checks) gets a stand-in compiler
//! (`tests/data/darwin`): no macOS SDK can be had here, and a check links
//! nothing. Windows is built and run under Wine (`windows.rs`).

use crate::support::{self, require};

/// The macOS target checked.
const MACOS: &str = "x86_64-apple-darwin";

#[test]
fn the_host_builds_for_macos_as_far_as_a_check_without_its_sdk_shows() {
    if !require(
        &format!("the {MACOS} target (rustup target add {MACOS})"),
        support::target_installed(MACOS),
    ) {
        return;
    }
    let stand_ins = support::workspace().join("tests/data/darwin");
    let out = support::cargo_for_target(
        "check",
        MACOS,
        "darwin-check",
        &["--lib", "--bins", "--message-format", "short"],
        &[
            ("CC_x86_64_apple_darwin", stand_ins.join("cc")),
            ("AR_x86_64_apple_darwin", stand_ins.join("ar")),
        ],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("host/") || l.starts_with("tests/"))
        .collect();
    assert!(out.status.success() && ours.is_empty(), "{said}");
}
