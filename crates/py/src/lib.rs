//! Python bindings of the ccgym simulator: the module `ccgym._sim`.
//!
//! Thin by design: it converts the scenario, hands results over as numpy
//! arrays, releases the GIL while simulating, and turns every failure into a
//! Python exception — a user mistake into `ScenarioError`, a simulator bug
//! (a Rust panic) into `InternalError`, never a crash.

use ccgym_sim::net::port::Red;
use ccgym_sim::sim::Batch;
use ccgym_sim::{Column, Simulation as Core};
use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

create_exception!(
    ccgym._sim,
    ScenarioError,
    PyValueError,
    "A scenario the simulator cannot run; the message names the field and the value."
);
create_exception!(
    ccgym._sim,
    InternalError,
    PyRuntimeError,
    "A bug inside the simulator (please report it with the scenario)."
);

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

/// Runs `f`, turning a panic into `InternalError`.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|e| InternalError::new_err(format!("simulator failure in {what}: {}", panic_message(e))))
}

/// A simulation built from a scenario (JSON text), advanced in slices of
/// simulated time.
#[pyclass(module = "ccgym._sim")]
struct Simulation {
    sim: Option<Core>,
    setup_seconds: f64,
}

impl Simulation {
    fn core(&self) -> PyResult<&Core> {
        self.sim.as_ref().ok_or_else(|| InternalError::new_err("the simulation failed earlier and cannot continue"))
    }
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(py: Python<'_>, scenario_json: &str, base_dir: &str) -> PyResult<Self> {
        let t0 = Instant::now();
        let json = scenario_json.to_owned();
        let dir = base_dir.to_owned();
        let built = py.detach(move || guarded("set-up", move || Core::from_json(&json, Path::new(&dir))))?;
        let sim = built.map_err(|e| ScenarioError::new_err(e.to_string()))?;
        Ok(Simulation { sim: Some(sim), setup_seconds: t0.elapsed().as_secs_f64() })
    }

    /// Current simulated time in picoseconds.
    #[getter]
    fn now_ps(&self) -> PyResult<u64> {
        Ok(self.core()?.now())
    }

    /// Duration of the run in picoseconds.
    #[getter]
    fn end_ps(&self) -> PyResult<u64> {
        Ok(self.core()?.end())
    }

    /// Events processed so far.
    #[getter]
    fn events(&self) -> PyResult<u64> {
        Ok(self.core()?.event_count())
    }

    /// Packet transmissions over links so far.
    #[getter]
    fn packet_hops(&self) -> PyResult<u64> {
        Ok(self.core()?.packet_hops())
    }

    /// Wall time of building the simulation, in seconds.
    #[getter]
    fn setup_seconds(&self) -> f64 {
        self.setup_seconds
    }

    /// What the scenario was estimated to cost before it was built (JSON; see
    /// the module function `estimate`).
    #[getter]
    fn estimate(&self) -> PyResult<String> {
        let core = self.core()?;
        Ok(core.estimate().to_json(&core.scenario().limits).to_string())
    }

    /// Advances to `t_ps` (capped at the end); returns True when the run is over.
    /// Refused (ValueError) while a batch from `agent_step` waits for `agent_act`.
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<bool> {
        let core = self.core()?;
        if core.agent_batch_waiting() && t_ps > core.now() {
            return Err(PyValueError::new_err(
                "an agent batch waits for its answer: call agent_act() before run_until()",
            ));
        }
        let mut sim = self.sim.take().expect("checked");
        let (sim, done) = py.detach(move || {
            guarded("run", move || {
                let done = sim.run_until(t_ps);
                (sim, done)
            })
        })?;
        self.sim = Some(sim);
        Ok(done)
    }

    /// Length of an agent observation (0 without an `[agent]` table).
    #[getter]
    fn obs_dim(&self) -> PyResult<usize> {
        Ok(self.core()?.obs_dim())
    }

    /// Agent decisions requested so far.
    #[getter]
    fn decisions(&self) -> PyResult<u64> {
        Ok(self.core()?.agent_decisions())
    }

