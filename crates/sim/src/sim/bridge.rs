//! The agent bridge: decision requests of agent flows, answered in batches by
//! a policy outside the simulation or at once by a native policy.
//!
//! An agent flow's CC (`cc/agent.rs`) raises `decision_due` when it wants an
//! action; the CC glue hands the request here ([`Simulation::request_decision`]).
//! A native policy (an exported MLP) answers at once; with the stepping API
//! in use the request joins the [`Batch`] that [`Simulation::agent_step`]
//! returns and [`Simulation::agent_act`] answers; with neither (an external
//! policy nobody steps) the rate is held. An action asked for at `t` takes
//! effect at `t + policy_delay`, carried by its `ApplyAction` event; with no
//! delay it is returned to the caller, which applies it at once (blocking
//! semantics). The bridge reads an agent only through `AgentCc`'s
//! observation, reward, apply and finish.
//!
//! `agent_step` runs events until the policy must answer: with no delay,
//! until time moves past the first request (a batch holds simultaneous
//! requests); with a delay, until the first request's action is due, so one
//! batch gathers every request made meanwhile.

use super::queue_agent::QueueAgents;
use super::Simulation;
use crate::cc::agent::{ActionMap, AgentSpec, DelayMode};
use crate::cc::{Cc, CcCtx};
use crate::config::{CfgResult, ConfigError, Scenario};
use crate::engine::Event;
use crate::policy::{Mlp, Precision};
use crate::units::Time;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Decision requests (and ends) of agent flows, in the order they arose.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Flow (agent) ids.
    pub flows: Vec<u32>,
    /// Simulated time of each request.
    pub times: Vec<Time>,
    /// Observations, one row of `dim` values per entry.
    pub obs: Vec<f32>,
    /// Reward of each agent's previous action.
    pub rewards: Vec<f32>,
    /// The flow ended (its data is all delivered or it stopped): no action needed.
    pub done: Vec<bool>,
    /// The run ended with the flow still active: no action needed.
    pub truncated: Vec<bool>,
}

impl Batch {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Appends every entry of `other` (pools merge their simulations' batches).
    pub fn append(&mut self, other: &Batch) {
        self.flows.extend_from_slice(&other.flows);
        self.times.extend_from_slice(&other.times);
        self.obs.extend_from_slice(&other.obs);
        self.rewards.extend_from_slice(&other.rewards);
        self.done.extend_from_slice(&other.done);
        self.truncated.extend_from_slice(&other.truncated);
    }

    pub(super) fn push(&mut self, flow: u32, time: Time, obs: &[f32], reward: f32, done: bool, truncated: bool) {
        self.flows.push(flow);
        self.times.push(time);
        self.obs.extend_from_slice(obs);
        self.rewards.push(reward);
        self.done.push(done);
        self.truncated.push(truncated);
    }

    pub(super) fn clear(&mut self) {
        self.flows.clear();
        self.times.clear();
        self.obs.clear();
        self.rewards.clear();
        self.done.clear();
        self.truncated.clear();
    }
}

/// The simulator side of the agent bridge (see `crate::cc::agent`).
pub(super) struct Bridge {
    /// The checked `[agent]` table.
    spec: Arc<AgentSpec>,
    /// Observation length.
    dim: usize,
    /// The batch being collected or waiting for actions.
    batch: Batch,
    /// A batch is out and waits for `agent_act`.
    awaiting: bool,
    /// The stepping API is in use (otherwise external decisions keep the rate).
    pub(super) stepping: bool,
    /// Truncation entries were emitted.
    ended: bool,
    /// Native policy and its scratch space.
    native: Option<(Mlp, Vec<f32>)>,
    /// `agent.policy_sampling = "sample"`: a discrete native policy's action is drawn from
    /// the softmax of its scores instead of taking the best one.
    sample: bool,
    /// Decisions requested so far.
    decisions: u64,
    /// Switch-queue agents (none unless `agent.queues` names ports).
    pub(super) queues: QueueAgents,
    /// The queue-agent batch group, collected and answered with `batch`.
    pub(super) queue_batch: Batch,
    /// The last batch has been answered (or none was returned yet): a further
    /// `agent_act` has nothing to answer.
    answered: bool,
    /// Timing modes (see [`Timing`]).
    timing: Timing,
    /// A recurrent native policy's state, per flow (`state_len` floats each, in
    /// flow order; grown as flows first decide).
    native_state: Vec<f32>,
}

/// The timing side of the bridge: when each answer lands, and the native
/// `random` policy. Its random stream is its own (seeded from the scenario
/// seed), so drawing delays or random actions changes nothing else of a run.
struct Timing {
    rng: Xoshiro256PlusPlus,
    /// `policy = "random"`: uniform actions over this many indices.
    random: Option<usize>,
    /// Delay of each flow-group entry of the batch (0 when measured at the answer).
    delays: Vec<Time>,
    /// Delay of each queue-group entry.
    queue_delays: Vec<Time>,
    /// The batch must be returned before simulated time reaches this: the
    /// earliest due time of its open entries (a request answered with no
    /// delay is due just after its own instant).
    stop_at: Time,
    /// When the last batch was returned (wall clock; `delay_mode = "measured"`).
    returned_at: Option<Instant>,
}

impl Timing {
    /// A delay for a new request, or `None` when it is measured at the answer.
    fn draw(&mut self, mode: &DelayMode) -> Option<Time> {
        Some(match mode {
            DelayMode::Fixed(d) => *d,
            DelayMode::Measured(_) => return None,
            DelayMode::Uniform(lo, hi) => self.rng.random_range(*lo..=*hi),
            DelayMode::Exponential(mean) => {
                let u: f64 = self.rng.random();
                (-(1.0 - u).ln() * *mean as f64).round() as Time
            }
            DelayMode::Samples(s) => s[self.rng.random_range(0..s.len())],
        })
    }

