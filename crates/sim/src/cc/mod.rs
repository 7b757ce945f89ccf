//! Congestion control: the interface between the NIC and a CC algorithm.
//!
//! A CC algorithm sees a flow through events — ACK, NACK, CNP, RTT-probe
//! reply, INT (carried by ACKs), its own timer, a retransmission timeout and
//! each transmission — and acts by setting the flow's rate and/or window,
//! arming its timer and asking for RTT probes. The NIC enforces what it sets:
//! a per-flow pacer at `rate` and at most `window` unacknowledged bytes.
//!
//! Algorithms are variants of one enum, [`Cc`], so that dispatch on the hot
//! path is a `match` rather than a virtual call. Each lives in its own file
//! and implements [`CongestionControl`].

/// Defines a CC that controls nothing itself: it sends at line rate and
/// leaves the pace to its transport (the receiver-driven designs, whose
/// receivers grant, token or pull the senders' packets). Arguments: the type,
/// its `cc.algorithm` name, its one-line summary, its [`Transport`] variant
/// and the `host.*` fields that configure the transport.
macro_rules! line_rate_transport {
    ($(#[$attr:meta])* $ty:ident, $name:literal, $summary:expr, $transport:ident, $host:literal) => {
        $(#[$attr])*
        #[derive(Clone, Debug, Default)]
        pub struct $ty;

        impl $ty {
            /// Name, summary and parameters.
            pub fn info() -> $crate::cc::CcInfo {
                $crate::cc::CcInfo { name: $name, summary: $summary, params: &[] }
            }

            #[doc = concat!("Builds it (its parameters are the transport's, `", $host, "`).")]
            pub fn from_params(
                _p: &$crate::cc::Params,
            ) -> Result<Self, $crate::config::ConfigError> {
                Ok($ty)
            }
        }

        impl $crate::cc::CongestionControl for $ty {
            fn on_start(&mut self, ctx: &mut $crate::cc::CcCtx) {
                let line = ctx.flow.line_rate;
                ctx.set_rate(line);
            }

            fn transport(&self) -> $crate::cc::Transport {
                $crate::cc::Transport::$transport
            }
        }
    };
}

pub mod agent;
mod bbr;
mod copa;
mod cubic;
mod dcqcn;
mod dctcp;
mod eqds;
mod estimators;
mod fixed_rate;
mod homa;
mod hopass;
mod hpcc;
mod line_rate;
mod ndp;
mod newreno;
mod pfabric;
mod phost;
mod swift;
mod timely;

pub use agent::AgentCc;
pub use bbr::{Bbr, BbrMode};
pub use copa::Copa;
pub use cubic::Cubic;
pub use dcqcn::Dcqcn;
pub use dctcp::Dctcp;
pub use eqds::Eqds;
pub use estimators::{DupAckPipe, Extremum, Windowed};
pub use fixed_rate::FixedRate;
pub use homa::Homa;
pub use hopass::{large_flow_score, normalised_weights, ClassRate, Hopass, RateLaw};
pub use hpcc::Hpcc;
pub use line_rate::LineRate;
pub use ndp::Ndp;
pub use newreno::NewReno;
pub use pfabric::PFabric;
pub use phost::PHost;
pub use swift::Swift;
pub use timely::Timely;

use crate::config::{CcConfig, ConfigError};
use crate::packet::IntHop;
use crate::units::Time;
use agent::AgentSpec;
use std::sync::Arc;

/// What a flow looks like to its CC: fixed facts about the path and the
/// control variables the CC may change.
#[derive(Clone, Debug)]
pub struct FlowCtl {
    /// Sending rate in bit/s (the NIC pacer's rate).
    pub rate: f64,
    /// Window: most unacknowledged bytes allowed (`u64::MAX` = none).
    pub window: u64,
    /// NIC line rate in bit/s.
    pub line_rate: f64,
    /// Lowest rate the NIC accepts.
    pub min_rate: f64,
    /// Base RTT of the flow's path (no queueing), in ps.
    pub base_rtt: Time,
    /// Bandwidth-delay product of the path at line rate, in bytes.
    pub bdp: u64,
    /// Payload bytes of a full data packet.
    pub mtu: u32,
    /// Switches on the path.
    pub hops: u32,
    /// Next byte to send.
    pub snd_nxt: u64,
    /// First unacknowledged byte.
    pub snd_una: u64,
    /// Bytes the flow will send in all (`u64::MAX` = unlimited).
    pub size: u64,
    /// Bytes the application has handed the flow so far (`u64::MAX` = unlimited).
    pub app_limit: u64,
    /// Pending CC timer deadline, if any (set through [`CcCtx::set_timer`]).
    pub timer: Option<Time>,
    /// The CC asked for an RTT probe on the next transmission.
    pub probe_requested: bool,
    /// Data packets must collect INT records.
    pub want_int: bool,
    /// HPCC-PINT: bytes of the PINT field each data packet carries (0: the
    /// flow asks for no PINT feedback).
    pub pint_bytes: u8,
    /// An agent flow has a decision request ready for its policy (see [`agent`]).
    pub decision_due: bool,
    /// The sender may not transmit (an agent with blocking timing waits for
    /// its policy's action).
    pub paused: bool,
    /// SACK flows (`host.sack`): RFC 6675's pipe, the bytes the sender
    /// estimates are in the network (sent and not acknowledged, less the
    /// SACKed and lost ones, plus retransmissions); the NIC lets the flow
    /// send while it is below `window`. `None` without SACK (the bytes in
    /// flight are then `snd_nxt - snd_una`).
    pub sack_pipe: Option<u64>,
}

impl FlowCtl {
    /// Application-limited with nothing in flight: every byte the application
    /// has handed over is acknowledged (a message flow between messages).
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.snd_una >= self.app_limit
    }

    /// A flow at line rate with no window and nothing sent yet, on a one-switch
    /// path with the given base RTT (for unit tests and tools).
    pub fn at_line_rate(line_rate: f64, min_rate: f64, base_rtt: Time, mtu: u32) -> FlowCtl {
        FlowCtl {
            rate: line_rate,
            window: u64::MAX,
            line_rate,
            min_rate,
            base_rtt,
            bdp: (line_rate / 8.0 * base_rtt as f64 / crate::units::SEC as f64) as u64,
            mtu,
            hops: 1,
            snd_nxt: 0,
            snd_una: 0,
            size: u64::MAX,
            app_limit: u64::MAX,
            timer: None,
            probe_requested: false,
            want_int: false,
            pint_bytes: 0,
            decision_due: false,
            paused: false,
            sack_pipe: None,
        }
    }
}

/// A `[cc]` table for `algorithm` with the parameters of a JSON object (tests).
#[cfg(test)]
pub(crate) fn test_config(algorithm: &str, params: serde_json::Value) -> CcConfig {
    let mut cfg = CcConfig { algorithm: algorithm.into(), ..CcConfig::default() };
    for (k, v) in params.as_object().expect("a JSON object of parameters") {
        cfg.params.insert(k.clone(), v.clone());
    }
    cfg
}

/// The handle a CC algorithm gets with every event.
pub struct CcCtx<'a> {
    /// Current simulated time.
    pub now: Time,
    /// The flow's control state.
    pub flow: &'a mut FlowCtl,
}

