//! The network: ports, links, queues, the switch stage, routing and
//! topology builders. It sits on the packet layer ([`crate::packet`]) and
//! the engine's event queue, and knows nothing of the run loop, transports
//! or configs: it schedules its own [`NetEvent`]s into whatever event type
//! the loop uses (anything `From<NetEvent>`).
//!
//! - [`network`]: the state, split by job (construction, the per-hop path,
//!   the refusal executor, host-NIC bookkeeping).
//! - [`port`]: an output queue, its transmitter and its link.
//! - [`inbox`]: a link's packets in flight, held by the side they travel to.
//! - [`records`]: counters and per-flow drops, mergeable between parts.
//! - [`queue`]: queue disciplines, one file each, and the rate limit.
//! - [`eager_fifo`]: FIFO ports that schedule departures at enqueue time.
//! - `nic_idle`: telling transports that a host NIC ran dry, with an event
//!   only where one asked.
//! - [`switch`]: egress choice and the refusal hook (drop, notify, deflect,
//!   trim), and the hop limit.
//! - [`routing`], [`topology`]: equal-cost shortest paths; topology builders.
//! - [`partition`]: cutting a topology into pieces for a partitioned run.
//! - [`trace`]: the packet trace, off unless asked for.
//!
//! A [`port::Port`] is an output queue plus the link it feeds. The link's
//! packets in flight wait, in order, in the receiving side's
//! [`inbox::LinkInbox`], which has at most one pending event (for the head
//! packet); a port has at most one pending event (end of the current
//! transmission, only when more packets wait). So the event count grows with
//! busy components, not with packets in flight.
//!
//! Forwarding is store-and-forward by default: the next node sees a packet
//! when its last bit has arrived. With cut-through, a switch sees a packet as
//! soon as its header has arrived and may start sending it then, but never so
//! early that the transmission would overtake the reception (which matters
//! when the egress link is faster than the ingress one). A queue that picks
//! packets by priority (pFabric) is offered such a packet only once it could
//! start, so that it never holds its port idle for it while complete packets
//! wait; a FIFO port takes it at header time. Hosts always receive whole
//! packets.

pub mod eager_fifo;
pub mod event;
pub mod fault;
pub mod inbox;
pub mod network;
pub(crate) mod nic_idle;
pub mod partition;
pub mod port;
pub mod queue;
pub mod records;
pub mod routing;
pub mod switch;
pub mod topology;
pub mod trace;

pub use event::NetEvent;
pub use network::{Crossing, Forwarding, Network, NetworkParams};
pub use records::NetRecords;
pub use switch::{LoadBalancing, Refusal};
