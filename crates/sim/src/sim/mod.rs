//! The simulation: builds the network from a scenario and runs its events.
//!
//! `Simulation` is one struct whose behaviour is split by network concept,
//! one `impl Simulation` block per file (as smoltcp splits a socket by
//! protocol). This file holds the state, the run loop and the event dispatch;
//! each event goes to one entry point of one module:
//!
//! | file | concept | events it handles |
//! |---|---|---|
//! | `build.rs` | checking the scenario, building ports, switch memory and flows | |
//! | `link.rs` | serialisation, wires, PFC pause and resume, link models (schedules, traces, loss, policers) | `TxDone`, `Arrive`, `LinkRate` |
//! | `switch.rs` | the switch datapath: ECMP, admission, ECN, queues, INT | |
//! | `nic.rs` | the NIC transmit scheduler and the packets it builds | `NicWake` |
//! | `receiver.rs` | a host's arrivals; ACK, NACK, CNP and probe replies | |
//! | `transport.rs` | loss recovery: go-back-N, TCP NewReno, the timeout sweep | `RtoSweep` |
//! | `grants.rs` | receiver-driven transports: RTS, the grant scheduler, the credit gate | `RecvWake` |
//! | `homa.rs` | Homa: unscheduled bytes, grants to the best `k` messages, RESEND and BUSY | `RecvWake` (Homa hosts) |
//! | `hopass.rs` | HOPASS's fast layer: pioneers, small/large WRR, per-class token rates | (`RecvWake`, via `grants.rs`) |
//! | `cc_glue.rs` | running a CC callback and applying what it changed | `CcTimer` |
//! | `bridge.rs` | agent decisions: batches, delayed actions, native policies | `ApplyAction` |
//! | `app.rs` | the application: flow starts, messages, stops | `AppData` |
//! | `metrics.rs` | samples, the collection window | `Sample`, `WindowStart`, `WindowEnd` |
//! | `prefetch.rs` | cache hints: the state of the packet-hop events due next | |
//! | `control.rs` | run-time control of switches, port names | |
//!
//! A packet's life: a host NIC picks a flow and builds a data packet
//! (`nic::host_try_send`), the port serialises it onto the wire
//! (`link::transmit`), it arrives at the peer (`link::on_arrive`), a switch
//! routes, admits, marks and queues it (`switch::switch_receive`) and later
//! dequeues it (`switch::switch_try_send`, back to `link::transmit`), and the
//! destination host consumes it (`receiver::host_receive`), answering with
//! ACK/NACK/CNP/probe replies that travel back the same way to the sender's
//! transport (`transport::on_ack`) and CC (`cc_glue`).

/// The pHost token state of flow `f` (a `&mut Flow` or a place of one),
/// borrowing only that field, so the flow's other parts stay usable.
macro_rules! ph {
    ($f:expr) => {
        $f.ph.as_deref_mut().expect("a pHost flow has its token state")
    };
}

/// NDP's per-flow state of a flow known to be NDP's.
macro_rules! nd {
    ($f:expr) => {
        $f.nd.as_deref_mut().expect("an NDP flow has its state")
    };
}

mod app;
mod bridge;
mod build;
mod cc_glue;
mod control;
mod ecn_log;
mod eqds;
mod grants;
mod homa;
mod hopass;
mod link;
mod metrics;
mod ndp;
mod nic;
mod prefetch;
mod queue_agent;
mod receiver;
mod run_times;
mod switch;
mod transport;

pub use bridge::Batch;
use bridge::Bridge;
pub use control::{QueueId, QueueStats};
pub use ecn_log::EcnLog;
pub use metrics::{Conservation, Series};
pub use queue_agent::QUEUE_FEATURES;

use crate::config::Scenario;
use crate::engine::{Event, EventQueue};
use crate::flow::Flow;
use crate::host::Host;
use crate::net::buffer::BufferModel;
use crate::net::port::{Port, Red};
use crate::packet::PacketPool;
use crate::topology::Topology;
use crate::units::Time;
use app::AppAction;
use rand_xoshiro::Xoshiro256PlusPlus;

