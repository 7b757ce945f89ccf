//! Network elements: ports (queues, schedulers, ECN, wire) and switch memory
//! (shared buffer, dynamic thresholds, PFC).

pub mod buffer;
pub mod link_config;
pub mod link_model;
pub mod pint;
pub mod port;
pub mod rank_queue;
pub mod switch;
