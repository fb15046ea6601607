//! Strict JSON for documents `ags` did not write (hook responses, hook and lifecycle contexts):
//! [`strict`] refuses duplicate keys, trailing bytes, non-UTF-8 and oversized input and builds a
//! small tree; [`de`] decodes that tree into typed values with errors that never quote a value.
//! A leaf module: pure, no I/O, imports nothing else of `ags`.

pub mod de;
pub mod strict;

pub use de::from_slice;
pub use strict::{JsonError, MAX_DOCUMENT_BYTES};
