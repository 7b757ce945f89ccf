//! The scenario: what a user writes in a TOML file, parsed and checked.
//!
//! Parsing is strict: unknown fields are errors, and every value that the
//! simulator cannot use is rejected with a [`ConfigError`] that names the
//! field and the value. Defaults follow the ADPG reference NIC simulator
//! (`shared/specs/scenarios.md` section 1) where it has one.

use crate::units::{Bytes, Duration, Rate, RunTime, MS, NS, US};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A user mistake in a scenario: which field, which value, what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    /// Dotted path of the offending field, e.g. `workload[2].cdf`.
    pub field: String,
    /// The offending value as written (may be empty when a field is missing).
    pub value: String,
    /// What is wrong and, where possible, how to fix it.
    pub message: String,
}

impl ConfigError {
    /// Builds an error for `field` holding `value`.
    pub fn new(field: impl Into<String>, value: impl fmt::Display, message: impl Into<String>) -> Self {
        ConfigError { field: field.into(), value: value.to_string(), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}: {}", self.field, self.message)
        } else {
            write!(f, "{}: value {}: {}", self.field, self.value, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// Shorthand for results of scenario checks.
pub type CfgResult<T> = Result<T, ConfigError>;

/// A whole scenario.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Human-readable name, copied into the results.
    #[serde(default = "default_name")]
    pub name: String,
    /// Seed of the one random generator of the run.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time to run.
    pub duration: Duration,
    /// Network shape, link rates and delays.
    pub topology: TopologyConfig,
    /// Switch buffers, queues, ECN, PFC, schedulers.
    #[serde(default)]
    pub switch: SwitchConfig,
    /// Host NIC behaviour.
    #[serde(default)]
    pub host: HostConfig,
    /// Packet sizes.
    #[serde(default)]
    pub packets: PacketConfig,
    /// Default congestion control of every flow (workloads may override it).
    #[serde(default)]
    pub cc: CcConfig,
    /// What to measure, and when.
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// Traffic sources; at least one.
    #[serde(default)]
    pub workload: Vec<WorkloadConfig>,
    /// Learned CC: how flows whose CC is `agent` observe, are rewarded and act.
    #[serde(default)]
    pub agent: Option<AgentConfig>,
    /// Links that change: per link direction, a rate schedule or mahimahi
    /// trace, random loss and a policer (`[[link]]` tables).
    #[serde(default)]
    pub link: Vec<crate::net::link_config::LinkModelConfig>,
    /// Budgets the scenario must stay within (`[limits]`); raising one is the
    /// opt-in to a bigger run (see `crate::limits`).
    #[serde(default)]
    pub limits: crate::limits::LimitsConfig,
}

fn default_name() -> String {
    "scenario".into()
}
fn default_seed() -> u64 {
    1
}

/// Network shape. Which fields apply depends on `kind`; fields that do not
/// apply to the chosen kind are rejected.
#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TopologyConfig {
    /// `star` (one switch), `dumbbell`, `leaf_spine`, `fat_tree` or `custom`.
    pub kind: String,
    /// star: number of hosts on the switch.
    pub hosts: Option<u32>,
    /// Rate of host links (and of all links unless `fabric_rate` is given).
    pub link_rate: Option<Rate>,
    /// Propagation delay of every link unless overridden.
    pub link_delay: Option<Duration>,
    /// star: delay of the host -> switch direction (overrides `link_delay`).
    pub uplink_delay: Option<Duration>,
    /// star: delay of the switch -> host direction (overrides `link_delay`).
    pub downlink_delay: Option<Duration>,
    /// dumbbell: hosts on the left and right switch.
    pub left: Option<u32>,
    /// dumbbell: hosts on the right switch.
    pub right: Option<u32>,
    /// dumbbell: rate of the link between the two switches.
    pub bottleneck_rate: Option<Rate>,
    /// dumbbell: delay of the link between the two switches.
    pub bottleneck_delay: Option<Duration>,
    /// leaf_spine: number of leaf (top-of-rack) switches.
    pub leaves: Option<u32>,
    /// leaf_spine: number of spine switches.
    pub spines: Option<u32>,
    /// leaf_spine: hosts under each leaf.
    pub hosts_per_leaf: Option<u32>,
    /// leaf_spine / fat_tree: rate of switch-to-switch links.
    pub fabric_rate: Option<Rate>,
    /// leaf_spine / fat_tree: delay of switch-to-switch links.
    pub fabric_delay: Option<Duration>,
    /// fat_tree: the arity k (even); k^3/4 hosts.
    pub k: Option<u32>,
    /// custom: the nodes.
    pub nodes: Option<Vec<NodeConfig>>,
    /// custom: the links (full duplex).
    pub links: Option<Vec<LinkConfig>>,
    /// dumbbell: the delay of each host's access link (both directions), in
    /// host order; hosts past the end of the list keep `link_delay`. Flows of
    /// different RTTs on one bottleneck (RTT fairness).
    pub host_delays: Option<Vec<Duration>>,
}

/// A node of a custom topology.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Unique name, used by links and flows.
    pub name: String,
    /// `host` or `switch`.
    pub kind: String,
}

/// A full-duplex link of a custom topology.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Name of one end.
    pub a: String,
    /// Name of the other end.
    pub b: String,
    /// Rate in both directions (default: `topology.link_rate`).
    pub rate: Option<Rate>,
    /// Propagation delay in both directions (default: `topology.link_delay`).
    pub delay: Option<Duration>,
}