impl CcCtx<'_> {
    /// Sets the pacing rate, clamped to [min rate, line rate].
    #[inline]
    pub fn set_rate(&mut self, bps: f64) {
        self.flow.rate = bps.clamp(self.flow.min_rate, self.flow.line_rate);
    }
    /// Current pacing rate in bit/s.
    #[inline]
    pub fn rate(&self) -> f64 {
        self.flow.rate
    }
    /// Sets the window in bytes (at least one byte, so a flow can always probe).
    #[inline]
    pub fn set_window(&mut self, bytes: u64) {
        self.flow.window = bytes.max(1);
    }
    /// Removes the window limit.
    pub fn clear_window(&mut self) {
        self.flow.window = u64::MAX;
    }
    /// Arms (or re-arms) the flow's single CC timer at `at`; an algorithm with
    /// several timers arms the earliest and dispatches in `on_timer`.
    #[inline]
    pub fn set_timer(&mut self, at: Time) {
        self.flow.timer = Some(at.max(self.now));
    }
    /// Disarms the CC timer.
    pub fn cancel_timer(&mut self) {
        self.flow.timer = None;
    }
    /// Asks for an RTT probe: it rides on the flow's next data packet (or goes
    /// alone if the flow has nothing to send), and its reply raises `on_probe`.
    pub fn request_probe(&mut self) {
        self.flow.probe_requested = true;
    }
    /// Asks switches to append INT records to this flow's data packets.
    pub fn request_int(&mut self) {
        self.flow.want_int = true;
    }
    /// Asks switches for HPCC-PINT feedback on this flow's data packets, in a
    /// field of `bytes` bytes (1 or 2) that every data packet carries.
    pub fn request_pint(&mut self, bytes: u8) {
        self.flow.pint_bytes = bytes;
    }
}

