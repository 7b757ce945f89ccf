//! Topologies: nodes, full-duplex links and shortest-path routes.
//!
//! Every topology, built-in or custom, becomes the same thing: a list of
//! nodes (hosts first, then switches), a list of ports (one per link end, each
//! the transmitter of one direction of its link), and per switch and
//! destination host the set of equal-cost next-hop ports. ECMP picks among
//! them by a hash of the flow, so a flow keeps one path.

use crate::config::{CfgResult, ConfigError, TopologyConfig};
use crate::units::{Time, US};
use std::collections::{HashMap, VecDeque};

/// Whether a node is an end host or a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// End host with one NIC port; the value is the host index.
    Host(u32),
    /// Switch; the value is the switch index.
    Switch(u32),
}

/// A node of the network.
#[derive(Clone, Debug)]
pub struct Node {
    /// Host or switch, with its index among its kind.
    pub kind: NodeKind,
    /// Name (for reports and custom topologies).
    pub name: String,
    /// Global ids of the node's ports.
    pub ports: Vec<u32>,
}

/// One end of a link: the transmitter of the direction leaving its node.
#[derive(Clone, Debug)]
pub struct PortSpec {
    /// Node that owns the port.
    pub node: u32,
    /// Port at the other end of the link (which transmits back to us).
    pub peer: u32,
    /// Transmission rate in bit/s.
    pub rate_bps: u64,
    /// Propagation delay to the peer.
    pub delay: Time,
}

/// A built topology.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    /// All nodes: hosts first (node id = host index), then switches.
    pub nodes: Vec<Node>,
    /// All ports.
    pub ports: Vec<PortSpec>,
    /// Number of hosts.
    pub n_hosts: u32,
    /// Number of switches.
    pub n_switches: u32,
    /// Per (switch, route target): where its next-hop ports are in
    /// `route_ports`. Start and length side by side, so a lookup reads one
    /// entry (they were two arrays, two cache misses on a large fabric).
    route_rows: Vec<RouteRow>,
    route_ports: Vec<u32>,
    /// Per host: what a switch needs to route toward it, in one entry.
    host_routes: Vec<HostRoute>,
    n_targets: u32,
    host_names: HashMap<String, u32>,
}

/// The next-hop ports of one (switch, route target): `route_ports[start..start + len]`.
#[derive(Clone, Copy, Debug, Default)]
struct RouteRow {
    start: u32,
    len: u32,
}

/// Routing facts of one host, read together at every switch hop toward it.
#[derive(Clone, Copy, Debug)]
struct HostRoute {
    /// Index of its attachment switch among the route targets (`u32::MAX`
    /// when its link goes straight to a host).
    target: u32,
    /// The attachment switch's port toward the host.
    down_port: u32,
    /// Switch index of the attachment switch: that switch forwards straight
    /// down `down_port` (kept here so a hop needs no read of the port table).
    attach: u32,
}

struct Builder {
    topo: Topology,
}

impl Builder {
    fn new() -> Self {
        Builder { topo: Topology::default() }
    }
    fn host(&mut self, name: String) -> u32 {
        let id = self.topo.nodes.len() as u32;
        let h = self.topo.n_hosts;
        self.topo.host_names.insert(name.clone(), h);
        self.topo.nodes.push(Node { kind: NodeKind::Host(h), name, ports: vec![] });
        self.topo.n_hosts += 1;
        id
    }
    fn switch(&mut self, name: String) -> u32 {
        let id = self.topo.nodes.len() as u32;
        let s = self.topo.n_switches;
        self.topo.nodes.push(Node { kind: NodeKind::Switch(s), name, ports: vec![] });
        self.topo.n_switches += 1;
        id
    }
    /// Adds a full-duplex link; `d_ab` is the delay of the a -> b direction.
    fn link(&mut self, a: u32, b: u32, rate: u64, d_ab: Time, d_ba: Time) {
        let pa = self.topo.ports.len() as u32;
        let pb = pa + 1;
        self.topo.ports.push(PortSpec { node: a, peer: pb, rate_bps: rate, delay: d_ab });
        self.topo.ports.push(PortSpec { node: b, peer: pa, rate_bps: rate, delay: d_ba });
        self.topo.nodes[a as usize].ports.push(pa);
        self.topo.nodes[b as usize].ports.push(pb);
    }
}