/// Switch configuration, the same for every switch.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwitchConfig {
    /// Shared packet buffer of a switch.
    pub buffer: Bytes,
    /// Hard cap on the bytes of one queue (lossy classes).
    pub queue_cap: Bytes,
    /// Dynamic-threshold factor for lossy queues: a queue may hold at most
    /// `dt_alpha` x free shared buffer. 0 disables the dynamic threshold.
    pub dt_alpha: f64,
    /// Queues per port; queue 0 carries control packets at strict priority.
    pub queues: u8,
    /// Scheduler among the data queues 1..: `strict`, `rr`, `wrr` or `drr`.
    pub scheduler: String,
    /// Weights of data queues 1.. (packets per round for wrr, quanta of
    /// `quantum` bytes for drr).
    pub weights: Vec<u32>,
    /// DRR quantum per unit of weight.
    pub quantum: Bytes,
    /// ECN marking on data queues.
    pub ecn: EcnConfig,
    /// Priority flow control.
    pub pfc: PfcConfig,
    /// Put ACK/NACK into the control queue (otherwise they use the data class).
    pub ack_high_priority: bool,
    /// Per-packet INT header bytes added to data packets of flows that ask for INT.
    pub int_header: u32,
    /// Fixed forwarding latency of a switch.
    pub latency: Duration,
    /// Queue discipline of every switch port: `fifo` (queues per class under
    /// `scheduler`), `priority` (strict priority by the packet's priority) or
    /// `rank` (one pFabric queue by packet rank, evicting the least urgent).
    pub discipline: String,
    /// Data priorities of a `priority` port, 1 to 8.
    pub priorities: u8,
    /// Buffer model of every switch: `shared` (one pool, dynamic thresholds,
    /// PFC) or `static` (a fixed budget per egress queue).
    pub buffer_model: String,
    /// Bytes per data queue of a static buffer, and the capacity of a rank
    /// port; 0 splits `buffer` evenly over the switch's data queues.
    pub port_buffer: Bytes,
    /// How a switch picks among equal-cost next hops: `flow` (ECMP by flow
    /// hash: a flow keeps one path) or `packet` (packet spraying: every
    /// packet hashed with its sequence number, as pFabric and pHost run).
    pub load_balancing: String,
    /// Packet trimming (NDP): a data packet that a FIFO or priority queue
    /// refuses is cut to its header (`packets.header` bytes) and forwarded
    /// in the control queue, so its receiver learns of the loss at once.
    /// When a data queue is full, a fair coin decides whether the arriving
    /// packet or the last one queued is cut (the arrival then takes its
    /// place), as htsim's NDP switches do. Rank ports never trim.
    pub trim: bool,
    /// Trimming switches: bytes of cut headers a port's control queue may
    /// hold; a header arriving beyond it is dropped (ACKs, pulls and other
    /// control packets are never dropped). 0: twice `port_buffer` (htsim's
    /// rule), or twice `buffer` when `port_buffer` is 0.
    pub trim_header_queue: Bytes,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            buffer: Bytes(32 * 1024 * 1024),
            queue_cap: Bytes(10 * 1024 * 1024),
            dt_alpha: 0.0,
            queues: 2,
            scheduler: "strict".into(),
            weights: vec![],
            quantum: Bytes(1500),
            ecn: EcnConfig::default(),
            pfc: PfcConfig::default(),
            ack_high_priority: true,
            int_header: 42,
            latency: Duration(0),
            discipline: "fifo".into(),
            priorities: 8,
            buffer_model: "shared".into(),
            port_buffer: Bytes(0),
            load_balancing: "flow".into(),
            trim: false,
            trim_header_queue: Bytes(0),
        }
    }
}

/// RED-style ECN marking: probability 0 at `kmin`, rising linearly to `pmax`
/// at `kmax`, 1 above `kmax`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EcnConfig {
    /// Whether switches mark at all.
    pub enabled: bool,
    /// Queue length where marking starts.
    pub kmin: Bytes,
    /// Queue length where marking reaches `pmax`.
    pub kmax: Bytes,
    /// Marking probability at `kmax`.
    pub pmax: f64,
    /// `dequeue` (reference RDMA simulators) or `enqueue` (DCTCP paper).
    pub at: String,
    /// A step threshold per data queue 1.. (`kmin = kmax = K`, probability
    /// `pmax` at K and 1 above), overriding `kmin` / `kmax` for that queue;
    /// empty: every data queue uses `kmin` / `kmax`.
    pub queue_k: Vec<Bytes>,
    /// Link rate at which `kmin`, `kmax` and `queue_k` hold as written; with
    /// it, each port's thresholds are scaled by its own rate over this one
    /// (the HPCC authors' rule: thresholds proportional to the port's rate).
    /// None: every port uses the thresholds as written.
    pub reference_rate: Option<Rate>,
}

impl Default for EcnConfig {
    fn default() -> Self {
        EcnConfig {
            enabled: true,
            kmin: Bytes(150 * 1024),
            kmax: Bytes(1500 * 1024),
            pmax: 1.0,
            at: "dequeue".into(),
            queue_k: vec![],
            reference_rate: None,
        }
    }
}

/// Priority flow control (IEEE 802.1Qbb), HPCC-ns3 style dynamic thresholds.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PfcConfig {
    /// Lossless fabric: pause upstream instead of dropping.
    pub enabled: bool,
    /// XOFF threshold factor: pause when an ingress queue's shared bytes
    /// reach `alpha` x free shared buffer.
    pub alpha: f64,
    /// Headroom per ingress port; 0 means computed from the link
    /// (2 x rate x delay + 2 MTU + 1 us of rate).
    pub headroom: Bytes,
    /// Bytes reserved for each (ingress port, class), outside the shared pool.
    pub reserve: Bytes,
    /// Hysteresis: resume when shared bytes + this are below the threshold.
    pub resume_offset: Bytes,
}

impl Default for PfcConfig {
    fn default() -> Self {
        PfcConfig { enabled: false, alpha: 0.125, headroom: Bytes(0), reserve: Bytes(4096), resume_offset: Bytes(3072) }
    }
}

