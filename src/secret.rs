//! The one secret wrapper of `ags`: hook literals and staged files in the plan, `--env` values,
//! resolved 1Password values. `Debug` and `Serialize` show `<redacted>` (so printing or
//! serializing a plan never shows one), there is no `Display`, and the bytes are zeroed when the
//! value is dropped (after the upload to the container), so they do not linger in freed memory.
//! Read it with [`Secret::expose`] only where it is written into the env file or a staged file.
//! A leaf module.

use std::fmt;

use serde::{Serialize, Serializer};
use zeroize::Zeroize;

/// A value that must never be shown.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a value.
    pub fn new(value: String) -> Self {
        Self(value)
    }

    /// The value itself; only the launch stage (env file, staged files) calls this.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_shown() {
        let s = Secret::new("s3cr3t".into());
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"<redacted>\"");
        assert_eq!(s.expose(), "s3cr3t");
    }
}
