//! ECN marking at a threshold K on the instantaneous queue, as DCTCP needs
//! (Alizadeh et al., SIGCOMM 2010, §3.1: "mark arriving packets with CE if
//! the queue occupancy is greater than K upon arrival").

use crate::packet::{flags, Packet};

/// A marking threshold in packets or bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnThreshold {
    /// Mark when more than this many packets are queued on arrival.
    Packets(u64),
    /// Mark when more than this many bytes are queued on arrival.
    Bytes(u64),
}

impl EcnThreshold {
    /// Read a threshold from the two optional config fields. `required`:
    /// whether one of them must be given.
    pub fn from_config(
        k_packets: Option<u64>,
        k_bytes: Option<u64>,
        field: &str,
        required: bool,
    ) -> crate::Result<Option<EcnThreshold>> {
        match (k_packets, k_bytes) {
            (Some(_), Some(_)) => Err(crate::Error::config(
                field,
                "give k_packets or k_bytes, not both",
            )),
            (Some(0), None) => Err(crate::Error::config(
                format!("{field}.k_packets"),
                "must be positive",
            )),
            (None, Some(0)) => Err(crate::Error::config(
                format!("{field}.k_bytes"),
                "must be positive",
            )),
            (Some(k), None) => Ok(Some(EcnThreshold::Packets(k))),
            (None, Some(k)) => Ok(Some(EcnThreshold::Bytes(k))),
            (None, None) if required => Err(crate::Error::config(
                field,
                "an ECN queue needs k_packets or k_bytes",
            )),
            (None, None) => Ok(None),
        }
    }

    /// Mark `pkt` if the occupancy it finds on arrival exceeds K and it is
    /// ECN-capable. Returns whether it was marked.
    #[inline]
    pub fn apply(self, pkt: &mut Packet, queued_packets: usize, queued_bytes: u64) -> bool {
        let over = match self {
            EcnThreshold::Packets(k) => queued_packets as u64 > k,
            EcnThreshold::Bytes(k) => queued_bytes > k,
        };
        if over && pkt.has(flags::ECT) && !pkt.has(flags::CE) {
            pkt.flags |= flags::CE;
            true
        } else {
            false
        }
    }
}
