//! Python bindings of the ccgym simulator: the module `ccgym._sim`.
//!
//! Thin by design: it converts the scenario, hands results over as numpy
//! arrays, releases the GIL while simulating, and turns every failure into a
//! Python exception — a user mistake into `ScenarioError`, a simulator bug
//! (a Rust panic) into `InternalError`, never a crash.

use ccgym_sim::{Column, Simulation as Core};
use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

create_exception!(
    _sim,
    ScenarioError,
    PyValueError,
    "A scenario the simulator cannot run; the message names the field and the value."
);
create_exception!(
    _sim,
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
        Ok(self.core()?.event_count)
    }

    /// Packet transmissions over links so far.
    #[getter]
    fn packet_hops(&self) -> PyResult<u64> {
        Ok(self.core()?.packet_hops)
    }

    /// Wall time of building the simulation, in seconds.
    #[getter]
    fn setup_seconds(&self) -> f64 {
        self.setup_seconds
    }

    /// Advances to `t_ps` (capped at the end); returns True when the run is over.
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<bool> {
        self.core()?;
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

    /// The summary of what has run so far, as JSON text.
    fn summary(&self) -> PyResult<String> {
        let sim = self.core()?;
        guarded("summary", || sim.summary().to_string())
    }

    /// Runs to the end and returns (summary JSON, tables).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<(String, Bound<'py, PyDict>)> {
        let end = self.core()?.end();
        self.run_until(py, end)?;
        let sim = self.core()?;
        let (summary, tables) = guarded("results", || (sim.summary().to_string(), sim.tables()))?;
        let out = PyDict::new(py);
        for t in tables {
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

#[pymodule]
fn _sim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("InternalError", m.py().get_type::<InternalError>())?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(cc_catalogue, m)?)?;
    Ok(())
}