    /// Runs until the policy must act; returns (over, batch) where batch maps
    /// `flow`, `time_s`, `obs` (K x D), `reward`, `done`, `truncated` to arrays.
    fn agent_step<'py>(&mut self, py: Python<'py>) -> PyResult<(bool, Bound<'py, PyDict>)> {
        self.core()?;
        let mut sim = self.sim.take().expect("checked");
        let (sim, res) = py.detach(move || {
            guarded("agent step", move || {
                let r = sim.agent_step();
                (sim, r)
            })
        })?;
        self.sim = Some(sim);
        let over = res.map_err(pyo3::exceptions::PyRuntimeError::new_err)?;
        let core = self.core()?;
        let dim = core.obs_dim();
        let batch = core.batch().cloned().unwrap_or_default();
        let d = batch_dict(py, batch, dim, None)?;
        add_queue_group(py, &d, core, None)?;
        Ok((over, d))
    }

    /// Observation width of a switch-queue agent (0 without `agent.queues`).
    #[getter]
    fn queue_obs_dim(&self) -> PyResult<usize> {
        Ok(self.core()?.queue_obs_dim())
    }

    /// The (port, data queue) of each switch-queue agent, by agent id.
    fn queue_agent_targets(&self) -> PyResult<Vec<(u32, usize)>> {
        let core = self.core()?;
        Ok((0..core.queue_agents() as u32).filter_map(|i| core.queue_agent_target(i)).collect())
    }

    /// The ECN profile (kmin bytes, kmax bytes, pmax) of data queue `queue` of
    /// port `port`, or None when it does not mark.
    fn queue_ecn(&self, port: u32, queue: usize) -> PyResult<Option<(u64, u64, f64)>> {
        let core = self.core()?;
        let pt = core.ports().get(port as usize).ok_or_else(|| pyo3::exceptions::PyIndexError::new_err("no port"))?;
        let q = pt.queues.get(queue).ok_or_else(|| pyo3::exceptions::PyIndexError::new_err("no queue"))?;
        Ok(q.red.map(|r| (r.kmin, r.kmax, r.pmax)))
    }

    /// Answers the last batch with one action per entry.
    fn agent_act(&mut self, actions: PyReadonlyArray1<'_, f32>) -> PyResult<()> {
        let actions = actions.as_slice()?.to_vec();
        let sim = self.sim.as_mut().ok_or_else(|| InternalError::new_err("the simulation failed earlier"))?;
        guarded("agent act", || sim.agent_act(&actions))?.map_err(pyo3::exceptions::PyValueError::new_err)
    }

    /// The summary of what has run so far, as JSON text.
    fn summary(&self) -> PyResult<String> {
        let sim = self.core()?;
        guarded("summary", || sim.summary().to_string())
    }

    /// Runs to the end and returns (summary JSON, tables). With `tables=False`
    /// the tables are neither built nor handed over (an empty dict): for
    /// callers that need only the summary, which then do not import numpy.
    #[pyo3(signature = (tables = true))]
    fn finish<'py>(&mut self, py: Python<'py>, tables: bool) -> PyResult<(String, Bound<'py, PyDict>)> {
        let end = self.core()?.end();
        self.run_until(py, end)?;
        let sim = self.core()?;
        let summary = guarded("results", || sim.summary().to_string())?;
        let out = PyDict::new(py);
        if !tables {
            return Ok((summary, out));
        }
        for t in guarded("results", || sim.tables())? {
            let cols = PyDict::new(py);
            for (name, col) in t.columns {
                match col {
                    Column::F64(v) => cols.set_item(name, v.into_pyarray(py))?,
                    Column::U64(v) => cols.set_item(name, v.into_pyarray(py))?,
                    Column::Str(v) => cols.set_item(name, v)?,
                }
            }
            out.set_item(t.name, cols)?;
        }
        Ok((summary, out))
    }

    /// Sets the rate of one link direction to `rate_bps` (bit/s) from now on,
    /// forgetting later steps of its `[[link]]` schedule. `port` is the global
    /// id of the transmitting port or its name, `"from->to"` (e.g.
    /// `"sw0->h0"`). A packet being serialised keeps its end. The endpoints
    /// keep what they took from their NIC's rate at set-up (a sender's CC
    /// line rate, a receiver-driven transport's downlink budget). ValueError for
    /// an unknown port, a rate that is not a positive finite number, or a
    /// link driven by a mahimahi trace.
    fn set_link_rate(&mut self, port: &Bound<'_, PyAny>, rate_bps: f64) -> PyResult<()> {
        let sim = self.sim.as_mut().ok_or_else(|| InternalError::new_err("the simulation failed earlier"))?;
        let id = if let Ok(id) = port.extract::<u32>() {
            id
        } else if let Ok(name) = port.extract::<String>() {
            (0..sim.ports().len() as u32).find(|&p| sim.port_name(p) == name).ok_or_else(|| {
                PyValueError::new_err(format!("no link direction named {name:?} (names are \"from->to\")"))
            })?
        } else {
            return Err(PyValueError::new_err("port must be a port id (int) or a name \"from->to\""));
        };
        if !(rate_bps.is_finite() && rate_bps >= 1.0 && rate_bps <= u64::MAX as f64) {
            return Err(PyValueError::new_err(format!("rate_bps must be a positive number of bit/s, not {rate_bps}")));
        }
        guarded("set link rate", || sim.set_link_rate(id, rate_bps.round() as u64))?.map_err(PyValueError::new_err)
    }
    // ---- Run-time control of switch queues (docs/env.md, "Switch queues")

    /// The data-carrying switch queues: a dict of `port` and `queue` (int64
    /// arrays) and `node` and `peer` (lists of names: the switch and the node
    /// the port sends to), one entry per queue.
    fn switch_queues<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let qs = self.core()?.data_queues();
        let d = PyDict::new(py);
        d.set_item("port", qs.iter().map(|q| q.port as i64).collect::<Vec<_>>().into_pyarray(py))?;
        d.set_item("queue", qs.iter().map(|q| q.queue as i64).collect::<Vec<_>>().into_pyarray(py))?;
        d.set_item("node", qs.iter().map(|q| q.node.clone()).collect::<Vec<_>>())?;
        d.set_item("peer", qs.into_iter().map(|q| q.peer).collect::<Vec<_>>())?;
        Ok(d)
    }

    /// Counters of the queues (`ports[i]`, `queues[i]`) since each was last
    /// reset: a dict of arrays `interval_s`, `tx_bytes`, `ecn_bytes`, `drops`,
    /// `drop_bytes`, `mean_bytes` (time-weighted), `max_bytes`, `bytes` (now).
    /// With `reset` (default) each queue starts a new interval.
    #[pyo3(signature = (ports, queues, reset = true))]
    fn queue_stats<'py>(
        &mut self,
        py: Python<'py>,
        ports: Vec<i64>,
        queues: Vec<i64>,
        reset: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let pairs = queue_pairs(&ports, &queues)?;
        let sim = self.sim.as_mut().ok_or_else(|| InternalError::new_err("the simulation failed earlier"))?;
        let st = guarded("queue stats", || sim.queue_stats(&pairs, reset))?.map_err(PyValueError::new_err)?;
        let d = PyDict::new(py);
        let col = |f: fn(&ccgym_sim::sim::QueueStats) -> u64| st.iter().map(f).collect::<Vec<u64>>();
        d.set_item("interval_s", st.iter().map(|s| s.interval as f64 * 1e-12).collect::<Vec<_>>().into_pyarray(py))?;
        d.set_item("tx_bytes", col(|s| s.tx_bytes).into_pyarray(py))?;
        d.set_item("ecn_bytes", col(|s| s.ecn_bytes).into_pyarray(py))?;
        d.set_item("drops", col(|s| s.drops).into_pyarray(py))?;
        d.set_item("drop_bytes", col(|s| s.drop_bytes).into_pyarray(py))?;
        d.set_item("mean_bytes", st.iter().map(|s| s.mean_bytes).collect::<Vec<_>>().into_pyarray(py))?;
        d.set_item("max_bytes", col(|s| s.max_bytes).into_pyarray(py))?;
        d.set_item("bytes", col(|s| s.bytes).into_pyarray(py))?;
        Ok(d)
    }

    /// Sets the RED ECN ramp of the queues (`ports[i]`, `queues[i]`) to
    /// (`kmin[i]`, `kmax[i]` bytes, `pmax[i]`); effective from the next packet.
    /// Nothing changes if any entry is wrong (ValueError).
    fn set_ecn(
        &mut self,
        ports: Vec<i64>,
        queues: Vec<i64>,
        kmin: Vec<i64>,
        kmax: Vec<i64>,
        pmax: Vec<f64>,
    ) -> PyResult<()> {
        let pairs = queue_pairs(&ports, &queues)?;
        if kmin.len() != pairs.len() || kmax.len() != pairs.len() || pmax.len() != pairs.len() {
            return Err(PyValueError::new_err(format!(
                "ports, queues, kmin, kmax and pmax must have the same length (got {}, {}, {}, {}, {})",
                ports.len(),
                queues.len(),
                kmin.len(),
                kmax.len(),
                pmax.len()
            )));
        }
        let mut reds = Vec::with_capacity(pairs.len());
        for i in 0..pairs.len() {
            if kmin[i] < 0 || kmax[i] < 0 {
                return Err(PyValueError::new_err(format!("entry {i}: kmin and kmax must be byte counts >= 0")));
            }
            reds.push(Some(Red { kmin: kmin[i] as u64, kmax: kmax[i] as u64, pmax: pmax[i] }));
        }
        let sim = self.sim.as_mut().ok_or_else(|| InternalError::new_err("the simulation failed earlier"))?;
        guarded("set_ecn", || sim.set_ecn_many(&pairs, &reds))?.map_err(PyValueError::new_err)
    }

    /// Sets the scheduling weight of the queues (`ports[i]`, `queues[i]`) to
    /// `weights[i]` (> 0; packets per WRR visit or DRR quanta). Nothing
    /// changes if any entry is wrong (ValueError).
    fn set_weights(&mut self, ports: Vec<i64>, queues: Vec<i64>, weights: Vec<i64>) -> PyResult<()> {
        let pairs = queue_pairs(&ports, &queues)?;
        if weights.len() != pairs.len() {
            return Err(PyValueError::new_err(format!("{} queues but {} weights", pairs.len(), weights.len())));
        }
        let w = weights
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                u32::try_from(w)
                    .ok()
                    .filter(|&w| w > 0)
                    .ok_or_else(|| PyValueError::new_err(format!("entry {i}: weight {w} must be from 1 to 2^32 - 1")))
            })
            .collect::<PyResult<Vec<u32>>>()?;
        let sim = self.sim.as_mut().ok_or_else(|| InternalError::new_err("the simulation failed earlier"))?;
        guarded("set_weights", || sim.set_weights_many(&pairs, &w))?.map_err(PyValueError::new_err)
    }

    /// Sets the HOPASS class weights of every receiver: one weight (> 0) per
    /// data class 1..queues-1, normalised so that the smallest is 1 for the
    /// token back-off R <- R (1 - alpha / (2 w)). Effective from each
    /// class's next back-off; the switches' WRR weights and ECN thresholds
    /// are set separately (`set_weights`, `set_ecn`). ValueError if the list
    /// is wrong; nothing changes then.
    fn set_hopass_weights(&mut self, weights: Vec<f64>) -> PyResult<()> {
        let sim = self.sim.as_mut().ok_or_else(|| InternalError::new_err("the simulation failed earlier"))?;
        guarded("set_hopass_weights", || sim.set_hopass_weights(&weights))?.map_err(PyValueError::new_err)
    }

    /// The HOPASS class weights in force, class `c` at index `c - 1`.
    fn hopass_weights(&self) -> PyResult<Vec<f64>> {
        Ok(self.core()?.hopass_weights().to_vec())
    }

    /// The HOPASS token rate (bit/s) of each class at each host's receiver:
    /// a list per host, class `c` at index `c - 1`; empty if no flow uses
    /// the HOPASS transport.
    fn hopass_rates(&self) -> PyResult<Vec<Vec<f64>>> {
        let sim = self.core()?;
        Ok((0..sim.hosts().len() as u32).map_while(|h| sim.hopass_class_rates(h)).collect())
    }
}

