//! The compilation settings of every engine this host makes. `build.rs`
//! includes this file too and compiles the built-in components ahead of time
//! with exactly these settings, so that wasmtime's compatibility check (its
//! version, these settings, the CPU's features) accepts them at load; where
//! it does not — the binary moved to another CPU — they are compiled and
//! cached like any other component.

/// Applies the settings that shape compiled code to `config`.
pub fn compiler_settings(config: &mut wasmtime::Config) {
    config.epoch_interruption(true);
    config.wasm_component_model(true);
}
