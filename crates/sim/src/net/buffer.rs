//! Switch buffer models, selectable per switch: today's shared buffer with
//! dynamic thresholds and PFC ([`Mmu`]), or static per-queue budgets.
//!
//! * **Shared** ([`BufferModel::Shared`]): one pool for the whole switch. A
//!   lossy queue is admitted while it stays under `queue_cap`, under `dt_alpha`
//!   x free buffer (Choudhury-Hahne) and the pool has room, so one congested
//!   port can take most of the switch's memory when the others are idle. PFC
//!   (lossless classes) needs this model: it accounts bytes per ingress.
//! * **Static** ([`BufferModel::Static`], [`StaticBuffer`]): every egress queue
//!   owns a fixed number of bytes and nothing is shared, as in pFabric's and
//!   pHost's simulators (36 KB per port) and in switches carved into fixed
//!   per-port slices. A queue drops exactly when its own budget is full,
//!   whatever the rest of the switch holds. Static buffers are lossy only.
//!
//! [`BufferModel`] is the one shape the datapath calls; [`Mmu`] sits under it
//! unchanged. Its `admit(ingress, class, size, queue_bytes)` and
//! `release(ingress, class, size)` are called with the queue number as the
//! class, and an XOFF/XON request comes back. A static buffer ignores the
//! ingress port, keys its accounting by (egress port, queue) and never
//! pauses. Both are an enum, not a trait object: one `match` per
//! packet, no dynamic dispatch.
//!
//! # Wiring
//!
//! `Simulation::mmus` holds one `BufferModel` per switch. `switch_receive`
//! calls [`BufferModel::admit`] with the ingress and egress ports' local
//! indices and [`BufferModel::hold_control`] for control packets (and for
//! data a rank port admitted by its own capacity); `switch_try_send` calls
//! [`BufferModel::release`] or [`BufferModel::release_control`]. The scenario
//! selects it with `switch.buffer_model = "shared" | "static"` (default
//! shared) and `switch.port_buffer` (bytes per egress data queue of a static
//! buffer; 0 splits `switch.buffer` evenly over the switch's data queues);
//! `static` together with `switch.pfc.enabled` is a configuration error.

use crate::net::switch::{Admit, Mmu};

/// Fixed byte budgets per (egress port, queue); nothing is shared.
#[derive(Clone, Debug)]
pub struct StaticBuffer {
    queues: usize,
    /// Budget per (port, queue), row-major by port.
    budget: Vec<u64>,
    /// Bytes held per (port, queue).
    held: Vec<u64>,
    /// Bytes held by the whole switch, control packets included.
    used: u64,
}

impl StaticBuffer {
    /// A switch of `ports` ports with `queues` queues each, every queue owning
    /// `budget` bytes.
    pub fn new(ports: usize, queues: usize, budget: u64) -> StaticBuffer {
        StaticBuffer { queues, budget: vec![budget; ports * queues], held: vec![0; ports * queues], used: 0 }
    }

    #[inline]
    fn index(&self, port: usize, queue: usize) -> usize {
        port * self.queues + queue
    }

    /// Gives queue `queue` of local port `port` its own budget.
    pub fn set_budget(&mut self, port: usize, queue: usize, bytes: u64) {
        let i = self.index(port, queue);
        self.budget[i] = bytes;
    }

    /// Budget of queue `queue` of local port `port`.
    pub fn budget(&self, port: usize, queue: usize) -> u64 {
        self.budget[self.index(port, queue)]
    }

    /// Bytes held by queue `queue` of local port `port`.
    pub fn held(&self, port: usize, queue: usize) -> u64 {
        self.held[self.index(port, queue)]
    }

    /// Bytes held by the switch.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Admits `size` bytes to queue `queue` of local port `port` if they fit
    /// its budget; returns whether they were admitted.
    #[inline]
    pub fn admit(&mut self, port: usize, queue: usize, size: u64) -> bool {
        let i = self.index(port, queue);
        if self.held[i] + size > self.budget[i] {
            return false;
        }
        self.held[i] += size;
        self.used += size;
        true
    }

    /// Returns the bytes of a packet that leaves queue `queue` of local port `port`.
    #[inline]
    pub fn release(&mut self, port: usize, queue: usize, size: u64) {
        let i = self.index(port, queue);
        self.held[i] -= size;
        self.used -= size;
    }
}

/// The buffer of one switch: shared with dynamic thresholds (and PFC), or
/// static per queue.
#[derive(Clone, Debug)]
pub enum BufferModel {
    /// One pool for the switch (today's model, with PFC when enabled).
    Shared(Mmu),
    /// A fixed budget per egress queue (lossy only).
    Static(StaticBuffer),
}

impl BufferModel {
    /// Admission of a `size`-byte data packet that arrived on local port
    /// `ingress` for queue `queue` of local port `egress`, which holds
    /// `queue_bytes` now.
    #[inline]
    pub fn admit(&mut self, ingress: usize, egress: usize, queue: usize, size: u64, queue_bytes: u64) -> Admit {
        match self {
            BufferModel::Shared(mmu) => mmu.admit(ingress, queue, size, queue_bytes),
            BufferModel::Static(b) => {
                if b.admit(egress, queue, size) {
                    Admit::Accept { pause: false }
                } else {
                    Admit::Drop
                }
            }
        }
    }