/// Host NIC configuration, the same for every host.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// Largest burst a flow may send when the NIC's round robin picks it.
    pub burst: Bytes,
    /// Send one ACK per `ack_every` data packets (1 = per packet); an ACK is
    /// also sent for the last packet of a message.
    pub ack_every: u32,
    /// Minimum time between two CNPs of one flow; 0 disables CNPs.
    pub cnp_interval: Duration,
    /// Minimum time between two NACKs for the same expected sequence.
    pub nack_interval: Duration,
    /// Retransmission timeout (go back to the first unacknowledged byte). For
    /// TCP-style flows it is the initial timeout, before RTT samples exist.
    pub rto: Duration,
    /// TCP-style flows: lower bound of the adaptive timeout (srtt + 4 rttvar).
    pub rto_min: Duration,
    /// Loss recovery: `go_back_n` (RDMA: the receiver drops out-of-order
    /// packets and NACKs), `tcp` (the receiver keeps them and sends duplicate
    /// ACKs; fast retransmit after 3, NewReno recovery, adaptive timeout) or
    /// `auto` (what the flow's CC algorithm is designed for). `credit` picks
    /// the minimal receiver-driven test transport (go-back-N recovery, data
    /// only against the receiver's grants); `pfabric` pFabric's (the
    /// receiver keeps out-of-order data and acknowledges every packet, only a
    /// fixed timeout `rto` repairs losses); `phost` pHost's (tokens paced
    /// by the receiver name each packet; `phost_*` below); `homa` Homa's
    /// (unscheduled first RTT, grants, RESEND; `homa_*` below); `hopass`
    /// HOPASS's fast layer; `ndp` NDP's (an initial window, then one packet
    /// per pull; cut headers are NACKed and resent; `ndp_*` below); `eqds`
    /// EQDS's (a speculative window, then pulls for the demand the sender
    /// declares; `eqds_*` and `ndp_pull_rate` below).
    pub loss_recovery: String,
    /// Cap on unacknowledged bytes per flow (0 = no cap).
    pub max_outstanding: Bytes,
    /// Lowest rate a CC may set, as a fraction of the NIC line rate.
    pub min_rate_fraction: f64,
    /// Latency jitter of the NIC's uplink, as a fraction of each packet's
    /// serialization time: a packet reaches the switch up to that much later
    /// (uniform, seeded; packets never overtake each other). 0 = exact timing.
    ///
    /// Why: senders at line rate are perfectly periodic in a continuous-time
    /// model, so when their queue is full the slot a departure frees always goes
    /// to the sender whose phase comes first, and the other senders lose every
    /// packet (drop-tail lock-out). Real PHY/FEC latency varies by tens of
    /// nanoseconds, which shuffles the winners; a fraction of one packet time is
    /// enough to do the same here.
    pub tx_jitter: f64,
    /// Order in which a NIC serves its flows that may send: `round_robin`
    /// (with bursts) or `srpt` (smallest remaining bytes first; ties in the
    /// order the flows became ready).
    pub scheduler: String,
    /// Credit transport: the data priority (0 most urgent, to 7) the
    /// receivers grant; `None`: each flow's class priority (`class - 1`).
    pub grant_priority: Option<u8>,
    /// pFabric flows: timeouts in a row after which the sender stops
    /// resending data and sends one header-size probe per timeout until one
    /// is answered (probe mode; 5 in the paper).
    pub pfabric_probe_after: u32,
    /// pHost: free tokens a flow grants itself at its start, in packets
    /// (`capability_initial`; 8, one BDP at 10 Gb/s and about 10 us).
    pub phost_free_tokens: u32,
    /// pHost: which flows get free tokens. `false` (the paper): every flow,
    /// for its first `phost_free_tokens` packets; `true` (YAPS): only flows
    /// of at most `phost_free_tokens` packets (all their packets), larger
    /// flows wait for tokens.
    pub phost_free_short_only: bool,
    /// pHost: a token's lifetime at the sender, in packet times
    /// (`capability_timeout`, 1.5); a free token lives `phost_free_tokens`
    /// packet times longer.
    pub phost_token_ttl: f64,
    /// pHost: once a flow has had a token per packet, the receiver waits
    /// this many packet times before it asks again for what is missing
    /// (`capability_resend_timeout`, 9).
    pub phost_resend_timeout: f64,
    /// pHost: tokens a flow may have outstanding (sent and not yet seen in
    /// its data) before the receiver skips it (`capability_window`, 8).
    pub phost_window: u32,
    /// pHost: packet times after its last token after which a skipped flow's
    /// outstanding tokens are forgotten and it is served again
    /// (`capability_window_timeout`, 25).
    pub phost_window_timeout: f64,
    /// pHost: flows of at most this many packets send their data at
    /// priority 0, larger ones at 1 (with `phost_third_level`).
    pub phost_prio_threshold: u32,
    /// pHost: three priority levels (control, short-flow data, long-flow
    /// data; YAPS `capability_third_level`); `false`: two (all data at 0).
    pub phost_third_level: bool,
    /// Homa: bytes sent unscheduled at a message's start and kept
    /// outstanding per granted message (`rttBytes`); `None`: the largest
    /// base RTT of a Homa flow's path times its line rate.
    pub homa_rtt_bytes: Option<Bytes>,
    /// Homa: overcommitment `k`, messages (one per sender) a receiver
    /// grants to at once (`numSendersToKeepGranted`); it also sets the
    /// scheduled levels `P_s = k`. `None`: `P_s` from the workload's share
    /// of scheduled bytes, and `k = P_s`.
    pub homa_overcommit: Option<u32>,
    /// Homa: the unscheduled priority cutoffs (message bytes remaining,
    /// ascending; `n` cutoffs make `n + 1` unscheduled levels). `None`:
    /// computed from the first Poisson workload's CDF.
    pub homa_unsched_cutoffs: Option<Vec<Bytes>>,
    /// Homa: the receiver's RESEND timeout (no data for an incomplete
    /// message that has bytes outstanding). `None`: 1 ms (10 base RTTs if
    /// longer): milliseconds as in Homa's implementations, since granted
    /// packets of a low-ranked message may wait at a switch for as long as
    /// the better-ranked messages take.
    pub homa_resend_timeout: Option<Duration>,
    /// Homa: `boostTailBytesPrio` (the simulator's setting): once less than
    /// `rtt_bytes` are left to grant, a grant may use the more urgent
    /// unscheduled level of the message's remaining bytes.
    pub homa_boost_tail: bool,
    /// HOPASS: flows of at most this many bytes are small (served smallest
    /// remaining first); larger ones are large (ordered by OPT / (wait +
    /// theta) and paced by their class's token rate).
    pub hopass_small_threshold: Bytes,
    /// HOPASS: theta of the large-flow score OPT / (t_wait + theta).
    pub hopass_theta: Duration,
    /// HOPASS: tokens in a row to small flows in the receiver's WRR between
    /// its small and large queues.
    pub hopass_wrr_small: u32,
    /// HOPASS: tokens in a row to large flows in that WRR.
    pub hopass_wrr_large: u32,
    /// HOPASS: the receiver's token budget as a fraction of its downlink
    /// (headroom), and each class's largest token rate.
    pub hopass_headroom: f64,
    /// HOPASS: class weights, one per data class 1..queues-1 (default all
    /// 1); normalised so that the smallest is 1 for the back-off.
    pub hopass_weights: Vec<f64>,
    /// HOPASS: EWMA gain of the marked fraction alpha.
    pub hopass_g: f64,
    /// HOPASS: additive increase of a class's token rate per window without
    /// marks, as a fraction of the downlink (the same for every class).
    pub hopass_increase: f64,
    /// HOPASS: pioneer packets a flow sends at its start without tokens;
    /// `None`: one BDP of its path (rounded up to whole packets).
    pub hopass_pioneers: Option<u32>,
    /// HOPASS: tokens a flow may have outstanding (issued, not seen in its
    /// data) before the receiver skips it.
    pub hopass_window: u32,
    /// HOPASS: packet times (at the downlink) the receiver waits after a
    /// flow's last token, or after a skipped flow's last token, before it
    /// asks again for what is missing.
    pub hopass_resend_timeout: f64,
    /// pHost: the receiver's token clock counts the downlink time of the
    /// pHost control packets (tokens, RTSs) that arrive at its host, so that
    /// tokens and control together stay within the downlink's rate; `false`:
    /// one token per full-packet time whatever else the downlink carries
    /// (YAPS), which lets a standing queue grow at a host that both sends
    /// and receives.
    pub phost_count_control: bool,
    /// pHost: how long the receiver holds its tokens when the RTS of a flow
    /// with free packets arrives (the free packets are about to occupy its
    /// downlink). `"adaptive"`: their time, less the part of the last base
    /// RTT in which it sent no token (an idle receiver does not hold), holds
    /// of flows arriving together overlapping; `"yaps"`: YAPS's rule, the
    /// free packets' time in token slots from every RTS, each RTS restarting
    /// the count (one with no free packets cancels it).
    pub phost_hold: String,
    /// NDP: packets a flow sends at its start before any pull (its initial
    /// window); `None`: one BDP of its path (line rate x base RTT), rounded
    /// up to whole packets. 1 to 1000.
    pub ndp_iw: Option<u32>,
    /// NDP: the receiver's pull pacer releases one pull per full-packet
    /// time at this fraction of its downlink (htsim: 0.99).
    pub ndp_pull_rate: f64,
    /// NDP: the order of the receiver's pulls across its flows:
    /// `round_robin` (htsim's fair pull queue) or `srpt` (the flow with the
    /// fewest bytes not yet received first; NDP's receivers may prioritise
    /// pulls as they see fit).
    pub ndp_pull_order: String,
    /// EQDS: packets a flow may send speculatively at its start, before it
    /// hears from its receiver, and the most pulls its data asks for beyond
    /// those it holds (`maxwnd`); `None`: one BDP of its path (line rate x
    /// base RTT), rounded up to whole packets. 1 to 1000.
    pub eqds_window: Option<u32>,
    /// EQDS: when no flow wants a pull, the receiver's pacer gives an
    /// unrequested ("slow") pull to a flow whose demand it has met and whose
    /// data has not all arrived, up to `eqds_window` pulls beyond the flow's
    /// pull target (htsim's idle senders). `false`: pulls only on demand.
    pub eqds_slow_pulls: bool,
    /// TCP flows: selective acknowledgements (RFC 2018) and SACK-based loss
    /// recovery (RFC 6675): the receiver reports up to 3 out-of-order
    /// ranges per ACK and the sender repairs every hole of a window in about
    /// one round trip, sending while its pipe is below the window (see
    /// `crate::sack`). `false`: cumulative ACKs and NewReno recovery. Other
    /// transports ignore it.
    pub sack: bool,
    /// TCP flows without SACK: which partial ACKs of a NewReno recovery
    /// restart the retransmission timer. `"every_partial_ack"` (the default):
    /// each one, so a window with many losses is repaired one hole per round
    /// trip however long that takes. `"first_partial_ack"`: only the first,
    /// as RFC 6582 (section 3.2, step 5) and ns-3's TCP do, so with more
    /// holes left than fit in a timeout the timer fires and the sender goes
    /// back to its first hole.
    pub newreno_timer: String,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            burst: Bytes(4096),
            ack_every: 1,
            cnp_interval: Duration(4 * crate::units::US),
            nack_interval: Duration(500 * crate::units::US),
            rto: Duration(50 * crate::units::MS),
            rto_min: Duration(crate::units::MS),
            loss_recovery: "auto".into(),
            max_outstanding: Bytes(640 * 1024),
            min_rate_fraction: 64.0 / 1_048_576.0,
            tx_jitter: 0.0,
            scheduler: "round_robin".into(),
            grant_priority: None,
            pfabric_probe_after: 5,
            phost_free_tokens: 8,
            phost_free_short_only: false,
            phost_token_ttl: 1.5,
            phost_resend_timeout: 9.0,
            phost_window: 8,
            phost_window_timeout: 25.0,
            phost_prio_threshold: 8,
            phost_third_level: true,
            homa_rtt_bytes: None,
            homa_overcommit: None,
            homa_unsched_cutoffs: None,
            homa_resend_timeout: None,
            homa_boost_tail: true,
            hopass_small_threshold: Bytes(100_000),
            hopass_theta: Duration(100 * crate::units::US),
            hopass_wrr_small: 2,
            hopass_wrr_large: 1,
            hopass_headroom: 0.95,
            hopass_weights: vec![],
            hopass_g: 1.0 / 16.0,
            hopass_increase: 0.005,
            hopass_pioneers: None,
            hopass_window: 100,
            hopass_resend_timeout: 25.0,
            phost_count_control: true,
            phost_hold: "adaptive".into(),
            ndp_iw: None,
            ndp_pull_rate: 0.99,
            ndp_pull_order: "round_robin".into(),
            eqds_window: None,
            eqds_slow_pulls: true,
            sack: false,
            newreno_timer: "every_partial_ack".into(),
        }
    }
}