/// Pairs up port and queue ids given from Python, rejecting negative or
/// oversized ids and unequal lengths.
fn queue_pairs(ports: &[i64], queues: &[i64]) -> PyResult<Vec<(u32, usize)>> {
    if ports.len() != queues.len() {
        return Err(PyValueError::new_err(format!(
            "ports and queues must have the same length (got {} and {})",
            ports.len(),
            queues.len()
        )));
    }
    ports
        .iter()
        .zip(queues)
        .map(|(&p, &q)| match (u32::try_from(p), usize::try_from(q)) {
            (Ok(p), Ok(q)) => Ok((p, q)),
            _ => Err(PyValueError::new_err(format!("no switch queue (port {p}, queue {q})"))),
        })
        .collect()
}

/// Turns a batch into a dict of numpy arrays (`sim` added when `sim_index` is given).
fn batch_dict<'py>(py: Python<'py>, b: Batch, dim: usize, sim_index: Option<Vec<u32>>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let k = b.flows.len();
    if let Some(s) = sim_index {
        d.set_item("sim", s.into_pyarray(py))?;
    }
    d.set_item("flow", b.flows.into_pyarray(py))?;
    d.set_item("time_s", b.times.iter().map(|&t| t as f64 * 1e-12).collect::<Vec<f64>>().into_pyarray(py))?;
    d.set_item("obs", b.obs.into_pyarray(py).reshape([k, dim])?)?;
    d.set_item("reward", b.rewards.into_pyarray(py))?;
    d.set_item("done", b.done.into_pyarray(py))?;
    d.set_item("truncated", b.truncated.into_pyarray(py))?;
    Ok(d)
}

