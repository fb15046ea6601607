//! Resource limits of the agent's container (docs/security.md, "Resource limits"): the size and
//! CPU syntax `--memory`, `--cpus` and `[sandbox]` share (like `podman run`), the defaults, and
//! the resolution of "auto" against the memory of the machine that runs the container.
//!
//! Pure: the host's memory is passed in (the launch reads it from the service or /proc).

use std::fmt;

/// One mebibyte.
pub const MIB: u64 = 1 << 20;
/// One gibibyte.
pub const GIB: u64 = 1 << 30;
/// The default memory limit is half of the machine's memory, at most this much.
pub const DEFAULT_MEMORY_CAP: u64 = 8 * GIB;
/// Below this Podman refuses a memory limit ("minimum memory limit allowed is 6MB").
pub const MIN_MEMORY: u64 = 6 * MIB;
/// Default size of each of `--lockdown`'s `/tmp` and `/var/tmp` tmpfs mounts.
pub const DEFAULT_TMPFS_SIZE: u64 = GIB;
/// Size of `--lockdown`'s `/run` tmpfs (sockets and pid files, never data).
pub const RUN_TMPFS_SIZE: u64 = 64 * MIB;
/// The CFS period the CPU quota is expressed in, in microseconds (Podman's and the kernel's
/// default).
pub const CPU_PERIOD_US: u64 = 100_000;

/// The memory limit asked for (`--memory`, `[sandbox] memory`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Memory {
    /// Half of the machine's memory, at most [`DEFAULT_MEMORY_CAP`].
    #[default]
    Auto,
    /// No limit (`none`).
    Unlimited,
    /// This many bytes.
    Bytes(u64),
}

impl Memory {
    /// The limit in bytes on a machine with `total` bytes of memory (`None`: unknown, or no
    /// limit). `Auto` on an unknown machine is the cap itself.
    pub fn resolve(self, total: Option<u64>) -> Option<u64> {
        match self {
            Memory::Auto => Some(default_memory(total)),
            Memory::Unlimited => None,
            Memory::Bytes(n) => Some(n),
        }
    }
}

/// The limits asked for by the global config and the command line (`--memory`, `--cpus`
/// beat `[sandbox] memory`, `cpus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitSettings {
    /// Memory limit.
    pub memory: Memory,
    /// CPU limit (`None`: none).
    pub cpus: Option<Cpus>,
    /// Size of each of `--lockdown`'s `/tmp` and `/var/tmp`.
    pub tmpfs_size: u64,
}

impl Default for LimitSettings {
    fn default() -> Self {
        Self {
            memory: Memory::Auto,
            cpus: None,
            tmpfs_size: DEFAULT_TMPFS_SIZE,
        }
    }
}

/// `min(8 GiB, half of total)`, in whole mebibytes; 8 GiB when `total` is unknown.
pub fn default_memory(total: Option<u64>) -> u64 {
    let half = total.map_or(DEFAULT_MEMORY_CAP, |t| t / 2);
    (half.min(DEFAULT_MEMORY_CAP) / MIB * MIB).max(MIN_MEMORY)
}

/// A CPU limit in thousandths of a CPU (`--cpus 1.5` is 1500).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cpus(u32);

impl Cpus {
    /// Thousandths of a CPU.
    pub fn millis(self) -> u32 {
        self.0
    }

    /// The CFS quota in microseconds per [`CPU_PERIOD_US`].
    pub fn quota_us(self) -> u64 {
        u64::from(self.0) * CPU_PERIOD_US / 1000
    }
}

impl fmt::Display for Cpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = (self.0 / 1000, self.0 % 1000);
        match frac {
            0 => write!(f, "{whole}"),
            _ => write!(f, "{}", format!("{whole}.{frac:03}").trim_end_matches('0')),
        }
    }
}

impl serde::Serialize for Cpus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(f64::from(self.0) / 1000.0)
    }
}