/// Packet sizes on the wire.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PacketConfig {
    /// Payload bytes of a full data packet.
    pub payload: u32,
    /// Header bytes of a data packet.
    pub header: u32,
    /// Size of an ACK.
    pub ack: u32,
    /// Size of a NACK.
    pub nack: u32,
    /// Size of a CNP.
    pub cnp: u32,
    /// Size of an RTT probe and its reply.
    pub probe: u32,
    /// Size of a PFC pause frame.
    pub pfc: u32,
    /// Size of a request-to-send (receiver-driven transports).
    pub rts: u32,
    /// Size of a grant (receiver-driven transports).
    pub grant: u32,
}

impl Default for PacketConfig {
    fn default() -> Self {
        PacketConfig { payload: 1024, header: 48, ack: 64, nack: 64, cnp: 64, probe: 128, pfc: 64, rts: 64, grant: 64 }
    }
}

/// Congestion control of a flow: the algorithm's name and its parameters.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct CcConfig {
    /// Algorithm name (see `ccgym list cc`).
    #[serde(default = "default_cc")]
    pub algorithm: String,
    /// Algorithm parameters; each algorithm checks its own.
    #[serde(flatten)]
    pub params: BTreeMap<String, serde_json::Value>,
}

fn default_cc() -> String {
    "line_rate".into()
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig { algorithm: default_cc(), params: BTreeMap::new() }
    }
}