/// How a flow recovers lost packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// RDMA style: the receiver drops out-of-order packets and sends a NACK;
    /// the sender goes back to the expected byte.
    GoBackN,
    /// TCP style: the receiver keeps out-of-order data and sends duplicate
    /// ACKs; the sender retransmits after three (NewReno fast recovery) and
    /// times out adaptively (srtt + 4 rttvar, backed off exponentially).
    Tcp,
    /// A minimal receiver-driven transport, for tests and teaching (not pHost
    /// or Homa): the sender announces its data with a request-to-send, the
    /// receiver's grant scheduler grants one packet per token, and data goes
    /// only against grants. Loss recovery as go-back-N.
    Credit,
    /// pFabric: the receiver keeps out-of-order data and acknowledges every
    /// packet cumulatively, telling the sender how many bytes it holds beyond
    /// (which lowers the rank of the flow's next packets); duplicate ACKs mean
    /// nothing; a fixed timeout goes back to the first unacknowledged byte,
    /// and after `host.pfabric_probe_after` timeouts in a row the sender only
    /// sends header-size probes, one per timeout, until one is answered.
    PFabric,
    /// pHost: the sender announces its flow with a request-to-send and
    /// sends its first packets on free tokens; the receiver paces one token
    /// per packet time over its flows, smallest remaining first, each token
    /// naming the next packet it still misses (so lost packets are asked for
    /// again); the sender spends unexpired tokens, smallest remaining flow
    /// first. The receiver acknowledges once, when all data has arrived.
    PHost,
    /// Homa: a message's first `RTTbytes` go at once, unscheduled, at
    /// priorities from the workload's size cutoffs; the rest as the
    /// receiver grants it, one packet per arriving packet for its `k` best
    /// messages (overcommitment), at the priority of their rank; the
    /// receiver asks for missing data with RESEND after a timeout, and a
    /// sender serving shorter messages answers BUSY. The receiver
    /// acknowledges once, when all data has arrived.
    Homa,
    /// HOPASS's fast layer: the sender announces its flow with a
    /// request-to-send and sends one BDP of pioneer packets at once; the
    /// receiver paces tokens per traffic class (a rate per class with an
    /// ECN-weighted back-off), small flows smallest remaining first and
    /// large flows by OPT / (wait + theta), alternating between the two by
    /// WRR; each token names a packet still missing. The receiver
    /// acknowledges once, when all data has arrived (`sim/hopass.rs`).
    Hopass,
    /// NDP: the sender sends its initial window at once and then one packet
    /// per pull; the receiver acknowledges every packet, NACKs every header a
    /// trimming switch cut, and pulls once per arrival, paced at its downlink
    /// rate, round robin over its flows; the sender resends NACKed packets
    /// before new data, and after a timeout everything unacknowledged
    /// (`sim/ndp.rs`).
    Ndp,
    /// EQDS: NDP's switches and sender, but the receiver pulls by demand:
    /// the sender sends up to a window speculatively until its first
    /// feedback, and its data declares how many pulls it still wants (its
    /// pull target); the receiver's pacer serves flows with NACKed packets
    /// first, then flows whose target is above the pulls they have had
    /// (`sim/eqds.rs`).
    Eqds,
}

impl Transport {
    /// Whether the receiving host's grant scheduler (`RecvWake`) serves this
    /// transport's flows: one host's scheduler serves one transport.
    pub fn uses_receiver_scheduler(self) -> bool {
        matches!(
            self,
            Transport::Credit
                | Transport::PHost
                | Transport::Homa
                | Transport::Hopass
                | Transport::Ndp
                | Transport::Eqds
        )
    }

    /// The transport's name as `host.loss_recovery` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Transport::GoBackN => "go_back_n",
            Transport::Tcp => "tcp",
            Transport::Credit => "credit",
            Transport::PFabric => "pfabric",
            Transport::PHost => "phost",
            Transport::Homa => "homa",
            Transport::Hopass => "hopass",
            Transport::Ndp => "ndp",
            Transport::Eqds => "eqds",
        }
    }
}