/// What a size looks like, for messages.
pub const SIZE_SYNTAX: &str =
    "a number of bytes with an optional unit k, m, g or t (powers of 1024), e.g. 512m or 2g";

/// Why a size, memory or CPU limit is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("{0:?} is not a size; give {SIZE_SYNTAX}")]
    NotSize(String),
    #[error("{0:?} is too large a size")]
    TooLarge(String),
    #[error("{0}, or none (no limit) or auto")]
    NotMemory(Box<LimitError>),
    #[error(
        "{0:?} is below the smallest memory limit Podman accepts (6m); give at least 6m, or none for no limit"
    )]
    MemoryTooSmall(String),
    #[error("{0:?} is smaller than 1m; give at least 1m")]
    TmpfsTooSmall(String),
    #[error("{0:?} is not a number of CPUs; give a decimal number such as 2 or 1.5")]
    NotCpus(String),
    #[error("{0:?} has more than three decimals; give a number such as 1.5 or 0.25")]
    Decimals(String),
    #[error("{0:?} is out of range; give between 0.01 and 1024 CPUs")]
    CpusRange(String),
}

/// Parse a size like `podman run --memory`: a non-negative number (decimals allowed) with an
/// optional unit `b`, `k`, `m`, `g` or `t` (powers of 1024, any case, optionally followed by
/// `b` or `ib`: `512MB`, `2GiB`); plain digits are bytes. The result is whole bytes.
pub fn parse_size(s: &str) -> Result<u64, LimitError> {
    let bad = || LimitError::NotSize(s.into());
    let lower = s.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    if !unit.is_ascii() {
        return Err(bad());
    }
    let scale: u64 = match unit.split_at(unit.len().min(1)) {
        ("", _) | ("b", "") => 1,
        (letter, "" | "b" | "ib") => match letter {
            "k" => 1 << 10,
            "m" => MIB,
            "g" => GIB,
            "t" => 1 << 40,
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    };
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') || num.matches('.').count() > 1 {
        return Err(bad());
    }
    let value: f64 = num.parse().map_err(|_| bad())?;
    let bytes = value * scale as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 / 2.0 {
        return Err(LimitError::TooLarge(s.into()));
    }
    Ok(bytes as u64)
}

/// Parse a memory limit: `none` (no limit), `auto` (the default) or a size of at least 6m.
pub fn parse_memory(s: &str) -> Result<Memory, LimitError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "none" => return Ok(Memory::Unlimited),
        "auto" => return Ok(Memory::Auto),
        _ => {}
    }
    let bytes = parse_size(s).map_err(|e| LimitError::NotMemory(Box::new(e)))?;
    if bytes < MIN_MEMORY {
        return Err(LimitError::MemoryTooSmall(s.into()));
    }
    Ok(Memory::Bytes(bytes))
}

/// Parse a tmpfs size: a size of at least 1m.
pub fn parse_tmpfs_size(s: &str) -> Result<u64, LimitError> {
    let bytes = parse_size(s)?;
    if bytes < MIB {
        return Err(LimitError::TmpfsTooSmall(s.into()));
    }
    Ok(bytes)
}

/// Parse a CPU limit like `podman run --cpus`: a positive decimal number of CPUs, at least
/// 0.01 (the kernel's smallest quota is 1 ms per 100 ms) and at most 1024, with at most three
/// decimals.
pub fn parse_cpus(s: &str) -> Result<Cpus, LimitError> {
    let t = s.trim();
    let bad = || LimitError::NotCpus(s.into());
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) || (t.contains('.') && frac.is_empty()) {
        return Err(bad());
    }
    if frac.len() > 3 {
        return Err(LimitError::Decimals(s.into()));
    }
    let whole: u32 = whole.parse().map_err(|_| bad())?;
    let frac: u32 = format!("{frac:0<3}").parse().map_err(|_| bad())?;
    let millis = whole.checked_mul(1000).and_then(|w| w.checked_add(frac));
    match millis {
        Some(m) if (10..=1_024_000).contains(&m) => Ok(Cpus(m)),
        _ => Err(LimitError::CpusRange(s.into())),
    }
}