/// The scenario's `[agent]` table.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// When a flow asks for a decision: `probe` (RTT-probe reply), `acks` or `interval`.
    pub trigger: String,
    /// `acks` trigger: ACKs per decision.
    pub every_acks: u32,
    /// `interval` trigger: monitor-interval length.
    pub interval: Duration,
    /// Feature names, in observation order (see [`crate::cc::agent::FEATURES`]).
    pub features: Vec<String>,
    /// Feature rows per observation (oldest first).
    pub history: u32,
    /// Reward name (see [`crate::cc::agent::REWARDS`]).
    pub reward: String,
    /// Action mapping: `multiplier`, `aurora`, `discrete` or `rate`.
    pub action: String,
    /// `multiplier`: m = 1 + inc x a for a >= 0.
    pub multiplier_inc: f64,
    /// `multiplier`: m = 1 / (1 - dec x a) for a < 0.
    pub multiplier_dec: f64,
    /// `aurora`: rate x (1 + alpha a) or / (1 - alpha a).
    pub aurora_alpha: f64,
    /// `discrete`: the multipliers an action index selects.
    pub discrete: Vec<f64>,
    /// Time between a decision request and its action taking effect (default
    /// 1 us; 0 = blocking: the network waits for the policy).
    pub policy_delay: Duration,
    /// `external` (actions come from Python) or the path of a native policy file.
    pub policy: String,
    /// Native policy arithmetic: `float32` or `int8`.
    pub precision: String,
    /// How a native discrete policy turns its scores into an action: `greedy` (the best
    /// score, the default) or `sample` (drawn from their softmax, as the policy acted in
    /// training; seeded from the scenario seed).
    pub policy_sampling: String,
    /// RTT normaliser (RTT inflation = RTT / rtt_norm); 0 = the flow's base RTT.
    pub rtt_norm: Duration,
    /// ADPG signal: RTT-inflation offset beta.
    pub adpg_beta: f64,
    /// ADPG signal: target of max(R - beta, 0) x sqrt(rate).
    pub adpg_target: f64,
    /// ADPG signal: scale s.
    pub adpg_scale: f64,
    /// Delay weight of the `throughput_delay` and `log_utility` rewards.
    pub reward_beta: f64,
    /// Factor applied to every reward.
    pub reward_scale: f64,
    /// Constant added to a host agent's reward before `reward_scale`: centres a reward whose
    /// level is far from zero (a log utility sits near -10), so a learner's value baseline
    /// starts near its targets instead of spending its first updates on the level.
    pub reward_offset: f64,
    /// Rate an agent flow starts at, as a fraction of line rate.
    pub initial_rate: f64,
    /// Rate a flow restarts at after a retransmission timeout, as a fraction of
    /// line rate (0 = the NIC's rate floor; 1 = keep the rate the agent had set).
    /// Rate actions only: a window policy's flow keeps its rate.
    pub timeout_rate: f64,
    /// `interval` trigger: a tick at which the flow has neither sent a packet
    /// nor heard an ACK or NACK since its last decision is skipped (its monitor
    /// interval goes on), at most this many ticks in a row; 0 = decide at
    /// every tick.
    pub hold_ticks: u32,
    /// `probe` trigger: a probe whose reply has not come back after this long
    /// is requested again (0 = never).
    pub probe_timeout: Duration,
    /// `interval` trigger: an idle flow (between messages) sends a standalone
    /// RTT probe every `hold_ticks + 1` ticks and decides on its reply; false =
    /// an idle flow makes no decisions and keeps its rate.
    pub idle_probe: bool,
    /// RTT of an ACK-measured interval: `mean` of its samples or the `last` one.
    pub rtt_estimate: String,
    /// `window` action: the unit of the action, `bytes` or `packets` (of the flow's MTU).
    pub window_unit: String,
    /// `per_ack` action: the per-ACK window increments an action index selects
    /// (QTCP): a number of bytes (may be negative) or `"reno"` (+MSS x MSS / cwnd).
    pub per_ack: Vec<PerAckStep>,
    /// `window` and `per_ack` actions: the smallest window (0 = one MTU).
    pub min_window: Bytes,
    /// `window` and `per_ack` actions: the window a flow starts with (0 = its BDP).
    pub initial_window: Bytes,
    /// Gain of the EWMA features (`send_gap_ewma`, `ack_gap_ewma`), in (0, 1].
    pub ewma_gain: f64,
    /// Switch-queue agents: switch egress ports by name (`"switch->peer"`, as
    /// in the result tables); each data queue of each port is one agent (ACC).
    pub queues: Vec<String>,
    /// Switch-queue agents: the sampling interval (one decision per interval).
    pub queue_interval: Duration,
    /// Switch-queue agents: intervals per observation (oldest first).
    pub queue_history: u32,
    /// Switch-queue agents: the ECN (RED) profiles an action index selects.
    pub ecn_profiles: Vec<EcnProfile>,
    /// `window` and `per_ack` actions: what a loss does to the window. `"none"`:
    /// nothing (the policy alone sets it); `"newreno"`: TCP NewReno's loss
    /// recovery underneath the policy (halve and fast recovery on the third
    /// duplicate ACK, one segment and slow start back to ssthresh after a
    /// timeout); the policy's rule applies to ACKs of new data outside it (QTCP).
    pub loss_response: String,
    /// `loss_response = "newreno"`: start in slow start (ssthresh unlimited until
    /// the first loss, as NewReno starts) instead of at `initial_window` under
    /// the policy's rule.
    pub slow_start: bool,
    /// `interval` trigger: when positive, the decision interval is this many of
    /// the flow's base RTT (a grid of its own) instead of `interval`.
    pub interval_rtts: f64,
    /// A named set of defaults for the keys the table does not give (`"mvfst"`:
    /// MVFST-RL's environment, see [`crate::cc::agent::PRESETS`]); `""` = none.
    /// Resolved when the scenario is parsed ([`parse_scenario`]).
    pub preset: String,
    /// `mvfst_history` feature: the last k actions of the flow (k = this; 0 allowed).
    pub action_history: u32,
    /// `mvfst` action: the smallest window, in packets of the flow's MTU.
    pub min_cwnd_packets: u32,
    /// `mvfst` action: the largest window, in packets of the flow's MTU.
    pub max_cwnd_packets: u32,
    /// `mvfst` reward: weight of the bytes lost in the window, per Mbit.
    pub reward_loss: f64,
    /// When the policy's answer lands relative to the sender: `"nonblocking"` (the
    /// sender keeps going) or `"blocking"` (the sender, or a queue agent's queue,
    /// sends nothing from the request until the action lands).
    pub timing: String,
    /// How long an action takes to land: `"fixed"` (`policy_delay`), `"measured"`
    /// (the policy's wall-clock time x `measured_scale`), `"uniform"` (in
    /// [`policy_delay_min`, `policy_delay`]), `"exponential"` (mean
    /// `policy_delay`) or `"samples"` (one of `policy_delay_samples`, uniformly).
    pub delay_mode: String,
    /// `delay_mode = "uniform"`: the shortest delay.
    pub policy_delay_min: Duration,
    /// `delay_mode = "samples"`: the delays to draw from (e.g. measured inference times).
    pub policy_delay_samples: Vec<Duration>,
    /// `delay_mode = "measured"`: factor on the measured wall-clock time.
    pub measured_scale: f64,
    /// Switch-queue agents: the reward, `"linear"` (`tx_rate - reward_beta x
    /// queue`) or `"quadratic"` (`tx_rate - queue_peak_weight x (peak /
    /// q_ref)^2 - queue_mean_weight x (mean / q_ref)^2`, over the interval).
    pub queue_reward: String,
    /// `quadratic` queue reward: the reference queue as a queueing delay; a
    /// port of rate C uses `q_ref = C x queue_ref` bytes.
    pub queue_ref: Duration,
    /// `quadratic` queue reward: weight of the interval's peak queue.
    pub queue_peak_weight: f64,
    /// `quadratic` queue reward: weight of the interval's time-weighted mean queue.
    pub queue_mean_weight: f64,
    /// Switch-queue agents: link rate at which `ecn_profiles` hold as written;
    /// with it, each agent's port uses them scaled by its rate over this one
    /// (as `switch.ecn.reference_rate`). None: absolute bytes at every port.
    pub ecn_reference_rate: Option<Rate>,
    /// Switch-queue agents: a native policy (the path of a `ccgym-mlp` file,
    /// a Q-network with one output per `ecn_profiles` entry) that every queue
    /// agent answers itself with (argmax, ties to the lowest index); empty:
    /// queue agents are answered through the stepping API.
    pub queue_policy: String,
    /// Switch-queue agents: whose reward each agent gets, `"port"` (its own
    /// queue's) or `"fabric"` (the mean over all queue agents of their own
    /// rewards at that tick: one team reward, so no agent gains by pushing
    /// its senders' queue onto another port).
    pub queue_reward_scope: String,
    /// Switch-queue agents with `queue_reward_scope = "mixed"`: the share of
    /// the fabric's mean reward in each agent's reward, in [0, 1] (the rest
    /// is its own queue's); unused by the other scopes.
    pub queue_reward_fabric_weight: f64,
}