    /// Notes an open entry made at `at` with delay `d` (None: measured later).
    fn due(&mut self, at: Time, d: Option<Time>) -> Time {
        let d = d.unwrap_or(0);
        self.stop_at = self.stop_at.min(at.saturating_add(d.max(1)));
        d
    }
}

/// Wall-clock seconds as simulated time, scaled (measured delays).
fn measured(since: Instant, scale: f64) -> Time {
    (since.elapsed().as_secs_f64() * scale * crate::units::SEC as f64).round() as Time
}

impl Bridge {
    /// The delay of an answer the simulator computed itself (a native policy's):
    /// the inference time measured from `started` in `delay_mode = "measured"`,
    /// otherwise a draw of the delay mode (fixed: `policy_delay`).
    pub(super) fn native_answer_delay(&mut self, started: Instant) -> Time {
        match &self.spec.delay {
            DelayMode::Measured(scale) => measured(started, *scale),
            mode => self.timing.draw(mode).unwrap_or(0),
        }
    }

    /// The checked `[agent]` table (agent flows are built from it).
    pub(super) fn spec(&self) -> &Arc<AgentSpec> {
        &self.spec
    }

    /// Notes an open queue-agent request made at `at` (its delay and due time).
    pub(super) fn queue_request(&mut self, at: Time) {
        let d = self.timing.draw(&self.spec.delay);
        let d = self.timing.due(at, d);
        self.timing.queue_delays.push(d);
    }