/// An acknowledgement as the sender sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckEvent<'a> {
    /// Cumulative bytes acknowledged.
    pub ack_seq: u64,
    /// Bytes newly acknowledged by this ACK (0 for a duplicate).
    pub newly_acked: u64,
    /// TCP flows: consecutive duplicate ACKs so far, this one included (0 if
    /// this ACK advanced).
    pub dup_acks: u32,
    /// TCP flows: the flow is in fast recovery after this ACK.
    pub in_recovery: bool,
    /// TCP flows: this ACK acknowledged everything outstanding at the loss,
    /// ending fast recovery.
    pub recovery_ended: bool,
    /// The acknowledged packet was CE-marked (DCTCP ECE).
    pub ecn_echo: bool,
    /// Round-trip time of the acknowledged packet (from its echoed send time).
    pub rtt: Time,
    /// Switches the data packet crossed.
    pub hops: u32,
    /// INT records of the data packet's path, first hop first.
    pub int: &'a [IntHop],
    /// HPCC-PINT: the largest encoded utilisation the data packet's switch
    /// ports wrote (0 when none did; see [`crate::net::pint`]).
    pub pint: u16,
    /// SACK flows: bytes this ACK newly delivered, SACKed or cumulatively
    /// acknowledged and not SACKed before (0 without SACK).
    pub delivered: u64,
    /// SACK flows: the end of the highest range this ACK newly SACKed (the
    /// most recently sent segment it reports delivered), or 0.
    pub sack_high: u64,
}

/// Statistics delivered with an RTT-probe reply, over the monitor interval
/// since the previous reply.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProbeEvent {
    /// RTT of the probe.
    pub rtt: Time,
    /// Bytes sent (wire bytes of data packets) in the interval.
    pub bytes_sent: u64,
    /// Data packets sent in the interval.
    pub packets_sent: u64,
    /// NACKs received in the interval.
    pub nacks: u32,
    /// CNPs received in the interval.
    pub cnps: u32,
    /// Rate at the time of the reply, bit/s.
    pub rate: f64,
    /// Width of the monitor interval.
    pub interval: Time,
}

/// The interface every CC algorithm implements. Default methods do nothing,
/// so an algorithm implements only the events it reacts to.
pub trait CongestionControl {
    /// The flow starts: set the initial rate/window, arm timers.
    fn on_start(&mut self, _ctx: &mut CcCtx) {}
    /// A data packet of `bytes` wire bytes was transmitted.
    fn on_send(&mut self, _ctx: &mut CcCtx, _bytes: u32) {}
    /// An ACK arrived.
    fn on_ack(&mut self, _ctx: &mut CcCtx, _ack: &AckEvent) {}
    /// A NACK arrived; the NIC has already gone back to `expected`. `rtt` is
    /// measured from the data packet whose arrival revealed the gap (the NACK
    /// echoes its timestamp), so it has crossed the same queues as an ACK's.
    fn on_nack(&mut self, _ctx: &mut CcCtx, _expected: u64, _rtt: Time) {}
    /// A CNP arrived.
    fn on_cnp(&mut self, _ctx: &mut CcCtx) {}
    /// An RTT-probe reply arrived.
    fn on_probe(&mut self, _ctx: &mut CcCtx, _probe: &ProbeEvent) {}
    /// The CC timer fired.
    fn on_timer(&mut self, _ctx: &mut CcCtx) {}
    /// The retransmission timer expired; the NIC goes back to the first
    /// unacknowledged byte.
    fn on_timeout(&mut self, _ctx: &mut CcCtx) {}
    /// TCP flows: three duplicate ACKs signalled a loss; the NIC retransmits
    /// the first unacknowledged segment and enters fast recovery. Called after
    /// `on_ack` for the third duplicate.
    fn on_fast_retransmit(&mut self, _ctx: &mut CcCtx) {}
    /// The loss recovery the algorithm is designed for (used when the
    /// scenario's `host.loss_recovery` is `auto`).
    fn transport(&self) -> Transport {
        Transport::GoBackN
    }
}

/// Description of an algorithm parameter, for `ccgym list cc` and checks.
#[derive(Clone, Debug)]
pub struct ParamInfo {
    /// Parameter name as written in a scenario.
    pub name: &'static str,
    /// Default value, as text.
    pub default: &'static str,
    /// What it means.
    pub help: &'static str,
}

