//! NDP's end hosts (Handley et al., SIGCOMM 2017; spec `rule_based_cc.md`
//! section 7.4, facts from htsim's `ndp.cpp`): no congestion control at
//! all. An NDP sender puts its initial window on the wire at line rate and
//! then one packet per pull; the receiver pulls once for every packet or cut
//! header that reaches it, and paces its pulls at its downlink rate, so the
//! senders' total rate follows what the receiver's link carries
//! (`Transport::Ndp`, in the core `sim/ndp.rs`, configured by `host.ndp_*`).
//! Use it with trimming switches (`switch.trim = true`) with small data
//! queues (`switch.buffer_model = "static"`, about eight packets per port)
//! and packet spraying (`switch.load_balancing = "packet"`).

line_rate_transport!(
    /// State of an NDP sender (none: the initial window and pulls decide).
    Ndp,
    "ndp",
    "NDP end hosts: initial window, then one packet per receiver pull; NACKed headers resent (host.ndp_*; use with switch.trim = true)",
    Ndp,
    "host.ndp_*"
);