    /// Notes a closed queue-agent entry (truncated: no action).
    pub(super) fn queue_closed(&mut self) {
        self.timing.queue_delays.push(0);
    }
}

impl Simulation {
    /// A decision of agent flow `fid` is due (its CC raised `decision_due`):
    /// answer it natively, hold the rate when nobody is stepping, or queue it
    /// in the batch. Returns the action when it must take effect now (no
    /// policy delay); the caller (`cc_glue.rs`) applies it.
    #[cold]
    #[inline(never)]
    pub(super) fn request_decision(&mut self, fid: u32) -> Option<f32> {
        let now = self.now;
        let bridge = self.bridge.as_mut()?;
        let Cc::Agent(agent) = &mut self.flows[fid as usize].cc else { return None };
        bridge.decisions += 1;
        let mut delay = None;
        let action = if let Some((mlp, scratch)) = bridge.native.as_mut() {
            let started = matches!(bridge.spec.delay, DelayMode::Measured(_)).then(Instant::now);
            let mut out = [0f32; 64];
            let n = mlp.outputs().min(64);
            let memory = mlp.state_len();
            if memory > 0 || mlp.extra_inputs() > 0 {
                // A recurrent policy (version 2): the flow's own state, zero when it
                // first decides (a run is an episode); its last reward as the extra input.
                let at = fid as usize * memory;
                if bridge.native_state.len() < at + memory {
                    bridge.native_state.resize(at + memory, 0.0);
                }
                let extra = [agent.reward(); crate::policy::MAX_EXTRA];
                let state = &mut bridge.native_state[at..at + memory];
                mlp.forward_step(agent.observation(), &extra, state, &mut out[..n], scratch);
            } else {
                mlp.forward(agent.observation(), &mut out[..n], scratch);
            }
            if let (Some(t), DelayMode::Measured(scale)) = (started, &bridge.spec.delay) {
                delay = Some(measured(t, *scale));
            }
            if n > 1 && bridge.sample {
                let u: f64 = bridge.timing.rng.random();
                crate::policy::sample_softmax(&out[..n], u) as f32
            } else if n > 1 {
                // Several outputs: a discrete policy's scores; take the best.
                // Equal scores go to the lowest index, as torch.argmax and numpy.argmax.
                crate::policy::argmax(&out[..n]) as f32
            } else {
                out[0]
            }
        } else if let Some(n) = bridge.timing.random {
            let started = Instant::now();
            let a = bridge.timing.rng.random_range(0..n) as f32;
            if let DelayMode::Measured(scale) = &bridge.spec.delay {
                delay = Some(measured(started, *scale));
            }
            a
        } else if bridge.stepping {
            bridge.batch.push(fid, now, agent.observation(), agent.reward(), false, false);
            let d = bridge.timing.draw(&bridge.spec.delay);
            let d = bridge.timing.due(now, d);
            bridge.timing.delays.push(d);
            return None;
        } else {
            // Nobody is stepping this simulation: hold the rate.
            bridge.spec.neutral_action()
        };
        let delay = match delay {
            Some(d) => d,
            None => bridge.timing.draw(&bridge.spec.delay).unwrap_or(0),
        };
        self.action_due(fid, now, delay, action)
    }

    /// Routes `action`, answering the request flow `fid` made at `at`: returns
    /// it when it takes effect now (no policy delay), otherwise schedules its
    /// `ApplyAction` event `policy_delay` after the request.
    fn action_due(&mut self, fid: u32, at: Time, delay: Time, action: f32) -> Option<f32> {
        if delay == 0 {
            return Some(action);
        }
        self.events.push(at + delay, Event::ApplyAction { flow: fid, action });
        None
    }

    /// The `ApplyAction` event: a delayed action takes effect, unless its flow
    /// has finished meanwhile.
    #[cold]
    #[inline(never)]
    pub(super) fn on_apply_action(&mut self, fid: u32, action: f32) {
        let f = &self.flows[fid as usize];
        if f.snd.finished.is_some() || !matches!(f.cc, Cc::Agent(_)) {
            return;
        }
        self.apply_action(fid, action);
    }

    /// The agents' decisions are answered by a policy stepping from Python
    /// (`agent_step` / `agent_act`), not by a native or a random one.
    pub(super) fn python_steps_agents(&self) -> bool {
        self.bridge.as_ref().is_some_and(|b| b.stepping && b.native.is_none() && b.timing.random.is_none())
    }

    /// Reports the end of agent flow `fid` to the policy (done or truncated).
    #[cold]
    #[inline(never)]
    pub(super) fn agent_ended(&mut self, fid: u32, truncated: bool) {
        let now = self.now;
        let Some(bridge) = self.bridge.as_mut() else { return };
        if !bridge.stepping || bridge.native.is_some() || bridge.timing.random.is_some() {
            return;
        }
        let f = &mut self.flows[fid as usize];
        let Cc::Agent(agent) = &mut f.cc else { return };
        let reward = agent.finish(&CcCtx { now, flow: &mut f.ctl });
        bridge.batch.push(fid, now, agent.observation(), reward, !truncated, truncated);
        bridge.timing.delays.push(0);
    }

