//! `pktsim pcap`: the packet trace (`packets.parquet`) as a pcapng file
//! that Wireshark and tshark open.
//!
//! Each captured packet is an Ethernet frame with an IPv4 header: host
//! `i` is `10.0.0.0 + i + 1` (host 0 is 10.0.0.1) with MAC
//! `02:00:00` followed by the same 24 bits. Timestamps are in nanoseconds
//! (the interface says so: `if_tsresol` = 9); picoseconds are cut.
//!
//! The TCP family's packets are TCP segments: a flow is a connection from
//! port `1024 + flow % 64511` of its source to port 5001 of its
//! destination, both sides with initial sequence number 0, so that data at
//! byte offset `o` has sequence number `o + 1`, acknowledgements carry
//! `ack + 1`, and Wireshark's relative numbers are the simulator's; the
//! handshake's SYN and SYN-ACK are real SYNs; ECN is the IP header's ECN
//! field (ECT(0), CE) and the TCP header's ECE and CWR flags; a SACK block
//! is a SACK option. Other designs' packets are UDP datagrams from the
//! flow's port to port 7000 (data) or 7001 (control), whose first 32 bytes
//! are pktsim's own header (its layout: README.md, "Packet captures").
//!
//! Only the headers are captured; each frame's original length is the
//! packet's size on the wire plus the Ethernet header, so Wireshark shows
//! the true lengths (and "packet size limited during capture"). The IPv4
//! and TCP checksums are those of the packet with a zero-filled payload.

use crate::error::{Error, Result};
use crate::net::trace::{TraceEvent, TraceRow};
use crate::packet::{flags, Header};
use crate::transport::tcp::decode_sack;
use crate::transport::tcp::handshake::{CTRL_SYN, CTRL_SYNACK};
use std::path::Path;

/// Where the capture is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capture {
    /// Every packet once, as it leaves the host that sent it.
    Senders,
    /// At host `h`'s NIC: what it sends and what it receives.
    Host(u32),
    /// On the link between nodes `a` and `b`, both ways.
    Link(u32, u32),
}

impl Capture {
    /// Whether the capture sees `r`, and when.
    fn sees(self, r: &TraceRow) -> bool {
        let (node, sent) = (r.node.0, r.event == TraceEvent::Dequeue);
        let peer = r.peer.map(|p| p.0);
        match self {
            Capture::Senders => sent && node == r.pkt.src.0,
            Capture::Host(h) => {
                (sent && node == h && r.pkt.src.0 == h)
                    || (r.event == TraceEvent::Deliver && node == h)
            }
            Capture::Link(a, b) => {
                sent && ((node == a && peer == Some(b)) || (node == b && peer == Some(a)))
            }
        }
    }
}

/// The TCP port of the side that starts a flow.
fn flow_port(flow: u32) -> u16 {
    (1024 + flow % 64511) as u16
}

/// The server side's TCP port.
const SERVER_PORT: u16 = 5001;

fn ipv4_of(node: u32) -> [u8; 4] {
    (0x0A00_0000u32.wrapping_add(node).wrapping_add(1)).to_be_bytes()
}

fn mac_of(node: u32) -> [u8; 6] {
    let n = node.wrapping_add(1).to_be_bytes();
    [0x02, 0, 0, n[1], n[2], n[3]]
}