/// Adds the switch-queue agent group under `queue` when the simulation has
/// queue agents: `agent`, `time_s`, `obs` (K x Dq), `reward`, `done`,
/// `truncated` (and `sim` in a pool). Flow-only scenarios keep today's dict.
fn add_queue_group(py: Python<'_>, d: &Bound<'_, PyDict>, core: &Core, sim_index: Option<Vec<u32>>) -> PyResult<()> {
    if core.queue_agents() == 0 {
        return Ok(());
    }
    let b = core.queue_batch().cloned().unwrap_or_default();
    let g = batch_dict(py, b, core.queue_obs_dim(), sim_index)?;
    let ids = g.get_item("flow")?.expect("batch_dict sets flow");
    g.set_item("agent", ids)?;
    g.del_item("flow")?;
    d.set_item("queue", g)
}

/// Several simulations stepped together: one batch holds the decisions of
/// all of them, and the simulations run on all cores when there is enough work between batches.
#[pyclass(module = "ccgym._sim")]
struct Pool {
    sims: Vec<Option<Core>>,
    over: Vec<bool>,
    dim: usize,
    /// Entries per simulation in the last batch (to split the actions).
    last_counts: Vec<usize>,
    /// Switch-queue agent observation width (0: no queue agents in the pool).
    qdim: usize,
    /// Queue-group entries per simulation in the last batch.
    last_qcounts: Vec<usize>,
    /// Wall nanoseconds each simulation took to reach the last batch: the forecast of the next
    /// step's work, which decides whether stepping in parallel pays for waking the workers.
    last_work_ns: Vec<u64>,
}