    /// Runs until the policy must answer: returns a batch of decision
    /// requests (see [`Simulation::batch`]) and whether the run is over.
    ///
    /// With `policy_delay` 0 a batch holds the requests made at one instant
    /// (blocking semantics); with a positive delay the simulation keeps going
    /// until the first request's action is due, so the batch gathers every
    /// request made meanwhile.
    pub fn agent_step(&mut self) -> Result<bool, String> {
        let Some(bridge) = self.bridge.as_mut() else {
            return Err("this scenario has no [agent] table".into());
        };
        if bridge.native.is_some() || bridge.timing.random.is_some() {
            return Err("this scenario's agents use a native policy; run it with run_until".into());
        }
        if bridge.awaiting {
            return Err("answer the last batch with agent_act() before stepping again".into());
        }
        bridge.stepping = true;
        bridge.answered = false;
        bridge.batch.clear();
        bridge.queue_batch.clear();
        bridge.timing.delays.clear();
        bridge.timing.queue_delays.clear();
        bridge.timing.stop_at = Time::MAX;
        loop {
            // The earliest due time of an open entry (each entry's own delay:
            // with a fixed delay, the first request's).
            let stop_at = self.bridge.as_ref().expect("bridge").timing.stop_at;
            let Some(t) = self.events.peek_time().filter(|&t| t <= self.end) else { break };
            if t >= stop_at {
                let bridge = self.bridge.as_mut().expect("bridge");
                bridge.awaiting = true;
                bridge.timing.returned_at = Some(Instant::now());
                return Ok(false);
            }
            let (time, ev) = self.events.pop().expect("peeked");
            self.now = time;
            self.event_count += 1;
            self.dispatch(ev);
        }
        // Out of events before the end, or at the end: the run is over.
        self.now = self.end;
        if !self.bridge.as_ref().expect("bridge").ended {
            self.bridge.as_mut().expect("bridge").ended = true;
            for fid in 0..self.flows.len() as u32 {
                let f = &self.flows[fid as usize];
                if f.snd.started && f.snd.finished.is_none() && matches!(f.cc, Cc::Agent(_)) {
                    self.agent_ended(fid, true);
                }
            }
            self.queue_agents_truncated();
        }
        let bridge = self.bridge.as_mut().expect("bridge");
        let open = |b: &Batch| b.done.iter().zip(&b.truncated).any(|(d, t)| !d && !t);
        bridge.awaiting = open(&bridge.batch) || open(&bridge.queue_batch);
        bridge.timing.returned_at = Some(Instant::now());
        Ok(true)
    }

    /// A batch returned by `agent_step` waits for its `agent_act`: the network
    /// must not move on meanwhile (its requests would go stale and new ones
    /// join a batch the caller has already read).
    pub fn agent_batch_waiting(&self) -> bool {
        self.bridge.as_ref().is_some_and(|b| b.awaiting)
    }

    /// Length of an agent observation (0 without an `[agent]` table).
    pub fn obs_dim(&self) -> usize {
        self.bridge.as_ref().map_or(0, |b| b.dim)
    }

    /// Agent decisions requested so far.
    pub fn agent_decisions(&self) -> u64 {
        self.bridge.as_ref().map_or(0, |b| b.decisions)
    }

    /// The batch returned by the last [`Simulation::agent_step`].
    pub fn batch(&self) -> Option<&Batch> {
        self.bridge.as_ref().map(|b| &b.batch)
    }

    /// Checks actions for the last batch without applying them: the error
    /// [`Simulation::agent_act`] would give, if any. Lets a caller answering
    /// several simulations (a pool) check them all before any acts.
    pub fn check_agent_actions(&self, actions: &[f32]) -> Result<(), String> {
        let Some(bridge) = self.bridge.as_ref() else {
            return Err("this scenario has no [agent] table".into());
        };
        if bridge.answered {
            return Err(if bridge.stepping {
                "this batch was already answered: call agent_step() for the next one".into()
            } else {
                "no batch to answer yet: call agent_step() first".into()
            });
        }
        let n = bridge.batch.len() + bridge.queue_batch.len();
        if actions.len() != n {
            return Err(format!("expected {n} actions (one per batch entry), got {}", actions.len()));
        }
        let (flow_actions, queue_actions) = actions.split_at(bridge.batch.len());
        let open = |b: &Batch, i: usize| !(b.done[i] || b.truncated[i]);
        for (i, &a) in flow_actions.iter().enumerate() {
            if open(&bridge.batch, i) {
                bridge.spec.action.check(a).map_err(|m| format!("flow {}: action {a} {m}", bridge.batch.flows[i]))?;
            }
        }
        for (i, &a) in queue_actions.iter().enumerate() {
            if open(&bridge.queue_batch, i) {
                let agent = bridge.queue_batch.flows[i];
                bridge.queues.check_action(a).map_err(|m| format!("queue agent {agent}: action {a} {m}"))?;
            }
        }
        Ok(())
    }

