//! Packets and the pool they live in.
//!
//! Packets are created and freed millions of times per simulated second, so
//! they live in one pool and everything else refers to them by index.

use crate::units::Time;

/// Index of a packet in the [`PacketPool`].
pub type PktId = u32;

/// Maximum INT records a packet carries (HPCC uses at most 5 hops).
pub const MAX_INT_HOPS: usize = 5;

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// Application payload of a flow.
    Data,
    /// Cumulative acknowledgement from the receiver.
    Ack,
    /// Go-back-N request: the receiver saw a gap and expects `seq`.
    Nack,
    /// Congestion notification from the receiver (DCQCN NP).
    Cnp,
    /// Stand-alone RTT probe of a flow that had no data to carry it.
    Probe,
    /// The receiver's answer to an RTT probe.
    ProbeReply,
    /// PFC frame: pause (`seq` = 1) or resume (`seq` = 0) one class on the link.
    Pfc,
    /// Request to send (receiver-driven transports): the sender announces
    /// that its application has handed over `seq` bytes in all.
    Rts,
    /// Grant (token) from the receiver: the sender may send bytes below
    /// `seq`, with priority `grant_prio`.
    Grant,
    /// Homa RESEND from the receiver: send bytes `seq` to `seq + payload`
    /// again (they are granted), with priority `grant_prio`.
    Resend,
    /// Homa BUSY from the sender: it is alive but serves messages with fewer
    /// bytes left before the one a RESEND asked for.
    Busy,
    /// A data packet whose payload a trimming switch cut off (NDP,
    /// `switch.trim`): `seq` and `payload` still name the data it carried,
    /// so its receiver can ask for that data again. It travels as a control
    /// packet (queue 0) from the switch that cut it.
    Header,
}

/// One INT record, appended by a switch egress port to a data packet.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IntHop {
    /// Egress link rate in bit/s.
    pub rate_bps: u64,
    /// Time the packet left the egress queue.
    pub ts: Time,
    /// Bytes the port had transmitted before this packet.
    pub tx_bytes: u64,
    /// Bytes queued at the port (all queues) after this packet left.
    pub qlen: u64,
}

/// A packet. Control packets reuse the fields they need.
///
/// Exactly one cache line, aligned to one (see "The fat tree's packet" in
/// docs/performance.md): a switch hop reads the header, the ingress port and
/// the queueing time, and with the former 80 bytes every packet straddled two
/// lines. Nothing goes in it that a field already says: the source host of a
/// packet is its flow's (`Path::src` or `dst` by direction, read only where a
/// probe is answered), a PFC frame's pause is its `seq`, and the buffer
/// releases a packet from its ingress account's counters, not from a record
/// of the parts it was charged to.
#[derive(Clone, Debug)]
#[repr(align(64))]
pub struct Packet {
    /// What the packet is.
    pub kind: PacketKind,
    /// Flow it belongs to (for PFC frames: unused).
    pub flow: u32,
    /// Destination host index.
    pub dst: u32,
    /// Data: first payload byte. Ack: cumulative bytes received. Nack: expected byte.
    pub seq: u64,
    /// Data: payload bytes. Ack of a pFabric flow: bytes the receiver holds
    /// beyond `seq` (its SACK, as a count).
    pub payload: u32,
    /// Bytes on the wire.
    pub size: u32,
    /// Switch queue (traffic class) the packet uses.
    pub class: u8,
    /// Congestion experienced (set by a switch's ECN marking).
    pub ce: bool,
    /// One-bit facts ([`Packet::FLAG_ECN_ECHO`] and the others), one byte for
    /// all of them so that a packet keeps to one cache line.
    pub flags: u8,
    /// HPCC-PINT feedback: the largest encoded utilisation of the switch
    /// ports passed (data), echoed by the ACK; 0 when none was written.
    pub pint: u16,
    /// Data: time the sender started transmitting it. Ack/ProbeReply: echo of it.
    pub ts_tx: Time,
    /// Enqueue time at the current switch queue (for queueing latency).
    pub enq_time: Time,
    /// Ingress port at the current switch (for buffer accounting and PFC).
    pub in_port: u32,
    /// Switches traversed so far (data); echoed in ACKs.
    pub hops: u8,
    /// Number of valid INT records.
    pub n_int: u8,
    /// Slot of this packet's INT records in the pool's INT table (valid when `n_int > 0`
    /// or `want_int`); kept out of line so packets without INT stay small.
    pub int_slot: u32,
    /// Grant: the priority the receiver asks the granted data to use (0 is
    /// the highest). Kept apart from any per-packet switch priority: a grant
    /// names the priority of other packets, not its own.
    pub grant_prio: u8,
    /// Data priority, 0 most urgent (strict-priority switch ports serve it as
    /// queue `1 + prio`). Set by the sender; by default the class's priority.
    pub prio: u8,
    /// Urgency on rank-queue ports, smaller first (pFabric: the flow's
    /// remaining bytes when the packet was sent). 32 bits keep a packet in one
    /// cache line; remainders of 4 GiB and more saturate, i.e. all rank as
    /// least urgent.
    pub rank: u32,
    /// pHost data: the number of the token it spends, modulo 256 (the
    /// receiver restores the full number from the tokens it issued; one byte
    /// keeps a packet in one cache line).
    pub token: u8,
}

impl Packet {
    /// Ack: the acknowledged data packet was CE-marked.
    pub const FLAG_ECN_ECHO: u8 = 1;
    /// Data: carries an RTT-probe request. Ack: acknowledges such a packet.
    pub const FLAG_PROBE: u8 = 2;
    /// Data: the flow wants INT records (HPCC).
    pub const FLAG_WANT_INT: u8 = 4;
    /// Data: the flow wants PINT feedback (HPCC-PINT).
    pub const FLAG_WANT_PINT: u8 = 8;

