//! Address arithmetic of the allowlist: networks, IPv4-mapped addresses, and which addresses
//! are this host's or a private network's rather than the internet's.

use std::net::IpAddr;

pub(super) fn full_prefix(addr: &IpAddr) -> u8 {
    if addr.is_ipv4() { 32 } else { 128 }
}

pub(super) fn network_of(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4((u32::from(a) & mask).into())
        }
        IpAddr::V6(a) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6((u128::from(a) & mask).into())
        }
    }
}

pub(super) fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let ip = canonical(ip);
    ip.is_ipv4() == net.is_ipv4() && network_of(ip, prefix) == net
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether `ip` is not a public unicast address: loopback, private, shared (CGNAT), link-local,
/// unique-local, multicast, unspecified, broadcast or reserved. The proxy refuses these unless an
/// entry names them explicitly.
pub fn is_internal(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(a) => {
            let o = a.octets();
            a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_multicast()
                || a.is_unspecified()
                || a.is_broadcast()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || o[0] >= 240
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] == 0x64 && s[1] == 0xff9b)
                // An IPv4 address inside: IPv4-compatible `::a.b.c.d`, 6to4 `2002:aabb:ccdd::`
                // (session-18 attacker B's remark: on a host with such routes they reach it).
                || (s[..6] == [0; 6] && is_internal(IpAddr::V4(v4_of(s[6], s[7]))))
                || (s[0] == 0x2002 && is_internal(IpAddr::V4(v4_of(s[1], s[2]))))
        }
    }
}

/// The IPv4 address held in two 16-bit segments.
fn v4_of(hi: u16, lo: u16) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))
}