/// Work (ns) that the simulations other than the longest one must have for a parallel step to
/// pay: about what waking a rayon worker and joining it cost on the 2-core development machine
/// (measured: 2 x 1024-to-1 pool, probe trigger, zero policy delay; 6 us per step for one
/// simulation, 20 us for two in parallel).
const PARALLEL_STEP_MIN_NS: u64 = 15_000;

#[pymethods]
impl Pool {
    /// Builds one simulation per (scenario JSON, base dir); all must share
    /// the observation length.
    #[new]
    fn new(py: Python<'_>, scenarios: Vec<(String, String)>) -> PyResult<Self> {
        let built = py.detach(move || {
            guarded("set-up", move || {
                scenarios.iter().map(|(j, d)| Core::from_json(j, Path::new(d))).collect::<Vec<_>>()
            })
        })?;
        let mut sims = vec![];
        for (i, b) in built.into_iter().enumerate() {
            sims.push(Some(b.map_err(|e| ScenarioError::new_err(format!("scenario {i}: {e}")))?));
        }
        let dims: Vec<usize> = sims.iter().map(|s| s.as_ref().unwrap().obs_dim()).collect();
        if dims.contains(&0) {
            return Err(ScenarioError::new_err("every scenario of a pool needs an [agent] table with external policy"));
        }
        if dims.iter().any(|&d| d != dims[0]) {
            return Err(ScenarioError::new_err(format!("observation lengths differ across the pool: {dims:?}")));
        }
        let qdims: Vec<usize> = sims.iter().map(|s| s.as_ref().unwrap().queue_obs_dim()).collect();
        if qdims.iter().any(|&d| d != qdims[0]) {
            return Err(ScenarioError::new_err(format!(
                "queue-agent observation widths differ across the pool: {qdims:?}"
            )));
        }
        let n = sims.len();
        Ok(Pool {
            sims,
            over: vec![false; n],
            dim: dims[0],
            last_counts: vec![0; n],
            qdim: qdims[0],
            last_qcounts: vec![0; n],
            last_work_ns: vec![PARALLEL_STEP_MIN_NS; n],
        })
    }

    /// Number of simulations.
    fn __len__(&self) -> usize {
        self.sims.len()
    }

    /// Observation length.
    #[getter]
    fn obs_dim(&self) -> usize {
        self.dim
    }

    /// Which simulations have reached their end.
    #[getter]
    fn over(&self) -> Vec<bool> {
        self.over.clone()
    }

    /// Events processed by each simulation.
    #[getter]
    fn events(&self) -> Vec<u64> {
        self.sims.iter().map(|s| s.as_ref().map_or(0, |s| s.event_count())).collect()
    }