/// A running simulation.
///
/// Its state is private: the outside reads it through the accessors below,
/// changes it through the run-time control methods (`control.rs`) and the
/// agent bridge (`bridge.rs`), and advances it with [`Simulation::run_until`]
/// or [`Simulation::agent_step`].
pub struct Simulation {
    /// The scenario it runs.
    scenario: Scenario,
    /// The network graph.
    topo: Topology,
    /// All ports.
    ports: Vec<Port>,
    /// Host NICs.
    hosts: Vec<Host>,
    /// Switch buffers (shared or static model), indexed by switch.
    mmus: Vec<BufferModel>,
    /// Local index of each port within its node.
    port_local: Vec<u16>,
    /// All flows.
    flows: Vec<Flow>,
    /// ECMP hashes of each flow's forward and reverse direction, read at
    /// every switch with a choice of next hop: a dense table that stays in
    /// the cache, where each flow's `path` is a line of its own.
    ecmp_hashes: Vec<[u32; 2]>,
    /// Packet pool.
    pool: PacketPool,
    events: EventQueue,
    rng: Xoshiro256PlusPlus,
    /// HPCC-PINT's per-port utilisation estimates, when a flow uses it.
    pint: Option<Box<crate::net::pint::PintPorts>>,
    /// `host.tx_jitter` (read on every host transmission).
    tx_jitter: f64,
    /// `switch.load_balancing = "packet"` (read on every switch hop).
    spray: bool,
    /// `switch.trim` (read when a data queue refuses a packet).
    trim: bool,
    /// Bytes of cut headers a trimming port's control queue may hold.
    trim_header_limit: u64,
    now: Time,
    end: Time,
    window: (Time, Time),
    in_window: bool,
    app: Vec<(Time, u32, AppAction)>,
    app_next: usize,
    /// Events processed.
    event_count: u64,
    /// Packet transmissions over links.
    packet_hops: u64,
    /// Conservation counters.
    cons: Conservation,
    /// Sampled time series.
    series: Series,
    sample_interval: Time,
    max_outstanding: u64,
    burst: u64,
    ecn_red: Option<Red>,
    /// The agent bridge, when the scenario has an `[agent]` table.
    bridge: Option<Bridge>,
    /// HOPASS's receivers: class weights and per-(host, class) token rates
    /// (the rates only when a flow uses the HOPASS transport).
    hopass: hopass::HopassState,
    /// What the scenario was estimated to cost before it was built.
    estimate: crate::limits::Estimate,
    /// Homa's parameters and scheduler buffers (`Some` with Homa flows only).
    homa: Option<Box<homa::HomaState>>,
    /// The flows the timeout sweep visits (`transport.rs`).
    sweep: transport::SweepSet,
    /// One-way delays of data packets that arrived inside the window
    /// (`metrics.one_way_delay`; `None` when off).
    one_way_delay: Option<Box<crate::metrics::LogHist>>,
}

impl Simulation {
    /// Current simulated time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// End of the run.
    pub fn end(&self) -> Time {
        self.end
    }

    /// The scenario being run (checked, with defaults filled in).
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The network graph: nodes, ports and routes.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// All ports, indexed by global port id.
    pub fn ports(&self) -> &[Port] {
        &self.ports
    }

    /// Host NICs, indexed by host.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// All flows, indexed by flow id.
    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// Events processed so far.
    pub fn event_count(&self) -> u64 {
        self.event_count
    }

    /// Packet transmissions over links so far.
    pub fn packet_hops(&self) -> u64 {
        self.packet_hops
    }

    /// Network-wide data byte accounting (sent, delivered, dropped).
    pub fn conservation(&self) -> &Conservation {
        &self.cons
    }

    /// The sampled time series.
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// What the scenario was estimated to cost before it was built (`[limits]`).
    pub fn estimate(&self) -> &crate::limits::Estimate {
        &self.estimate
    }

    /// One-way delays (ps) of the data packets that arrived inside the window,
    /// when `metrics.one_way_delay` is on.
    pub fn one_way_delays(&self) -> Option<&crate::metrics::LogHist> {
        self.one_way_delay.as_deref()
    }

    /// Pending events (for diagnostics).
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    /// Runs every event up to and including time `t` (capped at the end of the
    /// run); returns true when the run is over.
    pub fn run_until(&mut self, t: Time) -> bool {
        // How far ahead the cache is asked for upcoming state depends on the
        // network's size (`prefetch.rs`).
        self.run_events(t, prefetch::Depth::for_ports(self.ports.len()))
    }

    /// [`Simulation::run_until`], prefetching `depth` ahead.
    fn run_events(&mut self, t: Time, depth: prefetch::Depth) -> bool {
        let t = t.min(self.end);
        while let Some((time, ev)) = self.events.pop_due(t) {
            match depth {
                prefetch::Depth::Off => {}
                prefetch::Depth::Near => self.prefetch_near(),
                prefetch::Depth::Deep => self.prefetch_deep(),
            }
            self.now = time;
            self.event_count += 1;
            self.dispatch(ev);
        }
        self.now = self.now.max(t);
        self.now >= self.end
    }

    /// Runs one event: each kind goes to the entry point of its module.
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::TxDone { port } => self.on_tx_done(port),
            Event::Arrive { port } => self.on_arrive(port),
            Event::NicWake { host } => self.on_nic_wake(host),
            Event::AppData => self.on_app_data(),
            Event::RtoSweep { .. } => self.rto_sweep(),
            Event::CcTimer { flow, generation } => self.on_cc_timer(flow, generation),
            Event::ApplyAction { flow, action } => self.on_apply_action(flow, action),
            Event::Sample => self.take_sample(),
            Event::WindowStart => self.window_start(),
            Event::WindowEnd => self.window_end(),
            Event::LinkRate { port } => self.on_link_rate(port),
            Event::QueueTick => self.on_queue_tick(),
            Event::QueueAction { agent, action } => self.on_queue_action(agent, action),
            Event::RecvWake { host } => self.on_recv_wake(host),
        }
    }
}