/// Description of an algorithm.
#[derive(Clone, Debug)]
pub struct CcInfo {
    /// Name used in scenarios.
    pub name: &'static str,
    /// One line on what it is.
    pub summary: &'static str,
    /// Its parameters.
    pub params: &'static [ParamInfo],
}

/// All CC algorithms the core knows.
pub fn catalogue() -> Vec<CcInfo> {
    vec![
        Dcqcn::info(),
        Hpcc::info(),
        Swift::info(),
        Timely::info(),
        Dctcp::info(),
        NewReno::info(),
        Cubic::info(),
        PFabric::info(),
        PHost::info(),
        Homa::info(),
        Hopass::info(),
        Ndp::info(),
        Eqds::info(),
        LineRate::info(),
        FixedRate::info(),
        Copa::info(),
        Bbr::info(),
        CcInfo {
            name: "agent",
            summary: "learned CC: a policy (Python or a native policy file) sets the rate; configured by [agent]",
            params: &[],
        },
    ]
}

/// The CC state of one flow.
#[derive(Clone, Debug)]
pub enum Cc {
    /// Always line rate, no window.
    LineRate(LineRate),
    /// A constant rate.
    FixedRate(FixedRate),
    /// A learned policy through the agent bridge.
    Agent(Box<AgentCc>),
    /// DCQCN.
    Dcqcn(Dcqcn),
    /// HPCC.
    Hpcc(Hpcc),
    /// Swift.
    Swift(Swift),
    /// TIMELY.
    Timely(Timely),
    /// DCTCP.
    Dctcp(Dctcp),
    /// TCP NewReno.
    NewReno(NewReno),
    /// TCP CUBIC.
    Cubic(Cubic),
    /// pFabric's end-host window (with rank switch ports).
    PFabric(PFabric),
    /// pHost's end hosts (tokens from the receiver, no CC).
    PHost(PHost),
    /// Homa's end hosts (unscheduled first RTT, then grants; no CC).
    Homa(Homa),
    /// HOPASS's fast-layer end hosts (tokens per class from the receiver, no CC).
    Hopass(Hopass),
    /// NDP's end hosts (initial window, then pulls from the receiver; no CC).
    Ndp(Ndp),
    /// EQDS's end hosts (speculative window, then demand-driven pulls; no CC).
    Eqds(Eqds),
    /// Copa (boxed: its RTT filters would widen every flow's CC state).
    Copa(Box<Copa>),
    /// BBR v1 (boxed, as Copa).
    Bbr(Box<Bbr>),
}

/// Reads parameters of one algorithm from a [`CcConfig`], rejecting unknown names.
pub struct Params<'a> {
    cfg: &'a CcConfig,
    field: &'a str,
    known: &'static [ParamInfo],
}

impl<'a> Params<'a> {
    /// Wraps `cfg`; `field` is its path in the scenario for error messages.
    pub fn new(cfg: &'a CcConfig, field: &'a str, known: &'static [ParamInfo]) -> Result<Self, ConfigError> {
        for key in cfg.params.keys() {
            if !known.iter().any(|p| p.name == key) {
                let names: Vec<_> = known.iter().map(|p| p.name).collect();
                let known = if !names.is_empty() {
                    names.join(", ")
                } else if matches!(cfg.algorithm.as_str(), "phost" | "homa" | "hopass" | "ndp" | "eqds") {
                    // The receiver-driven transports are set up per host, not
                    // per flow: point to where their settings are.
                    format!("none; its settings are host fields, `host.{}_*` (docs/scenarios.md)", cfg.algorithm)
                } else {
                    "none".into()
                };
                return Err(ConfigError::new(
                    format!("{field}.{key}"),
                    "",
                    format!("unknown parameter of `{}`; known: {known}", cfg.algorithm),
                ));
            }
        }
        Ok(Params { cfg, field, known })
    }

    fn raw(&self, name: &str) -> Option<&serde_json::Value> {
        debug_assert!(self.known.iter().any(|p| p.name == name));
        self.cfg.params.get(name)
    }

    /// A plain number parameter.
    pub fn f64(&self, name: &str, default: f64) -> Result<f64, ConfigError> {
        match self.raw(name) {
            None => Ok(default),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .ok_or_else(|| ConfigError::new(format!("{}.{name}", self.field), v, "expected a number")),
        }
    }