    /// Steps every simulation that is not over (in parallel when the last step's
    /// work was worth waking a worker for) and returns one batch: `sim`, `flow`,
    /// `time_s`, `obs`, `reward`, `done`, `truncated`.
    fn step<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut sims: Vec<Option<Core>> = self.sims.iter_mut().map(|s| s.take()).collect();
        let over = self.over.clone();
        // Parallel only when the last step's work beyond its longest simulation outweighs
        // waking the workers: with a small policy delay a batch holds a few decisions and the
        // simulations run a few microseconds between two of them.
        let live: Vec<u64> = (0..sims.len()).filter(|&i| !over[i]).map(|i| self.last_work_ns[i]).collect();
        let longest = live.iter().copied().max().unwrap_or(0);
        let parallel = live.len() > 1 && live.iter().sum::<u64>() - longest >= PARALLEL_STEP_MIN_NS;
        let (sims, results) = py.detach(move || {
            guarded("pool step", move || {
                let step = |s: &mut Option<Core>, o: bool| -> (Result<bool, String>, u64) {
                    let t0 = Instant::now();
                    let r = match s.as_mut() {
                        Some(sim) if !o => sim.agent_step(),
                        _ => Ok(true),
                    };
                    (r, t0.elapsed().as_nanos() as u64)
                };
                let mut results: Vec<(Result<bool, String>, u64)> = vec![(Ok(true), 0); sims.len()];
                let pairs = sims.iter_mut().zip(over.iter()).zip(results.iter_mut());
                if parallel {
                    // The calling thread steps the first simulation and rayon's persistent
                    // workers the others: one worker fewer to wake.
                    rayon::in_place_scope(|scope| {
                        let mut pairs = pairs;
                        let first = pairs.next();
                        for ((s, &o), r) in pairs {
                            scope.spawn(move |_| *r = step(s, o));
                        }
                        if let Some(((s, &o), r)) = first {
                            *r = step(s, o);
                        }
                    });
                } else {
                    for ((s, &o), r) in pairs {
                        *r = step(s, o);
                    }
                }
                (sims, results)
            })
        })?;
        self.sims = sims;
        for (w, (_, ns)) in self.last_work_ns.iter_mut().zip(&results) {
            *w = *ns;
        }
        let results = results.into_iter().map(|(r, _)| r);
        let mut merged = Batch::default();
        let mut index = vec![];
        let mut qmerged = Batch::default();
        let mut qindex = vec![];
        for (i, r) in results.enumerate() {
            let sim = self.sims[i].as_ref().ok_or_else(|| InternalError::new_err("a simulation failed earlier"))?;
            if self.over[i] {
                self.last_counts[i] = 0;
                self.last_qcounts[i] = 0;
                continue;
            }
            self.over[i] = r.map_err(pyo3::exceptions::PyRuntimeError::new_err)?;
            let b = sim.batch().expect("agent scenario");
            self.last_counts[i] = b.len();
            index.extend(std::iter::repeat_n(i as u32, b.len()));
            merged.append(b);
            let qb = sim.queue_batch().expect("agent scenario");
            self.last_qcounts[i] = qb.len();
            qindex.extend(std::iter::repeat_n(i as u32, qb.len()));
            qmerged.append(qb);
        }
        let d = batch_dict(py, merged, self.dim, Some(index))?;
        if self.qdim > 0 {
            let g = batch_dict(py, qmerged, self.qdim, Some(qindex))?;
            let ids = g.get_item("flow")?.expect("batch_dict sets flow");
            g.set_item("agent", ids)?;
            g.del_item("flow")?;
            d.set_item("queue", g)?;
        }
        Ok(d)
    }

    /// Answers the last pooled batch, one action per entry.
    fn act(&mut self, actions: PyReadonlyArray1<'_, f32>) -> PyResult<()> {
        let actions = actions.as_slice()?;
        let flow_total: usize = self.last_counts.iter().sum();
        let total: usize = flow_total + self.last_qcounts.iter().sum::<usize>();
        if actions.len() != total {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "expected {total} actions (one per batch entry), got {}",
                actions.len()
            )));
        }
        // The flow group of every simulation comes first, then the queue group;
        // each simulation takes its flow actions followed by its queue actions.
        // Every simulation's actions are checked before any simulation acts, so a
        // rejected answer leaves the whole pool waiting for a corrected one.
        for check in [true, false] {
            let (mut at, mut qat) = (0, flow_total);
            for (i, (&n, &qn)) in self.last_counts.iter().zip(&self.last_qcounts).enumerate() {
                let Some(sim) = self.sims[i].as_mut() else { continue };
                // Without queue agents the flow part is passed as it is (no copy).
                let joined: Vec<f32>;
                let part = if qn == 0 {
                    &actions[at..at + n]
                } else {
                    joined = [&actions[at..at + n], &actions[qat..qat + qn]].concat();
                    &joined[..]
                };
                at += n;
                qat += qn;
                // A simulation that was already over contributed nothing to the batch.
                if n + qn > 0 {
                    let r = if check {
                        guarded("pool act", || sim.check_agent_actions(part))?
                    } else {
                        guarded("pool act", || sim.agent_act(part))?
                    };
                    r.map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("simulation {i}: {e}")))?;
                }
            }
        }
        Ok(())
    }

    /// Replaces simulation `i` by a new one (a new episode), e.g. another seed.
    fn reset(&mut self, py: Python<'_>, i: usize, scenario_json: String, base_dir: String) -> PyResult<()> {
        if i >= self.sims.len() {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!("no simulation {i}")));
        }
        let built =
            py.detach(move || guarded("set-up", move || Core::from_json(&scenario_json, Path::new(&base_dir))))?;
        let sim = built.map_err(|e| ScenarioError::new_err(e.to_string()))?;
        if sim.obs_dim() != self.dim || sim.queue_obs_dim() != self.qdim {
            return Err(ScenarioError::new_err("the new scenario's observation length differs from the pool's"));
        }
        self.sims[i] = Some(sim);
        self.over[i] = false;
        self.last_counts[i] = 0;
        self.last_qcounts[i] = 0;
        self.last_work_ns[i] = PARALLEL_STEP_MIN_NS;
        Ok(())
    }

    /// Summary (JSON text) of simulation `i`.
    fn summary(&self, i: usize) -> PyResult<String> {
        let sim = self
            .sims
            .get(i)
            .and_then(|s| s.as_ref())
            .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err(format!("no simulation {i}")))?;
        guarded("summary", || sim.summary().to_string())
    }

    /// Switch-queue agent observation width (0: no queue agents in the pool).
    #[getter]
    fn queue_obs_dim(&self) -> usize {
        self.qdim
    }

    /// The (port, data queue) of each switch-queue agent of simulation `i`, by agent id.
    fn queue_agent_targets(&self, i: usize) -> PyResult<Vec<(u32, usize)>> {
        let sim = self
            .sims
            .get(i)
            .and_then(|s| s.as_ref())
            .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err(format!("no simulation {i}")))?;
        Ok((0..sim.queue_agents() as u32).filter_map(|a| sim.queue_agent_target(a)).collect())
    }
}

