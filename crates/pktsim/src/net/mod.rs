//! The network: packets, ports, switches, routing and topology builders.
//!
//! A [`port::Port`] is an output queue plus the link it feeds. A link keeps
//! its packets in flight in a FIFO and has at most one pending event (for the
//! head packet); a port has at most one pending event (end of the current
//! transmission, only when more packets wait). So the event count grows with
//! busy components, not with packets in flight.
//!
//! Forwarding is store-and-forward by default: the next node sees a packet
//! when its last bit has arrived. With cut-through, a switch sees a packet as
//! soon as its header has arrived and may start sending it then, but never so
//! early that the transmission would overtake the reception (which matters
//! when the egress link is faster than the ingress one). Hosts always receive
//! whole packets.

pub mod eager_fifo;
pub mod network;
pub mod packet;
pub mod port;
pub mod queue;
pub mod routing;
pub mod topology;

pub use network::{Forwarding, LoadBalancing, Network, NetworkParams};
pub use packet::{FlowId, Header, NodeId, Packet, PacketKind, PortId};
