//! NewReno's window growth (RFC 5681 §3.1): slow start, then one MSS per
//! window of data. Its loss recovery (RFC 6582, or RFC 6675 with SACK)
//! lives in the sender; this file only holds the growth state.

use crate::error::Result;
use crate::transport::tcp::cc::{reno_increase, AckInfo, CongestionControl, TcpVariant, Window};
use crate::transport::tcp::TcpConfig;

/// Reno growth state.
#[derive(Clone, Debug, Default)]
pub struct NewReno {
    /// Bytes acknowledged in congestion avoidance since the last increase.
    ca_acked: u64,
}

impl CongestionControl for NewReno {
    fn on_ack(&mut self, w: &mut Window, ack: &AckInfo) {
        reno_increase(w, ack.acked, &mut self.ca_acked);
    }
}

/// `protocol = "tcp"`: no settings of its own.
impl TcpVariant for NewReno {
    fn from_config(cfg: &TcpConfig) -> Result<Self> {
        cfg.no_gain()?;
        Ok(NewReno::default())
    }
}