/// A policy file's network for native evaluation in `precision` (`float32` or `int8`).
fn load_mlp(policy_json: &str, precision: &str) -> PyResult<ccgym_sim::policy::Mlp> {
    use ccgym_sim::policy::{Mlp, Precision};
    let precision = match precision {
        "float32" => Precision::Float32,
        "int8" => Precision::Int8,
        other => return Err(PyValueError::new_err(format!("precision must be float32 or int8, not {other:?}"))),
    };
    Mlp::from_json(policy_json, precision).map_err(PyValueError::new_err)
}

/// Evaluates a policy file's network natively, as the simulator does, on each row of
/// `obs` (K x inputs, float32); returns the outputs (K x outputs, float32; with
/// `all_outputs`, every output of the last layer, not only the action's). A
/// recurrent (version-2) network takes the rows as consecutive decisions of one
/// agent, from a zero state, with `extra` (K x 1, the agent's last reward; default
/// zeros) for its concat steps.
#[pyfunction]
#[pyo3(signature = (policy_json, obs, precision = "float32", extra = None, all_outputs = false))]
fn policy_forward<'py>(
    py: Python<'py>,
    policy_json: &str,
    obs: PyReadonlyArray2<'py, f32>,
    precision: &str,
    extra: Option<PyReadonlyArray2<'py, f32>>,
    all_outputs: bool,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let mlp = load_mlp(policy_json, precision)?;
    let obs = obs.as_array();
    let n_out = if all_outputs { mlp.all_outputs() } else { mlp.outputs() };
    let (k, n_in) = (obs.nrows(), mlp.inputs());
    if mlp.state_len() > 0 || mlp.extra_inputs() > 0 {
        if obs.ncols() != n_in {
            return Err(PyValueError::new_err(format!(
                "the policy takes {n_in} inputs, obs has {} columns",
                obs.ncols()
            )));
        }
        let extra = extra.as_ref().map(|e| e.as_array());
        if let Some(e) = &extra {
            if e.nrows() != k || e.ncols() != 1 {
                return Err(PyValueError::new_err(format!("extra must be {k} x 1 (the last reward of each row)")));
            }
        }
        let mut out = vec![0.0f32; k * n_out];
        let mut scratch = vec![0.0f32; mlp.scratch_len()];
        let mut state = vec![0.0f32; mlp.state_len()];
        let x: Vec<f32> = obs.iter().copied().collect();
        for (t, o) in out.chunks_exact_mut(n_out.max(1)).enumerate() {
            let r = extra.as_ref().map_or(0.0, |e| e[[t, 0]]);
            let ex = [r; ccgym_sim::policy::MAX_EXTRA];
            mlp.forward_step(&x[t * n_in..(t + 1) * n_in], &ex, &mut state, o, &mut scratch);
        }
        return out.into_pyarray(py).reshape([k, n_out]);
    }
    if obs.ncols() != n_in {
        return Err(PyValueError::new_err(format!("the policy takes {n_in} inputs, obs has {} columns", obs.ncols())));
    }
    let mut out = vec![0.0f32; k * n_out];
    let mut scratch = vec![0.0f32; mlp.scratch_len()];
    let mut x = vec![0.0f32; n_in];
    for (row, o) in obs.rows().into_iter().zip(out.chunks_exact_mut(n_out.max(1))) {
        for (xi, v) in x.iter_mut().zip(row) {
            *xi = *v;
        }
        mlp.forward(&x, o, &mut scratch);
    }
    out.into_pyarray(py).reshape([k, n_out])
}

/// Times the native evaluation of a policy file's network: mean nanoseconds
/// per forward pass over `iterations` passes on varied inputs.
#[pyfunction]
#[pyo3(signature = (policy_json, iterations = 1_000_000, precision = "float32"))]
fn bench_policy(py: Python<'_>, policy_json: &str, iterations: u64, precision: &str) -> PyResult<f64> {
    let mlp = load_mlp(policy_json, precision)?;
    py.detach(move || {
        let n_in = mlp.inputs();
        let mut scratch = vec![0.0f32; mlp.scratch_len()];
        let mut out = vec![0.0f32; mlp.outputs()];
        let mut x = vec![0.0f32; n_in];
        let mut acc = 0.0f32;
        let t0 = Instant::now();
        for i in 0..iterations {
            // Vary the input so the work cannot be hoisted out of the loop.
            x[i as usize % n_in] = (i % 97) as f32 * 0.01 - 0.4;
            mlp.forward(&x, &mut out, &mut scratch);
            acc += out[0];
        }
        let ns = t0.elapsed().as_nanos() as f64 / iterations.max(1) as f64;
        std::hint::black_box(acc);
        Ok(ns)
    })
}

/// A parameter of a CC algorithm: (name, default, help).
type ParamRow = (String, String, String);

/// Names, summaries and parameters of the built-in CC algorithms.
#[pyfunction]
fn cc_catalogue() -> Vec<(String, String, Vec<ParamRow>)> {
    ccgym_sim::cc::catalogue()
        .into_iter()
        .map(|c| {
            (
                c.name.to_string(),
                c.summary.to_string(),
                c.params.iter().map(|p| (p.name.to_string(), p.default.to_string(), p.help.to_string())).collect(),
            )
        })
        .collect()
}

