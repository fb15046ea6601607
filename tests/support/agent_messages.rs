//! ssh-agent protocol messages the tests send raw from a container (tests/live/daily_git.rs): an
//! `ADD_IDENTITY` carrying a real key, a sign request, and the protocol's strings.

/// The base64 of OpenSSH files (padding and line breaks ignored).
fn base64_decode(text: &str) -> Vec<u8> {
    const A: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let vals: Vec<u32> = text
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

/// An ssh-agent protocol string.
pub fn ssh_string(s: &[u8]) -> Vec<u8> {
    [&(s.len() as u32).to_be_bytes()[..], s].concat()
}

/// Hex of `SSH_AGENTC_ADD_IDENTITY` carrying the unencrypted key of an `openssh-key-v1` file:
/// its private section (key type, public and private parts, comment) is that message's payload.
pub fn add_identity_hex(private_file: &str) -> String {
    let body: String = private_file.lines().filter(|l| !l.starts_with("-----")).collect();
    let raw = base64_decode(&body);
    let mut at = b"openssh-key-v1\0".len();
    let mut next = |skip: usize| {
        at += skip;
        let len = u32::from_be_bytes(raw[at..at + 4].try_into().unwrap()) as usize;
        at += 4 + len;
        raw[at - len..at].to_vec()
    };
    let (cipher, _kdf, _opts) = (next(0), next(0), next(0));
    assert_eq!(cipher, b"none");
    // After the number of keys (1): the public key, then the private section.
    let (_public, private) = (next(4), next(0));
    // check1, check2, then: string type, string pk, string sk, string comment, padding.
    let mut end = 8;
    for _ in 0..4 {
        end += 4 + u32::from_be_bytes(private[end..end + 4].try_into().unwrap()) as usize;
    }
    hex::encode([&[17u8][..], &private[8..end]].concat())
}

/// Hex of `SSH_AGENTC_SIGN_REQUEST` for the key of `public` (an authorized_keys line).
pub fn sign_hex(public: &str) -> String {
    let blob = base64_decode(public.split_whitespace().nth(1).unwrap());
    hex::encode(
        [
            &[13u8][..],
            &ssh_string(&blob),
            &ssh_string(b"data"),
            &[0, 0, 0, 0],
        ]
        .concat(),
    )
}