    /// A rate parameter (number in bit/s or string with unit).
    pub fn rate(&self, name: &str, default: f64) -> Result<f64, ConfigError> {
        match self.raw(name) {
            None => Ok(default),
            Some(v) => serde_json::from_value::<crate::units::Rate>(v.clone())
                .map(|r| r.0 as f64)
                .map_err(|e| self.unit_error(name, e)),
        }
    }

    /// A time parameter (number in seconds or string with unit).
    pub fn time(&self, name: &str, default: Time) -> Result<Time, ConfigError> {
        match self.raw(name) {
            None => Ok(default),
            Some(v) => serde_json::from_value::<crate::units::Duration>(v.clone())
                .map(|d| d.0)
                .map_err(|e| self.unit_error(name, e)),
        }
    }

    /// A size parameter (number in bytes or string with unit).
    pub fn bytes(&self, name: &str, default: u64) -> Result<u64, ConfigError> {
        match self.raw(name) {
            None => Ok(default),
            Some(v) => serde_json::from_value::<crate::units::Bytes>(v.clone())
                .map(|d| d.0)
                .map_err(|e| self.unit_error(name, e)),
        }
    }

    /// A text parameter (a preset name, or `"auto"`); `None` when absent, an
    /// error when present but not a string.
    pub fn text(&self, name: &str) -> Result<Option<&'a str>, ConfigError> {
        debug_assert!(self.known.iter().any(|p| p.name == name));
        match self.cfg.params.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| ConfigError::new(format!("{}.{name}", self.field), v, "expected a string")),
        }
    }

    /// Error for parameter `name` that a unit parser refused with `e`. Its
    /// message names the value already (`value "0bps": ...`, or `invalid
    /// type: boolean ...` for a value of the wrong type), as for the
    /// scenario's own fields, so the error adds only the field.
    fn unit_error(&self, name: &str, e: serde_json::Error) -> ConfigError {
        ConfigError::new(format!("{}.{name}", self.field), "", e.to_string())
    }

    /// Error for parameter `name` holding a bad value.
    pub fn bad(&self, name: &str, msg: &str) -> ConfigError {
        let v = self.cfg.params.get(name).map(|v| v.to_string()).unwrap_or_default();
        ConfigError::new(format!("{}.{name}", self.field), v, msg)
    }
}

/// What building a flow's CC may need beyond its own `[cc]` table: the
/// scenario-wide settings an algorithm shares with every flow that uses it.
#[derive(Clone, Copy, Debug, Default)]
pub struct CcBuild<'a> {
    /// The scenario's checked `[agent]` table, if it has one (the `agent`
    /// algorithm is configured there rather than in `[cc]`).
    pub agent: Option<&'a Arc<AgentSpec>>,
}

impl Cc {
    /// Builds the CC of a flow from its configuration; `field` names the
    /// configuration in errors, `build` carries scenario-wide settings.
    pub fn from_config(cfg: &CcConfig, field: &str, build: &CcBuild) -> Result<Cc, ConfigError> {
        macro_rules! build {
            ($variant:ident, $ty:ident) => {
                Ok(Cc::$variant($ty::from_params(&Params::new(cfg, field, $ty::info().params)?)?))
            };
        }
        match cfg.algorithm.as_str() {
            "line_rate" => build!(LineRate, LineRate),
            "fixed_rate" => build!(FixedRate, FixedRate),
            "dcqcn" => build!(Dcqcn, Dcqcn),
            "hpcc" => build!(Hpcc, Hpcc),
            "swift" => build!(Swift, Swift),
            "timely" => build!(Timely, Timely),
            "dctcp" => build!(Dctcp, Dctcp),
            "newreno" => build!(NewReno, NewReno),
            "cubic" => build!(Cubic, Cubic),
            "pfabric" => build!(PFabric, PFabric),
            "phost" => build!(PHost, PHost),
            "homa" => build!(Homa, Homa),
            "hopass" => build!(Hopass, Hopass),
            "ndp" => build!(Ndp, Ndp),
            "eqds" => build!(Eqds, Eqds),
            "copa" => Ok(Cc::Copa(Box::new(Copa::from_params(&Params::new(cfg, field, Copa::info().params)?)?))),
            "bbr" => Ok(Cc::Bbr(Box::new(Bbr::from_params(&Params::new(cfg, field, Bbr::info().params)?)?))),
            "agent" => {
                let Some(spec) = build.agent else {
                    return Err(ConfigError::new(
                        format!("{field}.algorithm"),
                        "\"agent\"",
                        "agent flows need an [agent] table in the scenario",
                    ));
                };
                if let Some(k) = cfg.params.keys().next() {
                    return Err(ConfigError::new(
                        format!("{field}.{k}"),
                        "",
                        "the agent CC takes no parameters here; configure it in [agent]",
                    ));
                }
                Ok(Cc::Agent(Box::new(AgentCc::new(spec.clone()))))
            }
            other => {
                let names: Vec<_> = catalogue().iter().map(|c| c.name).collect();
                Err(ConfigError::new(
                    format!("{field}.algorithm"),
                    format!("\"{other}\""),
                    format!("unknown congestion control; known: {}", names.join(", ")),
                ))
            }
        }
    }

