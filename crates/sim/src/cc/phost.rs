//! pHost's end hosts (Gao et al., CoNEXT 2015; spec `rule_based_cc.md`
//! section 7.2): no congestion control at all. A pHost sender sends at line
//! rate with no window, one packet per token; what it sends and when is the
//! receiver's decision (`Transport::PHost`: request-to-send, free tokens,
//! tokens paced at the receiver's downlink rate and chosen smallest
//! remaining first, expiry, the outstanding-token window, the resend
//! timeout; in the core, `sim/grants.rs`, configured by `host.phost_*`).
//! Use it with strict-priority switch ports (`switch.discipline =
//! "priority"`): control packets go first, then short flows' data, then
//! long flows' data; and with `host.scheduler = "srpt"` (and a burst of one
//! packet) for the sender's smallest-remaining-first choice among flows
//! holding tokens.

line_rate_transport!(
    /// State of a pHost sender (none: tokens decide).
    PHost,
    "phost",
    "pHost end hosts: receiver tokens, line rate, no window (host.phost_*; use with switch.discipline = \"priority\")",
    PHost,
    "host.phost_*"
);
