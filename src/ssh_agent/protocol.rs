//! The parts of the ssh-agent protocol (draft-miller-ssh-agent) the filter reads: framing
//! (`uint32` length, then a type byte and its payload), the few message types it passes, the
//! identities answer it may narrow, and key fingerprints as `ssh-keygen -l` prints them.
//! Everything here is strict: a frame longer than [`MAX_MESSAGE`], a payload that does not
//! parse to its end, anything unexpected is an error and the connection is closed.

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest message either side may send (OpenSSH's `AGENT_MAX_LEN`, 256 KiB).
pub const MAX_MESSAGE: usize = 256 * 1024;

/// `SSH_AGENT_FAILURE`.
pub const FAILURE: u8 = 5;
/// `SSH_AGENTC_REQUEST_IDENTITIES`.
pub const REQUEST_IDENTITIES: u8 = 11;
/// `SSH_AGENT_IDENTITIES_ANSWER`.
pub const IDENTITIES_ANSWER: u8 = 12;
/// `SSH_AGENTC_SIGN_REQUEST`.
pub const SIGN_REQUEST: u8 = 13;
/// `SSH_AGENTC_EXTENSION`.
pub const EXTENSION: u8 = 27;
/// The one extension passed: binds the agent connection to an ssh session (OpenSSH 8.9+).
pub const SESSION_BIND: &str = "session-bind@openssh.com";

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection between messages.
    #[error("closed")]
    Closed,
    /// A length of zero or above the limit.
    #[error("a message of {0} bytes (the protocol allows 1 to {MAX_MESSAGE})")]
    Length(usize),
    /// The stream failed or ended inside a message.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Read one message (type byte and payload, without the length).
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> Result<Vec<u8>, FrameError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 || len > MAX_MESSAGE {
        return Err(FrameError::Length(len));
    }
    let mut msg = vec![0u8; len];
    r.read_exact(&mut msg).await?;
    Ok(msg)
}

/// Write one message with its length.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, msg: &[u8]) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(4 + msg.len());
    out.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    out.extend_from_slice(msg);
    w.write_all(&out).await
}

/// A reader of protocol fields.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_be_bytes(*head))
    }

    fn string(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        if len > self.0.len() {
            return None;
        }
        let (s, rest) = self.0.split_at(len);
        self.0 = rest;
        Some(s)
    }

    fn done(&self) -> bool {
        self.0.is_empty()
    }
}

/// The key blob a sign request names (`string key_blob, string data, uint32 flags`).
pub fn sign_request_key(payload: &[u8]) -> Option<&[u8]> {
    let mut f = Fields(payload);
    let key = f.string()?;
    f.string()?;
    f.u32()?;
    f.done().then_some(key)
}

/// The name of an extension request (`string name, …`).
pub fn extension_name(payload: &[u8]) -> Option<&[u8]> {
    Fields(payload).string()
}

/// The identities of an answer's payload: `(key blob, comment)` pairs.
pub fn identities(payload: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let mut f = Fields(payload);
    let n = f.u32()? as usize;
    let mut out = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        out.push((f.string()?, f.string()?));
    }
    f.done().then_some(out)
}

/// An identities answer (the whole message, type byte included).
pub fn identities_answer(keys: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = vec![IDENTITIES_ANSWER];
    out.extend_from_slice(&(keys.len() as u32).to_be_bytes());
    for (blob, comment) in keys {
        for s in [blob, comment] {
            out.extend_from_slice(&(s.len() as u32).to_be_bytes());
            out.extend_from_slice(s);
        }
    }
    out
}

/// The fingerprint of a public key blob as `ssh-keygen -l` prints it: `SHA256:` and the
/// unpadded base64 of the blob's SHA-256.
pub fn fingerprint(blob: &[u8]) -> String {
    format!("SHA256:{}", base64_unpadded(&Sha256::digest(blob)))
}

fn base64_unpadded(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// A message type's name, for the record.
pub fn type_name(t: u8) -> &'static str {
    match t {
        11 => "request-identities",
        13 => "sign-request",
        17 => "add-identity",
        18 => "remove-identity",
        19 => "remove-all-identities",
        20 => "add-smartcard-key",
        21 => "remove-smartcard-key",
        22 => "lock",
        23 => "unlock",
        25 => "add-id-constrained",
        26 => "add-smartcard-key-constrained",
        27 => "extension",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_match_ssh_keygen() {
        // A key made with `ssh-keygen -t ed25519`; `ssh-keygen -l` printed this fingerprint.
        let b64 = "AAAAC3NzaC1lZDI1NTE5AAAAINi2i8LvmgwEm8yPKO+hOxQKEIXMFvk02IjtFegOJMt7";
        let fp = fingerprint(&decode_b64(b64));
        assert_eq!(fp, "SHA256:Kkj8Z9tc5NjuwVC0D1VADBULbVKqbjTzIbHbMaemHEw");
        assert_eq!(base64_unpadded(b"ab"), "YWI");
        assert_eq!(base64_unpadded(b"abc"), "YWJj");
        assert_eq!(base64_unpadded(b"a"), "YQ");
    }

    fn decode_b64(s: &str) -> Vec<u8> {
        const A: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let vals: Vec<u32> = s
            .bytes()
            .filter_map(|c| A.find(c as char).map(|i| i as u32))
            .collect();
        let mut out = Vec::new();
        for c in vals.chunks(4) {
            let n = c.iter().enumerate().fold(0u32, |n, (i, v)| n | v << (18 - 6 * i));
            out.extend_from_slice(&n.to_be_bytes()[1..c.len()]);
        }
        out
    }

    #[test]
    fn fields_parse_to_their_end_or_not_at_all() {
        let answer = identities_answer(&[(b"blob1", b"c1"), (b"blob2", b"")]);
        assert_eq!(answer[0], IDENTITIES_ANSWER);
        let keys = identities(&answer[1..]).unwrap();
        assert_eq!(keys, vec![(&b"blob1"[..], &b"c1"[..]), (&b"blob2"[..], &b""[..])]);
        assert!(identities(&[&answer[1..], b"x"].concat()).is_none());
        assert!(identities(&answer[1..answer.len() - 1]).is_none());
        let mut sign = Vec::new();
        for s in [&b"key"[..], b"data"] {
            sign.extend_from_slice(&(s.len() as u32).to_be_bytes());
            sign.extend_from_slice(s);
        }
        sign.extend_from_slice(&0u32.to_be_bytes());
        assert_eq!(sign_request_key(&sign), Some(&b"key"[..]));
        assert_eq!(sign_request_key(&sign[..sign.len() - 1]), None);
    }

    #[test]
    fn frames_are_bounded() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let big = ((MAX_MESSAGE + 1) as u32).to_be_bytes();
            assert!(matches!(
                read_frame(&mut &big[..]).await,
                Err(FrameError::Length(_))
            ));
            assert!(matches!(
                read_frame(&mut &[0u8, 0, 0, 0][..]).await,
                Err(FrameError::Length(0))
            ));
            assert!(matches!(read_frame(&mut &[][..]).await, Err(FrameError::Closed)));
            let mut out = Vec::new();
            write_frame(&mut out, &[11]).await.unwrap();
            assert_eq!(read_frame(&mut &out[..]).await.unwrap(), [11]);
        });
    }
}