/// An ECN marking profile a switch-queue agent can select (`agent.ecn_profiles`).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EcnProfile {
    /// No marking at or below this queue length.
    pub kmin: Bytes,
    /// Marking probability reaches `pmax` here; above it every packet is marked.
    pub kmax: Bytes,
    /// Marking probability at `kmax`.
    pub pmax: f64,
}

/// One entry of `agent.per_ack`: bytes added to the window per ACK, or a named rule.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum PerAckStep {
    /// A fixed number of bytes per ACK (negative shrinks the window).
    Bytes(f64),
    /// A named rule: `"reno"` adds MSS x MSS / cwnd per ACK (congestion avoidance).
    Named(String),
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            trigger: "probe".into(),
            every_acks: 16,
            interval: Duration(10 * US),
            features: vec!["action".into(), "adpg".into()],
            history: 2,
            reward: "adpg_signal".into(),
            action: "multiplier".into(),
            multiplier_inc: 0.2,
            multiplier_dec: 0.2,
            aurora_alpha: 0.025,
            discrete: vec![0.8, 0.95, 1.0, 1.05, 1.1, 1.2],
            policy_delay: Duration(US),
            policy: "external".into(),
            policy_sampling: "greedy".into(),
            precision: "float32".into(),
            rtt_norm: Duration(8192 * NS),
            adpg_beta: 1.5,
            adpg_target: 0.064,
            adpg_scale: 12.5,
            reward_beta: 1.0,
            reward_scale: 1.0,
            reward_offset: 0.0,
            initial_rate: 1.0,
            timeout_rate: 0.0,
            hold_ticks: 0,
            probe_timeout: Duration(MS),
            idle_probe: false,
            rtt_estimate: "mean".into(),
            window_unit: "bytes".into(),
            per_ack: vec![PerAckStep::Bytes(10.0), PerAckStep::Bytes(0.0), PerAckStep::Bytes(-1.0)],
            min_window: Bytes(0),
            initial_window: Bytes(0),
            ewma_gain: 0.125,
            queues: vec![],
            queue_interval: Duration(10 * US),
            queue_history: 3,
            ecn_profiles: vec![],
            loss_response: "none".into(),
            slow_start: false,
            interval_rtts: 0.0,
            preset: String::new(),
            action_history: 20,
            min_cwnd_packets: 2,
            max_cwnd_packets: 2000,
            reward_loss: 0.0,
            timing: "nonblocking".into(),
            delay_mode: "fixed".into(),
            policy_delay_min: Duration(0),
            policy_delay_samples: vec![],
            measured_scale: 1.0,
            queue_reward: "linear".into(),
            queue_ref: Duration(10 * US),
            queue_peak_weight: 0.5,
            queue_mean_weight: 0.5,
            ecn_reference_rate: None,
            queue_policy: String::new(),
            queue_reward_scope: "port".into(),
            queue_reward_fabric_weight: 0.5,
        }
    }
}