    /// Whether flag `flag` is set.
    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// `flag` if `on`, else no flag (without a branch).
    #[inline]
    pub fn flag_if(flag: u8, on: bool) -> u8 {
        flag * on as u8
    }

    /// Ack: the acknowledged data packet was CE-marked.
    #[inline]
    pub fn ecn_echo(&self) -> bool {
        self.has(Self::FLAG_ECN_ECHO)
    }

    /// Data: carries an RTT-probe request. Ack: acknowledges such a packet.
    #[inline]
    pub fn probe(&self) -> bool {
        self.has(Self::FLAG_PROBE)
    }

    /// Data: the flow wants INT records.
    #[inline]
    pub fn want_int(&self) -> bool {
        self.has(Self::FLAG_WANT_INT)
    }

    fn blank() -> Self {
        Packet {
            kind: PacketKind::Data,
            flow: 0,
            dst: 0,
            seq: 0,
            payload: 0,
            size: 0,
            class: 0,
            ce: false,
            flags: 0,
            pint: 0,
            ts_tx: 0,
            enq_time: 0,
            in_port: 0,
            hops: 0,
            n_int: 0,
            int_slot: NO_INT,
            grant_prio: 0,
            prio: 0,
            rank: 0,
            token: 0,
        }
    }
}

/// `int_slot` value of a packet without INT records.
pub const NO_INT: u32 = u32::MAX;

/// A free-list pool of packets, with a side table of INT stacks.
#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<PktId>,
    ints: Vec<[IntHop; MAX_INT_HOPS]>,
    free_ints: Vec<u32>,
    /// SACK blocks of ACKs, indexed by packet id (grown only when a SACK
    /// flow sends an ACK, so that packets of other flows do not carry them).
    sacks: Vec<crate::sack::SackBlocks>,
}

impl PacketPool {
    /// Takes a packet slot, reset to defaults.
    #[inline]
    pub fn alloc(&mut self) -> PktId {
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = Packet::blank();
            id
        } else {
            self.slots.push(Packet::blank());
            (self.slots.len() - 1) as PktId
        }
    }

    /// Returns a packet slot (and its INT stack, if any) to the pool.
    #[inline]
    pub fn free(&mut self, id: PktId) {
        let slot = self.slots[id as usize].int_slot;
        if slot != NO_INT {
            self.free_ints.push(slot);
        }
        self.free.push(id);
    }

    /// Appends an INT record to packet `id` (ignored beyond [`MAX_INT_HOPS`]).
    pub fn push_int(&mut self, id: PktId, hop: IntHop) {
        let p = &mut self.slots[id as usize];
        if p.n_int as usize >= MAX_INT_HOPS {
            return;
        }
        if p.int_slot == NO_INT {
            p.int_slot = match self.free_ints.pop() {
                Some(s) => s,
                None => {
                    self.ints.push([IntHop::default(); MAX_INT_HOPS]);
                    (self.ints.len() - 1) as u32
                }
            };
        }
        self.ints[p.int_slot as usize][p.n_int as usize] = hop;
        p.n_int += 1;
    }

    /// INT records of packet `id`, first hop first.
    pub fn int_records(&self, id: PktId) -> &[IntHop] {
        let p = &self.slots[id as usize];
        if p.n_int == 0 {
            &[]
        } else {
            &self.ints[p.int_slot as usize][..p.n_int as usize]
        }
    }

    /// The INT stack in slot `slot` (a packet's `int_slot`), if there is one.
    #[inline]
    pub fn int_stack(&self, slot: u32) -> Option<&[IntHop; MAX_INT_HOPS]> {
        self.ints.get(slot as usize)
    }

    /// Packets currently allocated.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The packet with id `id`.
    #[inline]
    pub fn get(&self, id: PktId) -> &Packet {
        &self.slots[id as usize]
    }

    /// The packet with id `id`, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: PktId) -> &mut Packet {
        &mut self.slots[id as usize]
    }

    /// Moves the INT stack of packet `from` to packet `to` (the receiver echoes
    /// a data packet's records in its ACK and then frees the data packet).
    pub fn move_int(&mut self, from: PktId, to: PktId) {
        let (n, slot) = {
            let p = &mut self.slots[from as usize];
            let r = (p.n_int, p.int_slot);
            p.n_int = 0;
            p.int_slot = NO_INT;
            r
        };
        let q = &mut self.slots[to as usize];
        q.n_int = n;
        q.int_slot = slot;
    }
}

impl PacketPool {
    /// Puts SACK blocks on ACK `id` (a SACK flow's receiver writes every ACK's).
    #[inline]
    pub fn set_sack(&mut self, id: PktId, blocks: crate::sack::SackBlocks) {
        let i = id as usize;
        if self.sacks.len() <= i {
            self.sacks.resize(self.slots.len().max(i + 1), [(0, 0); crate::sack::SACK_BLOCKS]);
        }
        self.sacks[i] = blocks;
    }

    /// The SACK blocks of ACK `id` (of a SACK flow: written by [`PacketPool::set_sack`]).
    #[inline]
    pub fn sack(&self, id: PktId) -> crate::sack::SackBlocks {
        self.sacks.get(id as usize).copied().unwrap_or([(0, 0); crate::sack::SACK_BLOCKS])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A switch hop reads one line per packet only while a packet is one
    /// aligned line: a new field must make room (see `Packet`).
    #[test]
    fn packet_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Packet>(), 64);
        assert_eq!(std::mem::align_of::<Packet>(), 64);
    }
}