fn need<T: Copy>(v: Option<T>, field: &str, kind: &str) -> CfgResult<T> {
    v.ok_or_else(|| ConfigError::new(format!("topology.{field}"), "", format!("is required for kind \"{kind}\"")))
}

fn positive(v: u32, field: &str) -> CfgResult<u32> {
    if v == 0 {
        Err(ConfigError::new(format!("topology.{field}"), v, "must be at least 1"))
    } else {
        Ok(v)
    }
}

/// Rejects fields that do not belong to the chosen kind, so a typo such as
/// `k` on a star does not silently do nothing.
fn only_fields(cfg: &TopologyConfig, allowed: &[&str]) -> CfgResult<()> {
    let present: [(&str, bool); 18] = [
        ("hosts", cfg.hosts.is_some()),
        ("link_rate", cfg.link_rate.is_some()),
        ("link_delay", cfg.link_delay.is_some()),
        ("uplink_delay", cfg.uplink_delay.is_some()),
        ("downlink_delay", cfg.downlink_delay.is_some()),
        ("left", cfg.left.is_some()),
        ("right", cfg.right.is_some()),
        ("bottleneck_rate", cfg.bottleneck_rate.is_some()),
        ("bottleneck_delay", cfg.bottleneck_delay.is_some()),
        ("leaves", cfg.leaves.is_some()),
        ("spines", cfg.spines.is_some()),
        ("hosts_per_leaf", cfg.hosts_per_leaf.is_some()),
        ("fabric_rate", cfg.fabric_rate.is_some()),
        ("fabric_delay", cfg.fabric_delay.is_some()),
        ("k", cfg.k.is_some()),
        ("nodes", cfg.nodes.is_some()),
        ("links", cfg.links.is_some()),
        ("host_delays", cfg.host_delays.is_some()),
    ];
    for (name, set) in present {
        if set && !allowed.contains(&name) && name != "link_rate" && name != "link_delay" {
            return Err(ConfigError::new(
                format!("topology.{name}"),
                "",
                format!("does not apply to kind \"{}\" (it takes: {})", cfg.kind, allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

const MAX_NODES: u32 = 200_000;

/// A dumbbell's per-host access delays (`topology.host_delays`), checked
/// against its `hosts`; empty when not given.
fn host_delays(cfg: &TopologyConfig, hosts: u32) -> CfgResult<Vec<crate::units::Time>> {
    let Some(list) = cfg.host_delays.as_ref() else { return Ok(Vec::new()) };
    if list.len() > hosts as usize {
        return Err(ConfigError::new(
            "topology.host_delays",
            list.len(),
            format!("lists more delays than the dumbbell has hosts ({hosts})"),
        ));
    }
    Ok(list.iter().map(|d| d.0).collect())
}

impl Topology {
    /// Builds the topology a scenario describes.
    pub fn build(cfg: &TopologyConfig) -> CfgResult<Topology> {
        let rate = cfg.link_rate.map(|r| r.0).unwrap_or(100_000_000_000);
        let delay = cfg.link_delay.map(|d| d.0).unwrap_or(US);
        let fabric_rate = cfg.fabric_rate.map(|r| r.0).unwrap_or(rate);
        let fabric_delay = cfg.fabric_delay.map(|d| d.0).unwrap_or(delay);
        let mut b = Builder::new();
        match cfg.kind.as_str() {
            "star" => {
                only_fields(cfg, &["hosts", "uplink_delay", "downlink_delay"])?;
                let n = positive(need(cfg.hosts, "hosts", "star")?, "hosts")?;
                if n < 2 {
                    return Err(ConfigError::new("topology.hosts", n, "a star needs at least 2 hosts"));
                }
                if n > MAX_NODES {
                    return Err(ConfigError::new("topology.hosts", n, format!("at most {MAX_NODES} hosts")));
                }
                let up = cfg.uplink_delay.map(|d| d.0).unwrap_or(delay);
                let down = cfg.downlink_delay.map(|d| d.0).unwrap_or(delay);
                let hosts: Vec<u32> = (0..n).map(|i| b.host(format!("h{i}"))).collect();
                let sw = b.switch("sw0".into());
                for h in hosts {
                    b.link(h, sw, rate, up, down);
                }
            }
            "dumbbell" => {
                only_fields(cfg, &["left", "right", "bottleneck_rate", "bottleneck_delay", "host_delays"])?;
                let l = positive(need(cfg.left, "left", "dumbbell")?, "left")?;
                let r = positive(need(cfg.right, "right", "dumbbell")?, "right")?;
                if l + r > MAX_NODES {
                    return Err(ConfigError::new("topology.left", l, format!("at most {MAX_NODES} hosts")));
                }
                let own = host_delays(cfg, l + r)?;
                let access = |i: u32| own.get(i as usize).copied().unwrap_or(delay);
                let hl: Vec<u32> = (0..l).map(|i| b.host(format!("h{i}"))).collect();
                let hr: Vec<u32> = (0..r).map(|i| b.host(format!("h{}", l + i))).collect();
                let s0 = b.switch("left".into());
                let s1 = b.switch("right".into());
                for (i, h) in hl.into_iter().enumerate() {
                    let d = access(i as u32);
                    b.link(h, s0, rate, d, d);
                }
                for (i, h) in hr.into_iter().enumerate() {
                    let d = access(l + i as u32);
                    b.link(h, s1, rate, d, d);
                }
                let br = cfg.bottleneck_rate.map(|r| r.0).unwrap_or(rate);
                let bd = cfg.bottleneck_delay.map(|d| d.0).unwrap_or(delay);
                b.link(s0, s1, br, bd, bd);
            }
            "leaf_spine" => {
                only_fields(cfg, &["leaves", "spines", "hosts_per_leaf", "fabric_rate", "fabric_delay"])?;
                let nl = positive(need(cfg.leaves, "leaves", "leaf_spine")?, "leaves")?;
                let ns = positive(need(cfg.spines, "spines", "leaf_spine")?, "spines")?;
                let hp = positive(need(cfg.hosts_per_leaf, "hosts_per_leaf", "leaf_spine")?, "hosts_per_leaf")?;
                if (nl as u64) * (hp as u64) > MAX_NODES as u64 {
                    return Err(ConfigError::new("topology.hosts_per_leaf", hp, "too many hosts"));
                }
                let hosts: Vec<u32> = (0..nl * hp).map(|i| b.host(format!("h{i}"))).collect();
                let leaves: Vec<u32> = (0..nl).map(|i| b.switch(format!("leaf{i}"))).collect();
                let spines: Vec<u32> = (0..ns).map(|i| b.switch(format!("spine{i}"))).collect();
                for (i, h) in hosts.iter().enumerate() {
                    b.link(*h, leaves[i / hp as usize], rate, delay, delay);
                }
                for &l in &leaves {
                    for &s in &spines {
                        b.link(l, s, fabric_rate, fabric_delay, fabric_delay);
                    }
                }
            }
            "fat_tree" => {
                only_fields(cfg, &["k", "fabric_rate", "fabric_delay"])?;
                let k = need(cfg.k, "k", "fat_tree")?;
                if k < 2 || k % 2 == 1 || k > 48 {
                    return Err(ConfigError::new("topology.k", k, "must be an even number from 2 to 48"));
                }
                let half = k / 2;
                let hosts: Vec<u32> = (0..k * half * half).map(|i| b.host(format!("h{i}"))).collect();
                let edges: Vec<u32> = (0..k * half).map(|i| b.switch(format!("edge{i}"))).collect();
                let aggs: Vec<u32> = (0..k * half).map(|i| b.switch(format!("agg{i}"))).collect();
                let cores: Vec<u32> = (0..half * half).map(|i| b.switch(format!("core{i}"))).collect();
                for (i, h) in hosts.iter().enumerate() {
                    b.link(*h, edges[i / half as usize], rate, delay, delay);
                }
                for pod in 0..k {
                    for e in 0..half {
                        for a in 0..half {
                            b.link(
                                edges[(pod * half + e) as usize],
                                aggs[(pod * half + a) as usize],
                                fabric_rate,
                                fabric_delay,
                                fabric_delay,
                            );
                        }
                    }
                    for a in 0..half {
                        for c in 0..half {
                            b.link(
                                aggs[(pod * half + a) as usize],
                                cores[(a * half + c) as usize],
                                fabric_rate,
                                fabric_delay,
                                fabric_delay,
                            );
                        }
                    }
                }
            }
            "custom" => {
                only_fields(cfg, &["nodes", "links"])?;
                build_custom(&mut b, cfg, rate, delay)?;
            }
            other => {
                return Err(ConfigError::new(
                    "topology.kind",
                    format!("\"{other}\""),
                    "unknown topology; use star, dumbbell, leaf_spine, fat_tree or custom",
                ))
            }
        }
        let mut topo = b.topo;
        topo.compute_routes();
        Ok(topo)
    }

    /// Host index of a host name (custom topologies; built-ins name hosts h0, h1, ...).
    pub fn host_by_name(&self, name: &str) -> Option<u32> {
        self.host_names.get(name).copied()
    }

    /// The NIC port of host `h`.
    pub fn host_port(&self, h: u32) -> u32 {
        self.nodes[h as usize].ports[0]
    }

    /// Equal-cost next-hop ports of switch `s` toward host `dst` (empty if unreachable).
    #[inline]
    pub fn next_hops(&self, s: u32, dst: u32) -> &[u32] {
        let hr = &self.host_routes[dst as usize];
        if hr.target == u32::MAX {
            return &[];
        }
        if hr.attach == s {
            return std::slice::from_ref(&hr.down_port);
        }
        let row = self.route_rows[s as usize * self.n_targets as usize + hr.target as usize];
        &self.route_ports[row.start as usize..(row.start + row.len) as usize]
    }

    /// Whether `dst` can be reached from host `src`.
    pub fn reachable(&self, src: u32, dst: u32) -> bool {
        let p = self.host_port(src);
        let peer_node = self.ports[self.ports[p as usize].peer as usize].node;
        match self.nodes[peer_node as usize].kind {
            NodeKind::Host(h) => h == dst,
            NodeKind::Switch(s) => !self.next_hops(s, dst).is_empty(),
        }
    }

    /// Node at the far end of port `p`.
    #[inline]
    pub fn peer_node(&self, p: u32) -> u32 {
        self.ports[self.ports[p as usize].peer as usize].node
    }

    /// Ports crossed from host `src` to host `dst` by a flow with ECMP hash `hash`.
    pub fn path(&self, src: u32, dst: u32, hash: u32) -> Vec<u32> {
        let mut out = vec![self.host_port(src)];
        let mut node = self.peer_node(out[0]);
        while let NodeKind::Switch(s) = self.nodes[node as usize].kind {
            let hops = self.next_hops(s, dst);
            if hops.is_empty() || out.len() > self.nodes.len() {
                break;
            }
            let p = hops[ecmp_index(hash, s, hops.len())];
            out.push(p);
            node = self.peer_node(p);
        }
        out
    }

    /// The ports of every equal-cost path from host `src` to host `dst`, by
    /// hop: entry `j` holds the distinct ports at the `j`-th hop of any of
    /// them (equal-cost paths have equal lengths). With packet spraying a
    /// flow's packets cross each hop through any of that hop's ports.
    pub fn paths_by_hop(&self, src: u32, dst: u32) -> Vec<Vec<u32>> {
        let mut out = vec![vec![self.host_port(src)]];
        loop {
            let mut next: Vec<u32> = Vec::new();
            for &p in out.last().expect("starts with the host's port") {
                if let NodeKind::Switch(s) = self.nodes[self.peer_node(p) as usize].kind {
                    next.extend_from_slice(self.next_hops(s, dst));
                }
            }
            if next.is_empty() || out.len() > self.nodes.len() {
                return out;
            }
            next.sort_unstable();
            next.dedup();
            out.push(next);
        }
    }

    /// Routes are computed per *attachment switch* (the switch a host hangs
    /// off), not per host: hosts under one top-of-rack switch share every
    /// route, which keeps tables and set-up small on large fat trees.
    fn compute_routes(&mut self) {
        let ns = self.n_switches as usize;
        // Attachment switch of each host (u32::MAX when its link goes straight to a host).
        let mut targets: Vec<u32> = Vec::new();
        let mut target_of_node: HashMap<u32, u32> = HashMap::new();
        self.host_routes = Vec::with_capacity(self.n_hosts as usize);
        for h in 0..self.n_hosts {
            let up = self.host_port(h);
            let sw = self.ports[up as usize].peer;
            let sw_node = self.ports[sw as usize].node;
            if let NodeKind::Switch(attach) = self.nodes[sw_node as usize].kind {
                let next = targets.len() as u32;
                let t = *target_of_node.entry(sw_node).or_insert(next);
                if t == next {
                    targets.push(sw_node);
                }
                self.host_routes.push(HostRoute { target: t, down_port: sw, attach });
            } else {
                self.host_routes.push(HostRoute { target: u32::MAX, down_port: u32::MAX, attach: u32::MAX });
            }
        }
        let nt = targets.len();
        self.n_targets = nt as u32;
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); ns * nt];
        let mut dist = vec![u32::MAX; self.nodes.len()];
        let mut queue = VecDeque::new();
        for (t, &root) in targets.iter().enumerate() {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[root as usize] = 0;
            queue.clear();
            queue.push_back(root);
            // Breadth-first from the destination switch; hosts do not forward.
            while let Some(n) = queue.pop_front() {
                for &p in &self.nodes[n as usize].ports {
                    let m = self.peer_node(p);
                    if dist[m as usize] == u32::MAX && matches!(self.nodes[m as usize].kind, NodeKind::Switch(_)) {
                        dist[m as usize] = dist[n as usize] + 1;
                        queue.push_back(m);
                    }
                }
            }
            for (node_id, node) in self.nodes.iter().enumerate() {
                if let NodeKind::Switch(s) = node.kind {
                    let d = dist[node_id];
                    if d == u32::MAX || d == 0 {
                        continue;
                    }
                    let list = &mut lists[s as usize * nt + t];
                    for &p in &node.ports {
                        let m = self.peer_node(p);
                        if dist[m as usize] != u32::MAX && dist[m as usize] + 1 == d {
                            list.push(p);
                        }
                    }
                }
            }
        }
        // Equal lists share one slice of `route_ports`: on a fat tree every
        // (switch, target) pair going up has the same up ports, so the table
        // shrinks from one list per pair to a few per switch and stays in the
        // first-level cache beside the packets and ports of a hop.
        self.route_rows = Vec::with_capacity(lists.len());
        let mut shared: HashMap<Vec<u32>, u32> = HashMap::new();
        for l in lists {
            let len = l.len() as u32;
            let start = match shared.get(&l) {
                Some(&start) => start,
                None => {
                    let start = self.route_ports.len() as u32;
                    self.route_ports.extend_from_slice(&l);
                    shared.insert(l, start);
                    start
                }
            };
            self.route_rows.push(RouteRow { start, len });
        }
    }
}

fn build_custom(b: &mut Builder, cfg: &TopologyConfig, rate: u64, delay: Time) -> CfgResult<()> {
    let nodes =
        cfg.nodes.as_ref().ok_or_else(|| ConfigError::new("topology.nodes", "", "is required for kind \"custom\""))?;
    let links =
        cfg.links.as_ref().ok_or_else(|| ConfigError::new("topology.links", "", "is required for kind \"custom\""))?;
    let mut ids = HashMap::new();
    // Hosts first so that host index = node id.
    for pass in ["host", "switch"] {
        for (i, n) in nodes.iter().enumerate() {
            if n.kind != "host" && n.kind != "switch" {
                return Err(ConfigError::new(
                    format!("topology.nodes[{i}].kind"),
                    format!("\"{}\"", n.kind),
                    "must be \"host\" or \"switch\"",
                ));
            }
            if n.kind != pass {
                continue;
            }
            if ids.contains_key(&n.name) {
                return Err(ConfigError::new(
                    format!("topology.nodes[{i}].name"),
                    format!("\"{}\"", n.name),
                    "duplicate node name",
                ));
            }
            let id = if pass == "host" { b.host(n.name.clone()) } else { b.switch(n.name.clone()) };
            ids.insert(n.name.clone(), id);
        }
    }
    if b.topo.n_hosts < 2 {
        return Err(ConfigError::new("topology.nodes", "", "a custom topology needs at least 2 hosts"));
    }
    for (i, l) in links.iter().enumerate() {
        let a = *ids.get(&l.a).ok_or_else(|| {
            ConfigError::new(format!("topology.links[{i}].a"), format!("\"{}\"", l.a), "no node of that name")
        })?;
        let bb = *ids.get(&l.b).ok_or_else(|| {
            ConfigError::new(format!("topology.links[{i}].b"), format!("\"{}\"", l.b), "no node of that name")
        })?;
        if a == bb {
            return Err(ConfigError::new(
                format!("topology.links[{i}].b"),
                format!("\"{}\"", l.b),
                "a link must join two different nodes",
            ));
        }
        let r = l.rate.map(|r| r.0).unwrap_or(rate);
        let d = l.delay.map(|d| d.0).unwrap_or(delay);
        b.link(a, bb, r, d, d);
    }
    for (i, n) in b.topo.nodes.iter().enumerate() {
        if matches!(n.kind, NodeKind::Host(_)) && n.ports.len() != 1 {
            return Err(ConfigError::new(
                "topology.links",
                "",
                format!("host \"{}\" has {} links; a host must have exactly one (node {i})", n.name, n.ports.len()),
            ));
        }
    }
    Ok(())
}

/// ECMP hash of flow `id` from host `src` to host `dst`: a Murmur3 finaliser
/// of its identity, so that flows spread over the equal-cost paths.
pub fn flow_hash(id: u32, src: u32, dst: u32) -> u32 {
    mix32(id ^ (src << 16) ^ dst.rotate_left(8))
}

/// Hash of a flow's reverse direction (ACKs, NACKs, CNPs, probe replies), so
/// that the reverse path is independent of the forward one.
#[inline]
pub fn reverse_hash(h: u32) -> u32 {
    mix32(h ^ 0x5bd1_e995)
}

/// Hash of one packet of a flow with hash `h` for packet spraying: the
/// flow's hash mixed with the packet's sequence number (data: its first
/// byte; ACK: the byte it acknowledges).
#[inline]
pub fn spray_hash(h: u32, seq: u64) -> u32 {
    mix32(h ^ mix32(seq as u32 ^ (seq >> 32) as u32))
}

/// Murmur3 finaliser: spreads 32-bit values over 32 bits.
fn mix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// ECMP choice among `n` next hops for a flow hash at switch `s`: a 32-bit
/// Murmur3-style finaliser of (hash, switch), so different switches split
/// the same flows differently.
#[inline]
pub fn ecmp_index(hash: u32, s: u32, n: usize) -> usize {
    if n == 1 {
        return 0;
    }
    let mut h = hash ^ s.wrapping_mul(0x9e37_79b9);
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    (h as usize) % n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TopologyConfig;

    fn cfg(kind: &str) -> TopologyConfig {
        TopologyConfig { kind: kind.into(), ..Default::default() }
    }

    #[test]
    fn fat_tree_has_k_cubed_over_four_hosts_and_many_paths() {
        let t = Topology::build(&TopologyConfig { k: Some(4), ..cfg("fat_tree") }).unwrap();
        assert_eq!(t.n_hosts, 16);
        assert_eq!(t.n_switches, 20);
        // Edge switch of host 0 has 2 uplinks toward a host in another pod.
        let edge = t.peer_node(t.host_port(0));
        let NodeKind::Switch(s) = t.nodes[edge as usize].kind else { panic!() };
        assert_eq!(t.next_hops(s, 15).len(), 2);
        assert_eq!(t.next_hops(s, 1).len(), 1);
        assert_eq!(t.path(0, 15, 7).len(), 6);
    }

    #[test]
    fn dumbbell_host_delays_set_each_access_link_and_default_to_link_delay() {
        use crate::units::Duration;
        let base =
            TopologyConfig { left: Some(2), right: Some(2), link_delay: Some(Duration(5 * US)), ..cfg("dumbbell") };
        let own = TopologyConfig { host_delays: Some(vec![Duration(US), Duration(40 * US)]), ..base.clone() };
        let t = Topology::build(&own).unwrap();
        let delay = |h: u32| t.ports[t.host_port(h) as usize].delay;
        let back = |h: u32| t.ports[t.ports[t.host_port(h) as usize].peer as usize].delay;
        assert_eq!((delay(0), back(0), delay(1), back(1)), (US, US, 40 * US, 40 * US));
        assert_eq!((delay(2), delay(3)), (5 * US, 5 * US), "past the list: link_delay");
        let plain = Topology::build(&base).unwrap();
        assert!((0..4).all(|h| plain.ports[plain.host_port(h) as usize].delay == 5 * US));
        let long = TopologyConfig { host_delays: Some(vec![Duration(US); 5]), ..base.clone() };
        assert_eq!(Topology::build(&long).unwrap_err().field, "topology.host_delays");
        let star = TopologyConfig { hosts: Some(3), host_delays: Some(vec![]), ..cfg("star") };
        assert_eq!(Topology::build(&star).unwrap_err().field, "topology.host_delays");
    }

    #[test]
    fn star_routes_every_host() {
        let t = Topology::build(&TopologyConfig { hosts: Some(5), ..cfg("star") }).unwrap();
        for d in 0..5 {
            assert!(t.reachable(0, d) || d == 0);
        }
    }
}