/// What to measure and when.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Collection window [start, end]; default: the whole run. Either bound
    /// may be relative to the run ("25%", "end").
    pub window: Option<[RunTime; 2]>,
    /// Period of the sampled time series (queue length, rates).
    pub sample_interval: Duration,
    /// Record per-flow throughput series: true, false or "auto" (on up to 1024 flows).
    pub flow_series: serde_json::Value,
    /// Add the breakdown blocks to the summary (`by_size`, `by_class`,
    /// `losses`): FCT slowdown by flow-size bucket, large-flow goodput,
    /// throughput per traffic class, drops and rank-queue evictions. Off by
    /// default so that summaries of existing scenarios keep their keys; set
    /// `size_buckets` and it is on too.
    pub breakdown: bool,
    /// Upper edges of the flow-size buckets of `by_size` (bytes, increasing);
    /// a flow of `size` bytes is in the first bucket whose edge is >= `size`,
    /// and flows above the last edge are the large flows. Default
    /// [`DEFAULT_SIZE_BUCKETS`].
    pub size_buckets: Option<Vec<Bytes>>,
    /// Record the one-way delay (send to arrival at the receiver) of every
    /// data packet that arrives inside the window, and report its mean and
    /// percentiles in the summary (`flows.one_way_delay_ms`): Pantheon's delay
    /// metric. Off by default so that summaries keep their keys.
    pub one_way_delay: bool,
    /// Record the ECN profile in force on every switch data queue over time
    /// (its changes, and where each queue starts): true, false or "auto" (on
    /// when the scenario has switch-queue agents).
    pub ecn_series: serde_json::Value,
}

/// Default upper edges of the flow-size buckets (bytes): up to 10 KB,
/// 10-100 KB, 100 KB-1 MB and (the large flows) above 1 MB.
pub const DEFAULT_SIZE_BUCKETS: [u64; 3] = [10_000, 100_000, 1_000_000];

impl MetricsConfig {
    /// Whether the summary gets the breakdown blocks.
    pub fn breakdown_on(&self) -> bool {
        self.breakdown || self.size_buckets.is_some()
    }

    /// The bucket edges in force (bytes, as configured or the default).
    pub fn size_bucket_edges(&self) -> Vec<u64> {
        match &self.size_buckets {
            Some(v) => v.iter().map(|b| b.0).collect(),
            None => DEFAULT_SIZE_BUCKETS.to_vec(),
        }
    }
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            window: None,
            sample_interval: Duration(100 * crate::units::US),
            flow_series: serde_json::Value::String("auto".into()),
            breakdown: false,
            size_buckets: None,
            one_way_delay: false,
            ecn_series: serde_json::Value::String("auto".into()),
        }
    }
}

/// A traffic source. Which fields apply depends on `kind`.
#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    /// `long`, `flows`, `messages`, `poisson` or `incast`.
    pub kind: String,
    /// long: `many_to_one` or `all_to_all`.
    pub pattern: Option<String>,
    /// long/incast/messages: the receiving host.
    pub receiver: Option<HostRef>,
    /// long/incast/messages: sending hosts (default: all but the receiver).
    pub senders: Option<Vec<HostRef>>,
    /// long/messages: flows (queue pairs) per sending host.
    pub flows_per_host: Option<u32>,
    /// Start time, or [a, b] for a uniform random start per flow.
    pub start: Option<StartTime>,
    /// Time the sources stop offering new data (may be relative to the run).
    pub stop: Option<RunTime>,
    /// long: bytes per flow (default: unlimited).
    pub size: Option<Bytes>,
    /// Traffic class (switch queue index, >= 1).
    pub class: Option<u8>,
    /// Congestion control of these flows (default: the scenario's `[cc]`).
    pub cc: Option<CcConfig>,
    /// flows: explicit flows.
    pub flows: Option<Vec<FlowConfig>>,
    /// messages/incast: number of messages or bursts.
    pub count: Option<u32>,
    /// messages/incast: time between messages or bursts.
    pub period: Option<Duration>,
    /// poisson: offered load as a fraction of host link rate.
    pub load: Option<f64>,
    /// poisson: flow-size CDF file (`size_bytes cumulative_probability` per line).
    pub cdf: Option<String>,
    /// poisson: `interpolate` (linear between points) or `step`.
    pub sampling: Option<String>,
    /// poisson: hosts taking part (default: all).
    pub hosts: Option<Vec<HostRef>>,
    /// poisson: cap on sampled flow sizes.
    pub max_size: Option<Bytes>,
    /// incast: number of senders drawn at random for each burst (instead of `senders`).
    pub fan_in: Option<u32>,
}

/// An explicit flow.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Sending host.
    pub src: HostRef,
    /// Receiving host.
    pub dst: HostRef,
    /// Bytes to send (default: unlimited until `stop`).
    pub size: Option<Bytes>,
    /// Start time (may be relative to the run).
    #[serde(default)]
    pub start: RunTime,
    /// Time the flow stops offering new data (may be relative to the run).
    pub stop: Option<RunTime>,
    /// Traffic class (switch queue, >= 1).
    pub class: Option<u8>,
    /// Congestion control of this flow.
    pub cc: Option<CcConfig>,
}

/// A host, by index (0-based) or by name (custom topologies).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum HostRef {
    /// Host index.
    Index(i64),
    /// Host name.
    Name(String),
}

impl fmt::Display for HostRef {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            HostRef::Index(i) => write!(f, "{i}"),
            HostRef::Name(n) => write!(f, "\"{n}\""),
        }
    }
}

/// A start time: fixed, or drawn uniformly per flow from [a, b]; either may
/// be relative to the run ("10%").
#[derive(Clone, Copy, Debug)]
pub enum StartTime {
    /// Every flow starts at this time.
    At(RunTime),
    /// Each flow starts at a uniform random time in this range.
    Uniform([RunTime; 2]),
}