/// The host's total memory from `/proc/meminfo` (`MemTotal`), when it can be read.
pub fn meminfo_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line.split_whitespace().skip(1);
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// A size for messages and `ags plan`: `8g`, `512m`, `1536k` or bytes, the largest exact unit.
pub fn show_size(bytes: u64) -> String {
    for (unit, scale) in [("t", 1u64 << 40), ("g", GIB), ("m", MIB), ("k", 1 << 10)] {
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{}{unit}", bytes / scale);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_like_podman() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("512m"), Ok(512 * MIB));
        assert_eq!(parse_size("512M"), Ok(512 * MIB));
        assert_eq!(parse_size("2g"), Ok(2 * GIB));
        assert_eq!(parse_size("2GiB"), Ok(2 * GIB));
        assert_eq!(parse_size("2gb"), Ok(2 * GIB));
        assert_eq!(parse_size("1.5g"), Ok(3 * GIB / 2));
        assert_eq!(parse_size("64k"), Ok(64 * 1024));
        assert_eq!(parse_size("10b"), Ok(10));
        for bad in [
            "", "m", "-1m", "+1m", "1x", "1mm", "1.2.3g", ".5g", "1.g", "1 g x", "nan", "1e3",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert!(parse_size("99999999999t").is_err());
    }

    #[test]
    fn memory_values() {
        assert_eq!(parse_memory("none"), Ok(Memory::Unlimited));
        assert_eq!(parse_memory("Auto"), Ok(Memory::Auto));
        assert_eq!(parse_memory("256m"), Ok(Memory::Bytes(256 * MIB)));
        let err = parse_memory("1m").unwrap_err().to_string();
        assert!(err.contains("at least 6m"), "{err}");
        let err = parse_memory("lots").unwrap_err().to_string();
        assert!(
            err.contains("\"lots\" is not a size") && err.contains("none"),
            "{err}"
        );
    }

    #[test]
    fn default_memory_is_half_the_machine_at_most_8g() {
        assert_eq!(default_memory(Some(64 * GIB)), 8 * GIB);
        assert_eq!(default_memory(Some(8 * GIB)), 4 * GIB);
        assert_eq!(default_memory(Some(3 * GIB + 5)), 1536 * MIB);
        assert_eq!(default_memory(None), 8 * GIB);
        assert_eq!(default_memory(Some(1)), MIN_MEMORY);
        assert_eq!(Memory::Auto.resolve(Some(4 * GIB)), Some(2 * GIB));
        assert_eq!(Memory::Unlimited.resolve(Some(4 * GIB)), None);
    }

    #[test]
    fn cpus_like_podman() {
        assert_eq!(parse_cpus("2").map(Cpus::millis), Ok(2000));
        assert_eq!(parse_cpus("1.5").map(Cpus::quota_us), Ok(150_000));
        assert_eq!(parse_cpus("0.25").map(|c| c.to_string()), Ok("0.25".into()));
        assert_eq!(parse_cpus("3").map(|c| c.to_string()), Ok("3".into()));
        assert_eq!(parse_cpus("0.01").map(Cpus::quota_us), Ok(1000));
        for bad in ["", "0", "0.001", "-1", "1.", ".5", "1.2345", "two", "1e2", "2000"] {
            assert!(parse_cpus(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn meminfo_and_display() {
        assert_eq!(
            meminfo_total("MemTotal:  24683664 kB\nMemFree: 1 kB\n"),
            Some(24683664 * 1024)
        );
        assert_eq!(meminfo_total("nothing"), None);
        assert_eq!(show_size(8 * GIB), "8g");
        assert_eq!(show_size(1536 * MIB), "1536m");
        assert_eq!(show_size(1000), "1000");
    }
}
