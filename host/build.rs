//! Builds the toolset components (plugins/*) for wasm32-wasip2 and leaves them
//! in OUT_DIR, where `embedded.rs` includes the built-ins and the tests find
//! the fixtures. `cargo build`/`cargo test` therefore need nothing else.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/engine/settings.rs"]
mod settings;

#[path = "src/builtin_sets.rs"]
#[allow(dead_code)] // the rows' grants and enabling rules are the host's business
mod builtin_sets;

use builtin_sets::{BUILTIN_SETS, Runs};

/// Components built for the tests only: (package, name in OUT_DIR).
const TEST_COMPONENTS: &[(&str, &str)] = &[
    ("iota-example-todo", "todo.wasm"),
    ("iota-fixture-hostile", "hostile.wasm"),
    ("iota-fixture-scribe", "scribe.wasm"),
];

const TARGET: &str = "wasm32-wasip2";

/// The built-in sets' components: (package, name in OUT_DIR), embedded in
/// the binary and compiled ahead of time to `<name>.cwasm` beside them.
fn builtins() -> impl Iterator<Item = (&'static str, &'static str)> {
    BUILTIN_SETS.iter().filter_map(|set| match set.runs {
        Runs::Component { package, file } => Some((package, file)),
        Runs::Native => None,
    })
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest.parent().unwrap().to_path_buf();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    for watched in ["plugins", "wit", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", workspace.join(watched).display());
    }
    check_target();

    // Its own target dir: sharing the outer one deadlocks on the build lock.
    let target_dir = out.join("wasm-target");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(&workspace)
        .args(["build", "--profile", "wasm-guest", "--target", TARGET, "--target-dir"])
        .arg(&target_dir);
    let components: Vec<(&str, &str)> = builtins().chain(TEST_COMPONENTS.iter().copied()).collect();
    for (package, _) in &components {
        build.args(["-p", package]);
    }
    // Flags meant for the host build (coverage, sanitizers, clippy) break or
    // slow the guest build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
    ] {
        build.env_remove(var);
    }
    // memchr's and memmem's wasm SIMD paths (grep's literal prefilter, line
    // counting); wasmtime compiles them to SSE/AVX on the host.
    build.env("CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS", "-Ctarget-feature=+simd128");
    let status = build
        .status()
        .expect("cannot run cargo to build the toolset components");
    if !status.success() {
        panic!("building the toolset components for {TARGET} failed (see the errors above)");
    }
    for (package, name) in &components {
        let produced = format!("{}.wasm", package.replace('-', "_"));
        let from = target_dir.join(TARGET).join("wasm-guest").join(produced);
        std::fs::copy(&from, out.join(name)).unwrap_or_else(|e| panic!("cannot copy {}: {e}", from.display()));
        // Its digest, so a start-up need not hash the embedded bytes to find
        // the compile cache entry.
        let digest: String = Sha256::digest(std::fs::read(out.join(name)).unwrap())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        std::fs::write(out.join(format!("{name}.sha256")), digest).unwrap();
    }
    precompile(&out);
    write_embedded_table(&out);
    println!("cargo:rustc-env=IOTA_COMPONENTS_DIR={}", out.display());
}

/// Compiles the built-ins to native code with the host engine's settings, so
/// a first run loads them instead of compiling them (about a second).
fn precompile(out: &Path) {
    let mut config = wasmtime::Config::new();
    settings::compiler_settings(&mut config);
    // For the target being built (Windows' calling convention differs).
    config
        .target(&std::env::var("TARGET").expect("cargo sets TARGET"))
        .expect("a target this wasmtime compiles for");
    let engine = wasmtime::Engine::new(&config).expect("a wasmtime engine for precompiling");
    for (_, name) in builtins() {
        let wasm = std::fs::read(out.join(name)).unwrap();
        let compiled = engine
            .precompile_component(&wasm)
            .unwrap_or_else(|e| panic!("precompiling {name}: {e:?}"));
        std::fs::write(out.join(name.replace(".wasm", ".cwasm")), compiled).unwrap();
    }
}

/// Writes `embedded_components.rs`: for each built-in component, its set
/// name, bytes, digest and native code, included by `embedded.rs`.
fn write_embedded_table(out: &Path) {
    let rows: Vec<String> = BUILTIN_SETS
        .iter()
        .filter_map(|set| match set.runs {
            Runs::Component { file, .. } => {
                let path = |suffix: &str| format!("{:?}", out.join(format!("{file}{suffix}")).display().to_string());
                let native = format!("{:?}", out.join(file.replace(".wasm", ".cwasm")).display().to_string());
                Some(format!(
                    "    Embedded {{ set: {:?}, wasm: include_bytes!({}), sha256: include_str!({}), native: include_bytes!({native}) }},\n",
                    set.name,
                    path(""),
                    path(".sha256"),
                ))
            }
            Runs::Native => None,
        })
        .collect();
    let table = format!(
        "// Generated by build.rs from builtin_sets.rs.\nstatic EMBEDDED: [Embedded; {}] = [\n{}];\n",
        rows.len(),
        rows.concat()
    );
    std::fs::write(out.join("embedded_components.rs"), table).unwrap();
}

/// Fails early with the exact fix when the Wasm target is missing.
fn check_target() {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let libdir = Command::new(rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = libdir.as_deref().is_some_and(|dir| {
        Path::new(dir).join("libstd.rlib").exists()
            || std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(false)
    });
    if !installed {
        panic!(
            "the {TARGET} target is not installed: run `rustup target add {TARGET}` (rust-toolchain.toml pins it, so rustup normally installs it by itself)"
        );
    }
}
