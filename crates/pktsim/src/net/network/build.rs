//! Building the network from a topology: ports, shared buffers, routes,
//! the egress policy, the switch-stage plug-in and the refusal hook.

use super::*;
use crate::net::topology::LinkSpec;

impl Network {
    /// Build the network for a topology.
    pub fn build(
        topo: &TopologySpec,
        params: NetworkParams,
        streams: &RngStreams,
    ) -> Result<Network> {
        Self::build_routed(topo, params, streams, None)
    }

    /// Build the network for a topology with `routes`, the routing of a
    /// network built from the same topology ([`Network::routing`]), whose
    /// tables the two then share instead of computing them again: the
    /// copies a run on several threads keeps, one per group.
    pub fn build_sharing(
        topo: &TopologySpec,
        params: NetworkParams,
        streams: &RngStreams,
        routes: &Routing,
    ) -> Result<Network> {
        Self::build_routed(topo, params, streams, Some(routes))
    }

    fn build_routed(
        topo: &TopologySpec,
        mut params: NetworkParams,
        streams: &RngStreams,
        routes: Option<&Routing>,
    ) -> Result<Network> {
        if params.faults.is_some() {
            // A failure drops what a port holds; an eager FIFO's packets
            // are already on the link, with their departures scheduled.
            params.eager_fifo = false;
        }
        let n = topo.n_nodes();
        let n_hosts = topo.n_hosts as usize;
        let mut nodes: Vec<Node> = topo
            .names
            .iter()
            .enumerate()
            .map(|(i, name)| Node {
                name: name.clone(),
                ports: Vec::new(),
                is_host: i < n_hosts,
            })
            .collect();
        let (pools, pool_of) = shared_buffers(&params, n, n_hosts);
        let plugin = crate::net::switch::plugin::from_params(&params);
        let mut ports = Vec::with_capacity(topo.links.len() * 2);
        let mut adj: Vec<Vec<(PortId, NodeId)>> = vec![Vec::new(); n];
        let mut inboxes = Vec::with_capacity(topo.links.len() * 2);
        let mut priority_rate = Vec::with_capacity(topo.links.len() * 2);
        for l in &topo.links {
            for (from, to) in [(l.a, l.b), (l.b, l.a)] {
                let id = PortId(ports.len() as u32);
                let from_host = from.idx() < n_hosts;
                let qcfg = if from_host {
                    &params.host_queue
                } else {
                    &params.switch_queue
                };
                let port = port_of(
                    l,
                    (from, to),
                    n_hosts,
                    &params,
                    plugin.as_deref(),
                    pool_of[from.idx()],
                );
                inboxes.push(LinkInbox::new(to, port.cut_through));
                ports.push(port);
                priority_rate.push(if qcfg.schedules_by_priority() {
                    l.rate.bps()
                } else {
                    0
                });
                nodes[from.idx()].ports.push(id);
                adj[from.idx()].push((id, to));
            }
        }
        check_hosts(&nodes, &adj, n_hosts)?;
        mark_waits_at_peer(&mut ports, &nodes, &priority_rate);
        let routing = match routes {
            Some(shared) => shared.clone(),
            None => Routing::compute(n_hosts, &adj, &topo.names)?,
        };
        let egress = Egress::new(params.load_balancing, n, n_hosts, streams);
        // A plug-in's hook replaces the configured refusal behaviour.
        let hook = match plugin.as_ref().and_then(|p| p.refusal_hook(&ports)) {
            Some(h) => Some(h),
            None => params.refusal.build(n, streams),
        };
        let nic_ports = nodes[..n_hosts].iter().map(|n| n.ports[0]).collect();
        let trace = params
            .trace
            .as_ref()
            .map(|s| Box::new(PacketTrace::new(s, n)));
        let faults = params.faults.as_ref().map(|plan| {
            let plan = std::sync::Arc::clone(plan);
            Box::new(faults::Faults::new(plan, ports.len(), n, &routing))
        });
        Ok(Network {
            nic_ports,
            nodes,
            ports,
            inboxes,
            routing,
            pools,
            records: NetRecords::default(),
            nic_flow_bytes: Vec::new(),
            nic_flow_departed: Vec::new(),
            nic_idle: NicIdleRequests::new(n_hosts),
            priority_rate,
            n_hosts: n_hosts as u32,
            params,
            egress,
            hook,
            plugin,
            drops: Drops::with_capacity(16),
            crossings: Vec::new(),
            trace,
            faults,
        })
    }
}

