//! # ccgym-sim
//!
//! A packet-level simulator of datacenter networks for congestion-control
//! research: the core of ccgym, with no Python inside.
//!
//! Layers, bottom up:
//! * [`units`] and [`engine`]: integer-picosecond time and the event queue;
//! * [`packet`]: packets in a pool, referred to by index;
//! * [`net`]: ports (queues, schedulers, ECN, wire) and switch memory (buffer, PFC);
//! * [`flow`]: a flow's state, split into path, sender, receiver, TCP
//!   recovery, monitor interval and statistics; [`host`]: the NIC scheduler's
//!   per-host state;
//! * [`cc`]: the congestion-control interface and algorithms, the learned
//!   (agent) CC among them; [`policy`]: native evaluation of exported policies;
//! * [`config`], [`topology`] and [`workload`]: what a scenario describes and builds;
//! * [`sim`]: the simulation, one module per network concept (links, switch
//!   datapath, NIC scheduler, receiver, transports, CC glue, agent bridge,
//!   metrics, run-time control); [`metrics`] and [`report`]: results.
//!
//! ```
//! let json = r#"{"duration": "1ms", "topology": {"kind": "star", "hosts": 3},
//!               "workload": [{"kind": "long", "receiver": 0}]}"#;
//! let mut sim = ccgym_sim::Simulation::from_json(json, std::path::Path::new(".")).unwrap();
//! sim.run_until(u64::MAX);
//! let summary = sim.summary();
//! assert!(summary["bottleneck"]["utilization"].as_f64().unwrap() > 0.9);
//! ```

pub mod cc;
pub mod config;
pub mod engine;
pub mod flow;
pub mod homa;
pub mod host;
pub mod limits;
pub mod metrics;
pub mod net;
pub mod packet;
pub mod policy;
pub mod report;
pub mod sack;
pub mod sim;
pub mod topology;
pub mod units;
pub mod workload;

pub use config::{ConfigError, Scenario};
pub use report::{Column, Table};
pub use sim::Simulation;