    /// Name of the algorithm.
    pub fn name(&self) -> &'static str {
        match self {
            Cc::LineRate(_) => "line_rate",
            Cc::FixedRate(_) => "fixed_rate",
            Cc::Agent(_) => "agent",
            Cc::Dcqcn(_) => "dcqcn",
            Cc::Hpcc(_) => "hpcc",
            Cc::Swift(_) => "swift",
            Cc::Timely(_) => "timely",
            Cc::Dctcp(_) => "dctcp",
            Cc::NewReno(_) => "newreno",
            Cc::Cubic(_) => "cubic",
            Cc::PFabric(_) => "pfabric",
            Cc::PHost(_) => "phost",
            Cc::Homa(_) => "homa",
            Cc::Hopass(_) => "hopass",
            Cc::Ndp(_) => "ndp",
            Cc::Eqds(_) => "eqds",
            Cc::Copa(_) => "copa",
            Cc::Bbr(_) => "bbr",
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $cc:ident => $call:expr) => {
        match $self {
            Cc::LineRate($cc) => $call,
            Cc::FixedRate($cc) => $call,
            Cc::Agent($cc) => $call,
            Cc::Dcqcn($cc) => $call,
            Cc::Hpcc($cc) => $call,
            Cc::Swift($cc) => $call,
            Cc::Timely($cc) => $call,
            Cc::Dctcp($cc) => $call,
            Cc::NewReno($cc) => $call,
            Cc::Cubic($cc) => $call,
            Cc::PFabric($cc) => $call,
            Cc::PHost($cc) => $call,
            Cc::Homa($cc) => $call,
            Cc::Hopass($cc) => $call,
            Cc::Ndp($cc) => $call,
            Cc::Eqds($cc) => $call,
            Cc::Copa($cc) => $call,
            Cc::Bbr($cc) => $call,
        }
    };
}

impl CongestionControl for Cc {
    #[inline]
    fn on_start(&mut self, ctx: &mut CcCtx) {
        dispatch!(self, c => c.on_start(ctx))
    }
    #[inline]
    fn on_send(&mut self, ctx: &mut CcCtx, bytes: u32) {
        dispatch!(self, c => c.on_send(ctx, bytes))
    }
    #[inline]
    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        dispatch!(self, c => c.on_ack(ctx, ack))
    }
    #[inline]
    fn on_nack(&mut self, ctx: &mut CcCtx, expected: u64, rtt: Time) {
        dispatch!(self, c => c.on_nack(ctx, expected, rtt))
    }
    #[inline]
    fn on_cnp(&mut self, ctx: &mut CcCtx) {
        dispatch!(self, c => c.on_cnp(ctx))
    }
    #[inline]
    fn on_probe(&mut self, ctx: &mut CcCtx, probe: &ProbeEvent) {
        dispatch!(self, c => c.on_probe(ctx, probe))
    }
    #[inline]
    fn on_timer(&mut self, ctx: &mut CcCtx) {
        dispatch!(self, c => c.on_timer(ctx))
    }
    #[inline]
    fn on_timeout(&mut self, ctx: &mut CcCtx) {
        dispatch!(self, c => c.on_timeout(ctx))
    }
    #[inline]
    fn on_fast_retransmit(&mut self, ctx: &mut CcCtx) {
        dispatch!(self, c => c.on_fast_retransmit(ctx))
    }
    fn transport(&self) -> Transport {
        dispatch!(self, c => c.transport())
    }
}

/// A 64-bit mixer (SplitMix64's finaliser): a CC's random draw as a function of what it knows
/// (the time, a sequence number), so that runs stay reproducible without per-flow generator
/// state (BBR's first ProbeBW phase, HPCC-PINT's ACK sampling).
pub(crate) fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
