//! EQDS's end hosts (Olteanu et al., NSDI 2022; spec `rule_based_cc.md`
//! section 7.4, facts from htsim's `eqds.cpp`): no congestion control at
//! all. A sender sends up to its window speculatively at line rate until it
//! hears anything from its receiver, then only on the receiver's pulls; its
//! data tells the receiver how many pulls it still wants, and the receiver
//! paces pulls at its downlink rate over the flows that want them
//! (`Transport::Eqds`, in the core `sim/eqds.rs`, configured by
//! `host.eqds_*`). Use it with trimming switches (`switch.trim = true`) and
//! packet spraying, as NDP.

line_rate_transport!(
    /// State of an EQDS sender (none: speculation and pulls decide).
    Eqds,
    "eqds",
    "EQDS end hosts: a speculative window, then pulls paced by the receiver for the pulls the sender declares it wants (host.eqds_*; use with switch.trim = true)",
    Eqds,
    "host.eqds_*"
);