/// Set [`Port::waits_at_peer`]: a cut-through port whose peer has a faster
/// port that schedules by priority hands its packet over only once that
/// port could start it (`Network::next_tx`).
fn mark_waits_at_peer(ports: &mut [Port], nodes: &[Node], priority_rate: &[u64]) {
    for p in ports {
        let rate = p.rate.bps();
        p.waits_at_peer = p.cut_through
            && nodes[p.peer.idx()]
                .ports
                .iter()
                .any(|q| priority_rate[q.idx()] > rate);
    }
}

/// One shared buffer per switch when the parameters ask for them, and each
/// node's pool (`None` for hosts, or without shared buffers).
fn shared_buffers(
    params: &NetworkParams,
    n: usize,
    n_hosts: usize,
) -> (Vec<SharedBuffer>, Vec<Option<u32>>) {
    let mut pools = Vec::new();
    let mut pool_of = vec![None; n];
    if let Some((total, alpha)) = params.shared_buffer {
        for p in pool_of.iter_mut().skip(n_hosts) {
            *p = Some(pools.len() as u32);
            pools.push(SharedBuffer {
                total,
                used: 0,
                alpha,
            });
        }
    }
    (pools, pool_of)
}

/// The port that sends on link `l` from `from` to `to`: its queue (the
/// switch-stage plug-in's, for a switch port, when there is one), its eager
/// FIFO where it may have one, its limit and its link's parameters.
fn port_of(
    l: &LinkSpec,
    (from, to): (NodeId, NodeId),
    n_hosts: usize,
    params: &NetworkParams,
    plugin: Option<&dyn SwitchPlugin>,
    pool: Option<u32>,
) -> Port {
    let from_host = from.idx() < n_hosts;
    let to_switch = to.idx() >= n_hosts;
    let (qcfg, default_limit) = if from_host {
        (&params.host_queue, params.host_buffer)
    } else {
        (&params.switch_queue, params.switch_buffer)
    };
    let limit = l.buffer.unwrap_or(default_limit);
    let queue = qcfg.build_for_link(l.rate);
    let queue = match plugin {
        Some(p) if !from_host => p.switch_queue(queue, l.rate, limit),
        _ => queue,
    };
    // Only switch ports: host NICs must report when they run dry to
    // transports that pull (see `nic_pull`).
    let fifo = match qcfg.eager_fifo() {
        Some(ecn)
            if !from_host
                && pool.is_none()
                && params.eager_fifo
                && plugin.is_none_or(|p| p.allows_eager_fifo()) =>
        {
            Some(crate::net::eager_fifo::EagerFifo::new(ecn))
        }
        _ => None,
    };
    Port {
        owner: from,
        peer: to,
        rate: l.rate,
        ps_per_byte: Port::exact_ps_per_byte(l.rate),
        delay: l.delay,
        header_time: l.rate.tx_time(params.header_bytes as u64),
        cut_through: params.forwarding == Forwarding::CutThrough && to_switch,
        waits_at_peer: false,
        queue,
        fifo,
        limit,
        pool,
        busy_until: Time::ZERO,
        tx_pending: false,
        remote: false,
        detour: false,
        stats: PortStats::default(),
    }
}

/// Every host has exactly one link, to a switch.
fn check_hosts(nodes: &[Node], adj: &[Vec<(PortId, NodeId)>], n_hosts: usize) -> Result<()> {
    for (i, node) in nodes.iter().enumerate().take(n_hosts) {
        if node.ports.len() != 1 {
            return Err(Error::Topology(format!(
                "host {} has {} links; every host needs exactly one",
                node.name,
                node.ports.len()
            )));
        }
        if adj[i][0].1.idx() < n_hosts {
            return Err(Error::Topology(format!(
                "host {} links directly to another host; connect hosts through switches",
                node.name
            )));
        }
    }
    Ok(())
}