// By hand rather than `#[serde(untagged)]`, whose only message is "data did not match any
// variant": a time that does not parse is named with what is wrong with it.
impl<'de> Deserialize<'de> for StartTime {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, IntoDeserializer, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StartTime;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a time (\"1ms\", \"10%\") or a range [a, b] to draw each flow's start from")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StartTime, E> {
                RunTime::deserialize(v.into_deserializer()).map(StartTime::At)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<StartTime, E> {
                RunTime::deserialize(v.into_deserializer()).map(StartTime::At)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<StartTime, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<StartTime, E> {
                self.visit_f64(v as f64)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StartTime, A::Error> {
                let two = "a range of two times, [a, b]";
                let a = seq.next_element::<RunTime>()?.ok_or_else(|| de::Error::invalid_length(0, &two))?;
                let b = seq.next_element::<RunTime>()?.ok_or_else(|| de::Error::invalid_length(1, &two))?;
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(3, &two));
                }
                Ok(StartTime::Uniform([a, b]))
            }
        }
        d.deserialize_any(V)
    }
}

/// Parses a scenario from JSON text, naming the field of the first error.
///
/// An `[agent]` table with a `preset` gets the preset's keys where it gives
/// none (`crate::cc::agent::PRESETS`) before it is read.
pub fn parse_scenario(json: &str) -> CfgResult<Scenario> {
    if json.contains("\"preset\"") {
        if let Some(text) = expand_agent_preset(json)? {
            return parse_scenario_text(&text);
        }
    }
    parse_scenario_text(json)
}

/// The scenario text with its agent preset expanded, or `None` when it has none.
fn expand_agent_preset(json: &str) -> CfgResult<Option<String>> {
    let Ok(mut v) = serde_json::from_str::<serde_json::Value>(json) else { return Ok(None) };
    let Some(agent) = v.get_mut("agent").and_then(|a| a.as_object_mut()) else { return Ok(None) };
    let Some(name) = agent.get("preset") else { return Ok(None) };
    let Some(name) = name.as_str().map(str::to_string) else {
        return Err(ConfigError::new("agent.preset", name.to_string(), "must be a preset name (a string)"));
    };
    if name.is_empty() {
        return Ok(None);
    }
    let Some(table) = crate::cc::agent::preset_table(&name) else {
        let known = crate::cc::agent::PRESETS.iter().map(|(n, _)| format!("\"{n}\"")).collect::<Vec<_>>();
        return Err(ConfigError::new(
            "agent.preset",
            format!("\"{name}\""),
            format!("unknown preset; known: {}", known.join(", ")),
        ));
    };
    for (k, val) in table {
        agent.entry(k).or_insert(val);
    }
    Ok(Some(v.to_string()))
}

fn parse_scenario_text(json: &str) -> CfgResult<Scenario> {
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let mut msg = inner.to_string();
        // serde_json appends " at line L column C"; positions in machine-made
        // JSON mean nothing to the user who wrote TOML.
        if let Some(i) = msg.find(" at line ") {
            msg.truncate(i);
        }
        let msg = explain_number(&msg, number_at(json, inner.line(), inner.column()));
        let msg = suggest_field(&msg).unwrap_or(msg);
        let path = if path == "." { "scenario".to_string() } else { path };
        ConfigError::new(path, "", msg)
    })
}

/// serde's "unknown field `x`, expected one of `a`, `b`, ..." with a close
/// known name in front ("did you mean `a`?") and without the list, which for
/// a table such as `host` runs to dozens of names; `None` when no known name
/// is close.
fn suggest_field(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let known = rest.strip_prefix(", expected one of ").or_else(|| rest.strip_prefix(", expected "))?;
    let best = known
        .split(", ")
        .map(|k| k.trim_matches('`'))
        .map(|k| (strsim::normalized_damerau_levenshtein(field, k), k))
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    (best.0 >= 0.7).then(|| format!("unknown field `{field}`: did you mean `{}`?", best.1))
}

/// The number token (or `NaN` / `Infinity`) of `json` that an error at
/// `line`, `column` (1-based, serde_json's) points into: serde_json points at
/// the offending character of a syntax error and at the last character of a
/// number its visitor rejected.
fn number_at(json: &str, line: usize, column: usize) -> Option<&str> {
    let start_of_line = json.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum::<usize>();
    let at = (start_of_line + column).checked_sub(1)?;
    let bytes = json.as_bytes();
    let part = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.');
    if !bytes.get(at).is_some_and(part) {
        return None;
    }
    let from = (0..=at).rev().take_while(|&i| part(&bytes[i])).last()?;
    let to = (at..bytes.len()).take_while(|&i| part(&bytes[i])).last()? + 1;
    Some(&json[from..to])
}

/// Rewrites serde's message about a number in the user's terms: NaN and
/// infinities (which JSON has no syntax for, so serde_json says only
/// "expected value") are named as such, and an integer too large for a
/// 64-bit number, which serde_json reads as floating point, is echoed as the
/// integer the user wrote; integer types are given as their ranges.
fn explain_number(msg: &str, token: Option<&str>) -> String {
    let Some(token) = token else { return msg.to_string() };
    if matches!(token, "NaN" | "Infinity" | "-Infinity" | "+Infinity") {
        let what = if token == "NaN" { "is not a number" } else { "is infinite" };
        return format!("value {token}: {what}; give a finite number");
    }
    let integer = token.strip_prefix('-').unwrap_or(token);
    let mut out = msg.to_string();
    if !integer.is_empty() && integer.bytes().all(|b| b.is_ascii_digit()) {
        if let Some(rest) = out.strip_prefix("invalid type: floating point `") {
            // `1e+20` for 100000000000000000000: echo the integer.
            if let Some(i) = rest.find('`') {
                out = format!("invalid value: integer `{token}`{}", &rest[i + 1..]);
            }
        } else if let Some(rest) = out.strip_prefix("value ") {
            // A unit's own message formats the float it was handed.
            if let Some(i) = rest.find(": ") {
                out = format!("value {token}{}", &rest[i..]);
            }
        }
    }
    for (ty, range) in [
        ("u8", "0 to 255"),
        ("u16", "0 to 65535"),
        ("u32", "0 to 4294967295"),
        ("u64", "0 to 18446744073709551615"),
        ("usize", "0 to 18446744073709551615"),
        ("i32", "-2147483648 to 2147483647"),
        ("i64", "-9223372036854775808 to 9223372036854775807"),
    ] {
        if let Some(head) = out.strip_suffix(&format!(", expected {ty}")) {
            return format!("{head}, expected an integer from {range}");
        }
    }
    out
}