// ---- Agent names and defaults, exported so Python does not copy them ----

/// The defaults of the scenario's `[agent]` table (`AgentConfig::default()`),
/// as a dict in scenario form (durations as strings such as "10us").
#[pyfunction]
fn agent_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let text = serde_json::to_string(&ccgym_sim::config::AgentConfig::default())
        .map_err(|e| InternalError::new_err(format!("agent defaults: {e}")))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// Feature names accepted in `agent.features`, in the core's order.
#[pyfunction]
fn agent_feature_names() -> Vec<&'static str> {
    ccgym_sim::cc::agent::FEATURES.iter().map(|(n, _)| *n).collect()
}

/// Reward names accepted in `agent.reward`.
#[pyfunction]
fn agent_reward_names() -> Vec<&'static str> {
    ccgym_sim::cc::agent::REWARDS.iter().map(|(n, _)| *n).collect()
}

/// Action mappings accepted in `agent.action`.
#[pyfunction]
fn agent_action_names() -> Vec<&'static str> {
    ccgym_sim::cc::agent::ACTIONS.to_vec()
}

/// Decision triggers accepted in `agent.trigger`.
#[pyfunction]
fn agent_trigger_names() -> Vec<&'static str> {
    ccgym_sim::cc::agent::TRIGGERS.to_vec()
}

/// Feature names of one switch-queue agent observation row, in order.
#[pyfunction]
fn agent_queue_feature_names() -> Vec<&'static str> {
    ccgym_sim::sim::QUEUE_FEATURES.to_vec()
}

/// The keys agent preset `name` fills (`agent.preset`), as a dict in scenario
/// form; `ValueError` naming the known presets for an unknown name.
#[pyfunction]
fn agent_preset<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let Some(table) = ccgym_sim::cc::agent::preset_table(name) else {
        let known: Vec<_> = ccgym_sim::cc::agent::PRESETS.iter().map(|(n, _)| *n).collect();
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "unknown agent preset {name:?}; known: {}",
            known.join(", ")
        )));
    };
    py.import("json")?.call_method1("loads", (serde_json::Value::Object(table).to_string(),))
}

/// Names of MVFST-RL's per-event fields and of their aggregates, in
/// observation order (`mvfst_state`: one block of fields per aggregate).
#[pyfunction]
fn agent_mvfst_names() -> (Vec<&'static str>, Vec<&'static str>) {
    (ccgym_sim::cc::agent::MVFST_FIELDS.to_vec(), ccgym_sim::cc::agent::MVFST_AGGREGATES.to_vec())
}

/// What a scenario (JSON text) would cost, computed without building it:
/// flows, messages, events and memory, by cause, with the budgets of its
/// `[limits]` table and `refused` (the error a build would raise, or None).
/// Returns JSON text; a scenario the checks refuse raises `ScenarioError`.
#[pyfunction]
fn estimate(py: Python<'_>, scenario_json: &str, base_dir: &str) -> PyResult<String> {
    let json = scenario_json.to_owned();
    let dir = base_dir.to_owned();
    let v = py.detach(move || guarded("estimate", move || Core::estimate_json(&json, Path::new(&dir))))?;
    v.map(|v| v.to_string()).map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// A time as scenario files write it ("20ms", "1.5 us", "2s"; a number
/// alone is seconds) in picoseconds, by the simulator's own parser, so that
/// Python reads the times of scenarios and configs exactly as the core does.
#[pyfunction]
fn parse_time_ps(text: &str) -> PyResult<u64> {
    ccgym_sim::units::parse_time(text).map_err(PyValueError::new_err)
}

#[pymodule]
fn _sim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("InternalError", m.py().get_type::<InternalError>())?;
    m.add("AURORA_ACTION_BOUND", ccgym_sim::cc::agent::AURORA_ACTION_BOUND)?;
    m.add("MVFST_ACTIONS", ccgym_sim::cc::agent::MVFST_ACTIONS)?;
    m.add_class::<Simulation>()?;
    m.add_class::<Pool>()?;
    m.add_function(wrap_pyfunction!(cc_catalogue, m)?)?;
    m.add_function(wrap_pyfunction!(bench_policy, m)?)?;
    m.add_function(wrap_pyfunction!(policy_forward, m)?)?;
    m.add_function(wrap_pyfunction!(agent_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(agent_feature_names, m)?)?;
    m.add_function(wrap_pyfunction!(agent_reward_names, m)?)?;
    m.add_function(wrap_pyfunction!(agent_action_names, m)?)?;
    m.add_function(wrap_pyfunction!(agent_trigger_names, m)?)?;
    m.add_function(wrap_pyfunction!(agent_queue_feature_names, m)?)?;
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(agent_preset, m)?)?;
    m.add_function(wrap_pyfunction!(agent_mvfst_names, m)?)?;
    m.add_function(wrap_pyfunction!(parse_time_ps, m)?)?;
    Ok(())
}
