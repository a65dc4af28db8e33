//! The `iota-host` binary: a thin wrapper over [`iota_host::cli`].

fn main() -> std::process::ExitCode {
    iota_host::cli::main()
}