/// The Internet checksum of `data`, starting from the partial sum `sum`.
fn checksum(data: &[u8], mut sum: u32) -> u16 {
    for pair in data.chunks(2) {
        let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += word as u32;
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// The frame of `r`'s packet (headers only) and its length on the wire.
/// `tcp`: the run's transport is of the TCP family; `mss`: its segment
/// size (to read SACK blocks).
pub fn frame(r: &TraceRow, tcp: bool, mss: u64) -> (Vec<u8>, usize) {
    let p = &r.pkt;
    let (src, dst) = (p.src.0, p.dst.0);
    let tcp_header = match p.header {
        Header::TcpData { .. } | Header::TcpAck { .. } => true,
        Header::Ctrl { kind, .. } => tcp && (kind == CTRL_SYN || kind == CTRL_SYNACK),
    };
    let l4 = if tcp_header {
        tcp_segment(r, mss)
    } else {
        udp_payload(r)
    };
    let payload = if tcp_header { p.payload as usize } else { 0 };
    let ip_len = if tcp_header {
        20 + l4.len() + payload
    } else {
        (20 + 8 + l4.len()).max(p.size as usize)
    };
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[1] = if p.has(flags::CE) {
        3
    } else if p.has(flags::ECT) {
        2
    } else {
        0
    };
    ip[2..4].copy_from_slice(&(ip_len.min(0xFFFF) as u16).to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64u8.saturating_sub(p.hops).max(1);
    ip[9] = if tcp_header { 6 } else { 17 };
    ip[12..16].copy_from_slice(&ipv4_of(src));
    ip[16..20].copy_from_slice(&ipv4_of(dst));
    let c = checksum(&ip, 0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());

    let mut out = Vec::with_capacity(14 + 20 + 8 + l4.len());
    out.extend_from_slice(&mac_of(dst));
    out.extend_from_slice(&mac_of(src));
    out.extend_from_slice(&[0x08, 0x00]);
    out.extend_from_slice(&ip);
    // The pseudo-header's sum (RFC 793 §3.1, RFC 768).
    let l4_len = ip_len - 20;
    let mut pseudo = 0u32;
    for w in [&ip[12..14], &ip[14..16], &ip[16..18], &ip[18..20]] {
        pseudo += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    pseudo += ip[9] as u32 + (l4_len as u32 & 0xFFFF) + (l4_len as u32 >> 16);
    if tcp_header {
        let mut seg = l4;
        let c = checksum(&seg, pseudo);
        seg[16..18].copy_from_slice(&c.to_be_bytes());
        out.extend_from_slice(&seg);
    } else {
        let (sport, dport) = (flow_port(p.flow.0), 7000 + p.kind as u16);
        let mut udp = Vec::with_capacity(8 + l4.len());
        udp.extend_from_slice(&sport.to_be_bytes());
        udp.extend_from_slice(&dport.to_be_bytes());
        udp.extend_from_slice(&(l4_len.min(0xFFFF) as u16).to_be_bytes());
        udp.extend_from_slice(&[0, 0]); // no checksum (allowed over IPv4)
        udp.extend_from_slice(&l4);
        out.extend_from_slice(&udp);
    }
    (out, 14 + ip_len)
}

/// A TCP header for `r`'s packet (checksum left zero).
fn tcp_segment(r: &TraceRow, mss: u64) -> Vec<u8> {
    const ACK: u8 = 0x10;
    const SYN: u8 = 0x02;
    const PSH: u8 = 0x08;
    let p = &r.pkt;
    let client = flow_port(p.flow.0);
    // (sequence number, acknowledgement, flags, window, SACK block, sent
    // by the side that starts the flow)
    let (seq, ack, mut fl, wnd, sack, from_client) = match p.header {
        Header::TcpData { seq } => (
            (seq as u32).wrapping_add(1),
            1,
            ACK | PSH,
            65535,
            None,
            true,
        ),
        Header::TcpAck { ack, sack, wnd } => {
            let block = decode_sack(sack, ack, mss.max(1), u64::MAX);
            (1, (ack as u32).wrapping_add(1), ACK, wnd, block, false)
        }
        Header::Ctrl { kind, .. } if kind == CTRL_SYNACK => (0, 1, SYN | ACK, 65535, None, false),
        Header::Ctrl { .. } => (0, 0, SYN, 65535, None, true),
    };
    if p.has(flags::ECE) {
        fl |= 0x40;
    }
    if p.has(flags::CWR) {
        fl |= 0x80;
    }
    let (sport, dport) = if from_client {
        (client, SERVER_PORT)
    } else {
        (SERVER_PORT, client)
    };
    let options: Vec<u8> = match sack {
        Some((a, b)) => {
            let mut o = vec![1, 1, 5, 10];
            o.extend_from_slice(&(a as u32).wrapping_add(1).to_be_bytes());
            o.extend_from_slice(&(b as u32).wrapping_add(1).to_be_bytes());
            o
        }
        None => Vec::new(),
    };
    let len = 20 + options.len();
    let mut h = vec![0u8; 20];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[8..12].copy_from_slice(&ack.to_be_bytes());
    h[12] = ((len / 4) as u8) << 4;
    h[13] = fl;
    h[14..16].copy_from_slice(&wnd.to_be_bytes());
    h.extend_from_slice(&options);
    h
}

/// The 32 bytes of pktsim's own header for a non-TCP packet (the layout
/// README.md gives under "Packet captures").
fn udp_payload(r: &TraceRow) -> Vec<u8> {
    let p = &r.pkt;
    let mut b = vec![0u8; 32];
    b[0] = p.kind as u8;
    b[1] = p.flags;
    b[2] = p.class;
    b[3] = p.hops;
    b[4..8].copy_from_slice(&p.flow.0.to_be_bytes());
    b[8..12].copy_from_slice(&p.prio.to_be_bytes());
    b[12..16].copy_from_slice(&p.payload.to_be_bytes());
    let (variant, kind, wnd, a, x) = match p.header {
        Header::TcpData { seq } => (0u8, 0u8, 0u16, seq, 0u32),
        Header::TcpAck { ack, sack, wnd } => (1, 0, wnd, ack, sack),
        Header::Ctrl { kind, a, b } => (2, kind, 0, a, b),
    };
    b[16] = variant;
    b[17] = kind;
    b[18..20].copy_from_slice(&wnd.to_be_bytes());
    b[20..28].copy_from_slice(&a.to_be_bytes());
    b[28..32].copy_from_slice(&x.to_be_bytes());
    b
}

/// A pcapng block of `kind` with `body` (padded to 4 bytes).
fn block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
    let pad = (4 - body.len() % 4) % 4;
    let len = (12 + body.len() + pad) as u32;
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(body);
    out.extend(std::iter::repeat_n(0u8, pad));
    out.extend_from_slice(&len.to_le_bytes());
}

/// The pcapng bytes of the rows `capture` sees: a section header, one
/// Ethernet interface with nanosecond timestamps, a packet block per row.
/// Returns them and the number of packets.
pub fn pcapng(rows: &[TraceRow], capture: Capture, tcp: bool, mss: u64) -> (Vec<u8>, u64) {
    let mut out = Vec::new();
    // Section header: byte-order magic, version 1.0, unknown length.
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    block(&mut out, 0x0A0D_0D0A, &shb);
    // Interface: Ethernet, no snap length, if_tsresol = 10^-9 s.
    let mut idb = Vec::new();
    idb.extend_from_slice(&1u16.to_le_bytes());
    idb.extend_from_slice(&0u16.to_le_bytes());
    idb.extend_from_slice(&0u32.to_le_bytes());
    idb.extend_from_slice(&9u16.to_le_bytes());
    idb.extend_from_slice(&1u16.to_le_bytes());
    idb.extend_from_slice(&[9, 0, 0, 0]);
    idb.extend_from_slice(&[0, 0, 0, 0]); // end of options
    block(&mut out, 1, &idb);
    let mut n = 0;
    for r in rows.iter().filter(|r| capture.sees(r)) {
        let (data, wire) = frame(r, tcp, mss);
        let ns = r.time.ps() / 1000;
        let mut epb = Vec::with_capacity(20 + data.len());
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&((ns >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ns as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(wire as u32).to_le_bytes());
        epb.extend_from_slice(&data);
        block(&mut out, 6, &epb);
        n += 1;
    }
    (out, n)
}

/// Write the capture of the run in `dir` (its `packets.parquet` and
/// `config.toml`) to `out`; returns the number of packets written.
pub fn write_pcap(dir: &Path, capture: Capture, out: &Path) -> Result<u64> {
    let cfg = crate::config::Config::load(&dir.join("config.toml"))?;
    let packets = dir.join("packets.parquet");
    if !packets.is_file() {
        return Err(Error::File {
            file: packets,
            msg: "no packet trace in this run: add [output.trace] to its config and run it again"
                .into(),
        });
    }
    let rows = super::read_packets(&packets)?;
    let tcp = cfg.transport.is_tcp_family();
    let (bytes, n) = pcapng(&rows, capture, tcp, cfg.network.mss as u64);
    // All or nothing: a full disk leaves the earlier capture, not half of
    // this one.
    super::write_atomic(out, &bytes)?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowId, NodeId, Packet, PacketKind, PortId};
    use crate::time::Time;

    fn row(header: Header, kind: PacketKind, src: u32, dst: u32) -> TraceRow {
        let mut pkt = Packet::new(FlowId(3), NodeId(src), NodeId(dst), 1500, kind, header);
        pkt.payload = if kind == PacketKind::Data { 1460 } else { 0 };
        pkt.flags = flags::ECT | flags::CE;
        TraceRow {
            time: Time(1_234_567),
            node: NodeId(src),
            seq: 0,
            event: TraceEvent::Dequeue,
            port: Some(PortId(0)),
            peer: Some(NodeId(9)),
            queue_bytes: None,
            reason: None,
            pkt,
        }
    }

    #[test]
    fn a_data_segment_has_valid_checksums_and_the_flows_numbers() {
        let r = row(Header::TcpData { seq: 2920 }, PacketKind::Data, 0, 1);
        let (f, wire) = frame(&r, true, 1460);
        assert_eq!(wire, 14 + 20 + 20 + 1460);
        assert_eq!(f.len(), 14 + 20 + 20);
        assert_eq!(&f[26..30], &[10, 0, 0, 1]);
        assert_eq!(&f[30..34], &[10, 0, 0, 2]);
        assert_eq!(f[15] & 3, 3, "CE in the IP header");
        // A header whose checksum is right sums to zero.
        assert_eq!(checksum(&f[14..34], 0), 0);
        let tcp = &f[34..54];
        assert_eq!(u16::from_be_bytes([tcp[0], tcp[1]]), 1027);
        assert_eq!(u16::from_be_bytes([tcp[2], tcp[3]]), 5001);
        assert_eq!(u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]), 2921);
        // The TCP checksum over the pseudo-header and a zero payload.
        let mut pseudo = 0u32;
        for w in f[26..34].chunks(2) {
            pseudo += u16::from_be_bytes([w[0], w[1]]) as u32;
        }
        pseudo += 6 + 20 + 1460;
        assert_eq!(checksum(tcp, pseudo), 0);
    }

    #[test]
    fn an_ack_carries_its_sack_block_as_an_option() {
        let sack = crate::transport::tcp::encode_sack(Some((3 * 1460, 5 * 1460)), 1460, 1460);
        let h = Header::TcpAck {
            ack: 1460,
            sack,
            wnd: 100,
        };
        let (f, _) = frame(&row(h, PacketKind::Control, 1, 0), true, 1460);
        let tcp = &f[34..];
        assert_eq!(tcp[12] >> 4, 8, "32-byte header");
        assert_eq!(u32::from_be_bytes([tcp[8], tcp[9], tcp[10], tcp[11]]), 1461);
        assert_eq!(&tcp[20..24], &[1, 1, 5, 10]);
        let left = u32::from_be_bytes([tcp[24], tcp[25], tcp[26], tcp[27]]);
        let right = u32::from_be_bytes([tcp[28], tcp[29], tcp[30], tcp[31]]);
        assert_eq!((left, right), (3 * 1460 + 1, 5 * 1460 + 1));
    }

    #[test]
    fn other_designs_are_udp_with_pktsims_header_in_front() {
        let h = Header::Ctrl {
            kind: 4,
            a: 0x0102_0304_0506_0708,
            b: 9,
        };
        let r = row(h, PacketKind::Control, 2, 7);
        let (f, wire) = frame(&r, false, 1460);
        assert_eq!(f[23], 17, "UDP");
        let udp = &f[34..];
        assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 7001);
        assert_eq!(
            u16::from_be_bytes([udp[4], udp[5]]) as usize,
            wire - 14 - 20
        );
        let hdr = &udp[8..];
        assert_eq!(hdr[0], 1, "control");
        assert_eq!(
            u32::from_be_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]),
            3,
            "flow"
        );
        assert_eq!((hdr[16], hdr[17]), (2, 4), "a control header of kind 4");
        assert_eq!(&hdr[20..28], &0x0102_0304_0506_0708u64.to_be_bytes());
        assert_eq!(u32::from_be_bytes([hdr[28], hdr[29], hdr[30], hdr[31]]), 9);
        // In a TCP run only control kinds 0 and 1 are SYNs.
        let (g, _) = frame(&r, true, 1460);
        assert_eq!(g[23], 17);
    }

    #[test]
    fn the_file_is_a_section_an_interface_and_a_block_per_packet() {
        let rows = [
            row(Header::TcpData { seq: 0 }, PacketKind::Data, 0, 1),
            row(Header::TcpData { seq: 1460 }, PacketKind::Data, 5, 1),
        ];
        let (bytes, n) = pcapng(&rows, Capture::Host(0), true, 1460);
        assert_eq!(n, 1, "host 0 sent one of the two");
        assert_eq!(&bytes[0..4], &0x0A0D_0D0Au32.to_le_bytes());
        let shb_len = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        let idb = &bytes[shb_len..];
        assert_eq!(idb[0], 1);
        let idb_len = u32::from_le_bytes([idb[4], idb[5], idb[6], idb[7]]) as usize;
        let epb = &idb[idb_len..];
        assert_eq!(epb[0], 6);
        // 1,234,567 ps is 1,234 ns.
        assert_eq!(
            u32::from_le_bytes([epb[16], epb[17], epb[18], epb[19]]),
            1234
        );
        assert_eq!(bytes.len() % 4, 0);
    }
}
