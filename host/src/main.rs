//! The `iota-host` binary: a thin wrapper over [`iota_host::cli_main`].

fn main() -> std::process::ExitCode {
    iota_host::cli_main()
}
