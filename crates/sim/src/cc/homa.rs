//! Homa's end hosts (Montazeri et al., SIGCOMM 2018; spec `rule_based_cc.md`
//! section 7.3): no congestion control at all. A Homa sender sends at line
//! rate with no window: its first `RTTbytes` at once (unscheduled), the rest
//! as its receiver's grants allow; which message goes next is the NIC's
//! smallest-remaining-first order, and what is granted, at which priority,
//! the receiver's decision (`Transport::Homa`, in the core's `sim/homa.rs`,
//! configured by `host.homa_*`; the run's parameters in [`crate::homa`]).
//! Use it with strict-priority switch ports (`switch.discipline =
//! "priority"`, 8 levels) and with `host.scheduler = "srpt"` and a burst of
//! one packet (`host.burst`) for the sender's per-packet SRPT.

line_rate_transport!(
    /// State of a Homa sender (none: grants decide).
    Homa,
    "homa",
    "Homa end hosts: unscheduled first RTT, receiver grants, line rate, no window (host.homa_*; use with switch.discipline = \"priority\")",
    Homa,
    "host.homa_*"
);