    /// Releases a data packet that leaves queue `queue` of local port `egress`
    /// (admitted from local port `ingress`); returns true if the ingress
    /// should send an XON (PFC, shared model only).
    // Always inlined: on the default shared buffer this is the per-packet
    // `Mmu::release` plus one discriminant test, and as an outlined call
    // (LTO chose one) it cost about a dozen instructions more per packet.
    #[inline(always)]
    pub fn release(&mut self, ingress: usize, egress: usize, queue: usize, size: u64) -> bool {
        match self {
            BufferModel::Shared(mmu) => mmu.release(ingress, queue, size),
            BufferModel::Static(b) => {
                b.release(egress, queue, size);
                false
            }
        }
    }

    /// Accounts a control packet, which bypasses admission: it is tiny and
    /// must not be lost to the data it regulates.
    #[inline]
    pub fn hold_control(&mut self, size: u64) {
        match self {
            BufferModel::Shared(mmu) => mmu.used += size,
            BufferModel::Static(b) => b.used += size,
        }
    }

    /// Releases a control packet accounted by [`hold_control`](Self::hold_control).
    #[inline]
    pub fn release_control(&mut self, size: u64) {
        match self {
            BufferModel::Shared(mmu) => mmu.used -= size,
            BufferModel::Static(b) => b.used -= size,
        }
    }

    /// Bytes the switch holds.
    pub fn used(&self) -> u64 {
        match self {
            BufferModel::Shared(mmu) => mmu.used,
            BufferModel::Static(b) => b.used,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PKT: u64 = 1_000;
    const PORTS: usize = 4;

    /// A lossy shared buffer of `buffer` bytes with dynamic threshold `alpha`
    /// (0 = off) and no per-queue cap beyond the buffer.
    fn shared(buffer: u64, alpha: f64) -> BufferModel {
        BufferModel::Shared(Mmu::new(buffer, buffer, alpha, false, 0.125, 0, 0, 2, vec![0; PORTS]))
    }

    /// Offers `n` packets to egress port 0 (the hot port, fed from port 2),
    /// then `n` to egress port 1 (fed from port 3), nothing leaving; returns
    /// how many each port admitted.
    fn hot_then_cold(model: &mut BufferModel, n: usize) -> (usize, usize) {
        let mut queued = [0u64; PORTS];
        let mut admitted = [0usize; PORTS];
        for (egress, ingress) in [(0, 2), (1, 3)] {
            for _ in 0..n {
                let a = model.admit(ingress, egress, 1, PKT, queued[egress]);
                if a != Admit::Drop {
                    queued[egress] += PKT;
                    admitted[egress] += 1;
                }
            }
        }
        (admitted[0], admitted[1])
    }

    #[test]
    fn a_hot_port_takes_the_shared_buffer_but_only_its_own_static_budget() {
        let buffer = 120 * PKT;
        // Shared, no dynamic threshold: the hot port takes the whole buffer and
        // the cold port that comes next gets nothing.
        assert_eq!(hot_then_cold(&mut shared(buffer, 0.0), 200), (120, 0));
        // Shared with alpha = 1: the hot queue stops at alpha x free, i.e. half
        // the buffer; the cold one then gets half of what is left free.
        assert_eq!(hot_then_cold(&mut shared(buffer, 1.0), 200), (60, 30));
        // Static, the same memory split over 4 ports: each gets its quarter,
        // however busy the other port is.
        let mut stat = BufferModel::Static(StaticBuffer::new(PORTS, 2, buffer / PORTS as u64));
        assert_eq!(hot_then_cold(&mut stat, 200), (30, 30));
        assert_eq!(stat.used(), 60 * PKT);
    }

    #[test]
    fn static_budget_is_per_queue_and_release_restores_it() {
        let mut b = StaticBuffer::new(2, 3, 2_500);
        b.set_budget(1, 2, 1_000);
        assert!(b.admit(0, 1, 1_500));
        assert!(b.admit(0, 1, 1_000));
        assert!(!b.admit(0, 1, 1));
        // Another queue of the same port, and the same queue of another port, are untouched.
        assert!(b.admit(0, 2, 2_500));
        assert!(b.admit(1, 1, 2_500));
        assert!(!b.admit(1, 2, 1_001));
        assert!(b.admit(1, 2, 1_000));
        assert_eq!(b.held(0, 1), 2_500);
        assert_eq!(b.used(), 8_500);
        b.release(0, 1, 1_500);
        assert!(b.admit(0, 1, 1_500));
        assert!(!b.admit(0, 1, 1));
        let mut m = BufferModel::Static(b);
        m.hold_control(64);
        assert_eq!(m.used(), 8_564);
        m.release_control(64);
        assert!(!m.release(7, 0, 1, 1_000), "a static buffer never asks for XON");
        assert_eq!(m.used(), 7_500);
    }

    #[test]
    fn the_shared_model_is_todays_mmu() {
        // Same decisions and XON as calling the MMU directly, with PFC on.
        let mmu = Mmu::new(1_000_000, 1 << 30, 0.0, true, 0.125, 4096, 3072, 2, vec![50_000; PORTS]);
        let mut direct = mmu.clone();
        let mut model = BufferModel::Shared(mmu);
        let mut pauses = 0;
        for i in 0..200 {
            let a = direct.admit(0, 1, PKT, 0);
            let b = model.admit(0, 3, 1, PKT, 0);
            assert_eq!(a, b, "packet {i}");
            pauses += (b == Admit::Accept { pause: true }) as u32;
        }
        assert_eq!(pauses, 1);
        let mut xon = (0, 0);
        for _ in 0..200 {
            xon.0 += direct.release(0, 1, PKT) as u32;
            xon.1 += model.release(0, 3, 1, PKT) as u32;
        }
        assert_eq!(xon, (1, 1));
        assert_eq!(model.used(), 0);
    }
}