    /// Answers the last batch: one action per entry (entries that are done or
    /// truncated take none; their value is ignored). Each batch is answered
    /// once; actions are checked first ([`Simulation::check_agent_actions`]),
    /// and a rejected answer changes nothing, so the batch can be answered again.
    pub fn agent_act(&mut self, actions: &[f32]) -> Result<(), String> {
        self.check_agent_actions(actions)?;
        let bridge = self.bridge.as_mut().expect("checked");
        bridge.answered = true;
        if !bridge.awaiting {
            return Ok(());
        }
        bridge.awaiting = false;
        // Measured timing: every entry of the batch waited for this answer.
        let wall = match (&bridge.spec.delay, bridge.timing.returned_at) {
            (DelayMode::Measured(scale), Some(t)) => Some(measured(t, *scale)),
            _ => None,
        };
        let batch = std::mem::take(&mut bridge.batch);
        let queue_batch = std::mem::take(&mut bridge.queue_batch);
        let delays = std::mem::take(&mut bridge.timing.delays);
        let queue_delays = std::mem::take(&mut bridge.timing.queue_delays);
        let (actions, queue_actions) = actions.split_at(batch.len());
        for (i, &a) in actions.iter().enumerate() {
            if batch.done[i] || batch.truncated[i] {
                continue;
            }
            let d = wall.unwrap_or(delays[i]);
            if let Some(now) = self.action_due(batch.flows[i], batch.times[i], d, a) {
                self.apply_action(batch.flows[i], now);
            }
        }
        for (i, &a) in queue_actions.iter().enumerate() {
            if !(queue_batch.done[i] || queue_batch.truncated[i]) {
                let d = wall.unwrap_or(queue_delays[i]);
                self.queue_action_due(queue_batch.flows[i], queue_batch.times[i], d, a);
            }
        }
        let bridge = self.bridge.as_mut().expect("bridge");
        bridge.batch = batch;
        bridge.queue_batch = queue_batch;
        bridge.timing.delays = delays;
        bridge.timing.queue_delays = queue_delays;
        Ok(())
    }

    // ---- The switch-queue agent group (see `queue_agent.rs`) ----

    /// Number of switch-queue agents (0 without `agent.queues`).
    pub fn queue_agents(&self) -> usize {
        self.bridge.as_ref().map_or(0, |b| b.queues.len())
    }

    /// Observation width of a switch-queue agent (0 without queue agents).
    pub fn queue_obs_dim(&self) -> usize {
        self.bridge.as_ref().map_or(0, |b| b.queues.dim())
    }

    /// The queue-agent batch group of the last [`Simulation::agent_step`]; its
    /// `flows` hold queue-agent ids. [`Simulation::agent_act`] takes the flow
    /// group's actions first, then this group's.
    pub fn queue_batch(&self) -> Option<&Batch> {
        self.bridge.as_ref().map(|b| &b.queue_batch)
    }

