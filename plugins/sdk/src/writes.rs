//! The one file a call of a writing tool may change (`iota:toolset/writes`):
//! the host resolved the call's `path` when it decided the call, holds the
//! directory it lands in, and writes there and nowhere else. A component
//! reads what is there and hands over the new bytes; it never writes by
//! path (the project root is read-only to every call).
//!
//! Natively (benchmarks, unit tests) there is no host to have decided
//! anything: every function answers `not-approved`.

pub use crate::bindings::iota::toolset::writes::{Current, Refusal, Version};

/// Where the call's file lands: its absolute path, every symlink followed.
pub fn target() -> Result<String, Refusal> {
    #[cfg(target_arch = "wasm32")]
    return crate::bindings::iota::toolset::writes::target();
    #[cfg(not(target_arch = "wasm32"))]
    Err(Refusal::NotApproved)
}

/// What the call's file holds now (at most `max_size` bytes: `data` is
/// `None` beyond), through the held directory; `None` when nothing is there.
pub fn read(max_size: u64) -> Result<Option<Current>, Refusal> {
    #[cfg(target_arch = "wasm32")]
    return crate::bindings::iota::toolset::writes::read(max_size);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = max_size;
        Err(Refusal::NotApproved)
    }
}

/// Replaces the call's file with `content`, atomically, if what is there
/// is still `expect` (`None`: nothing): [`Refusal::Changed`] otherwise.
/// Answers the new file's version.
pub fn replace(content: &[u8], expect: Option<Version>) -> Result<Version, Refusal> {
    #[cfg(target_arch = "wasm32")]
    return crate::bindings::iota::toolset::writes::replace(content, expect);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = (content, expect);
        Err(Refusal::NotApproved)
    }
}