    /// The switch port and data queue of queue agent `agent`.
    pub fn queue_agent_target(&self, agent: u32) -> Option<(u32, usize)> {
        let b = self.bridge.as_ref()?;
        ((agent as usize) < b.queues.len()).then(|| b.queues.target(agent))
    }
}

/// Builds the agent bridge of a scenario, loading its native policy if any.
pub(super) fn build_bridge(sc: &Scenario, base_dir: &Path) -> CfgResult<Option<Bridge>> {
    let Some(cfg) = &sc.agent else { return Ok(None) };
    let mut spec = AgentSpec::from_config(cfg)?;
    spec.ack_bytes = sc.packets.ack;
    let dim = spec.obs_dim();
    let random = match (cfg.policy.as_str(), &spec.action) {
        ("random", ActionMap::Discrete(t)) => Some(t.len()),
        ("random", ActionMap::PerAck(t)) => Some(t.len()),
        ("random", ActionMap::Mvfst) => Some(crate::cc::agent::MVFST_ACTIONS),
        ("random", _) => {
            return Err(ConfigError::new(
                "agent.policy",
                "\"random\"",
                format!(
                    "the random policy draws an index: use it with action \"discrete\", \"per_ack\" or \"mvfst\", not \"{}\"",
                    cfg.action
                ),
            ))
        }
        _ => None,
    };
    let native = if cfg.policy == "external" || random.is_some() {
        None
    } else {
        let precision = match cfg.precision.as_str() {
            "float32" => Precision::Float32,
            "int8" => Precision::Int8,
            other => {
                return Err(ConfigError::new("agent.precision", format!("\"{other}\""), "use \"float32\" or \"int8\""))
            }
        };
        let path = base_dir.join(&cfg.policy);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            ConfigError::new("agent.policy", format!("\"{}\"", cfg.policy), format!("cannot read the policy file: {e}"))
        })?;
        let mlp = Mlp::from_json(&text, precision)
            .map_err(|e| ConfigError::new("agent.policy", format!("\"{}\"", cfg.policy), e))?;
        if mlp.inputs() != dim {
            return Err(ConfigError::new(
                "agent.policy",
                format!("\"{}\"", cfg.policy),
                format!("the policy takes {} inputs but [agent] observations have {dim}", mlp.inputs()),
            ));
        }
        // A discrete map's policy scores each entry and takes the best; a
        // continuous one gives the action. Any other width would be clamped
        // into an index (or give an index as a multiplier) without a word.
        let (outputs, why) = match &spec.action {
            ActionMap::Discrete(t) => (t.len(), "one score per entry of agent.discrete"),
            ActionMap::PerAck(t) => (t.len(), "one score per entry of agent.per_ack"),
            ActionMap::Mvfst => (crate::cc::agent::MVFST_ACTIONS, "one score per mvfst action"),
            _ => (1, "one output: the action"),
        };
        if mlp.outputs() != outputs || outputs > 64 {
            return Err(ConfigError::new(
                "agent.policy",
                format!("\"{}\"", cfg.policy),
                format!(
                    "the policy has {} outputs but [agent] action = \"{}\" needs {why} ({outputs}{})",
                    mlp.outputs(),
                    cfg.action,
                    if outputs > 64 { ", at most 64 for a native policy" } else { "" }
                ),
            ));
        }
        let scratch = vec![0.0; mlp.scratch_len()];
        Some((mlp, scratch))
    };
    let sample = match cfg.policy_sampling.as_str() {
        "greedy" => false,
        "sample" => true,
        other => {
            return Err(ConfigError::new(
                "agent.policy_sampling",
                format!("\"{other}\""),
                "use \"greedy\" (the best score) or \"sample\" (drawn from the scores' softmax)",
            ))
        }
    };
    if sample && native.as_ref().is_none_or(|(mlp, _)| mlp.outputs() <= 1) {
        return Err(ConfigError::new(
            "agent.policy_sampling",
            "\"sample\"",
            "needs a native policy with one score per action (agent.policy a policy file, action \"discrete\", \"per_ack\" or \"mvfst\")",
        ));
    }
    Ok(Some(Bridge {
        spec: Arc::new(spec),
        dim,
        batch: Batch::default(),
        awaiting: false,
        stepping: false,
        ended: false,
        native,
        sample,
        decisions: 0,
        queues: QueueAgents::with_policy(cfg, base_dir)?,
        queue_batch: Batch::default(),
        answered: true,
        timing: Timing {
            // A stream of its own, so that delays and random actions leave the
            // scenario's other draws alone.
            rng: Xoshiro256PlusPlus::seed_from_u64(sc.seed ^ 0x6d76_6673_745f_726c),
            random,
            delays: vec![],
            queue_delays: vec![],
            stop_at: Time::MAX,
            returned_at: None,
        },
        native_state: Vec::new(),
    }))
}
