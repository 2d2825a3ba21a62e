//! `madstack._native`: the pyo3 bindings of the madstack facade's front
//! door (`madstack::open`, `madstack::Port`). The Python package
//! (`python/madstack/__init__.py`) wraps these in its public API.
//!
//! Every call that waits on the fabric releases the GIL; a Rust panic in
//! a call is caught and raised as `madstack.MadError`; a `Port` used
//! after `close()` raises `madstack.ClosedError`. One `Port` may be used
//! from several Python threads: calls on it take turns.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use madstack::attr::{Input, Value};
use madstack::core::transport::AsyncEvent;
use madstack::fabric::{self, Bounds};
use madstack::sim::EndpointFault;
use madstack::{Backend, Error, Options, Target};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

create_exception!(
    madstack,
    MadError,
    PyException,
    "Any failure of madstack; `cause` holds the Rust error's text."
);
create_exception!(
    madstack,
    OpenError,
    MadError,
    "The port could not be opened."
);
create_exception!(
    madstack,
    RegistrationError,
    MadError,
    "An agent registration was refused."
);
create_exception!(
    madstack,
    MadTimeout,
    MadError,
    "No answer within the timeout and retries."
);
create_exception!(
    madstack,
    StatusError,
    MadError,
    "The answer carried a non-zero MAD status (`status`)."
);
create_exception!(madstack, ClosedError, MadError, "The Port was closed.");
create_exception!(
    madstack,
    InputError,
    MadError,
    "Bad input: an unknown attribute or field, a value that does not fit."
);

/// The Python exception of a front-door error, with `cause` and (for a
/// MAD status) `status` set.
fn to_py(e: Error) -> PyErr {
    let text = e.to_string();
    let err = match &e {
        Error::Interrupted => return PyKeyboardInterrupt::new_err("interrupted"),
        Error::Open(_) => OpenError::new_err(text.clone()),
        Error::Register(_) => RegistrationError::new_err(text.clone()),
        Error::Input(_) => InputError::new_err(text.clone()),
        _ if e.is_timeout() => MadTimeout::new_err(text.clone()),
        _ if e.status().is_some() => StatusError::new_err(text.clone()),
        _ => MadError::new_err(text.clone()),
    };
    Python::with_gil(|py| {
        let v = err.value(py);
        let _ = v.setattr("cause", text);
        let _ = v.setattr("status", e.status());
    });
    err
}

/// Runs `f` without the GIL, a panic caught and raised as `MadError`.
fn blocking<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    let r = py.allow_threads(|| catch_unwind(AssertUnwindSafe(f)));
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py(e)),
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            Err(MadError::new_err(format!(
                "internal error in madstack (Rust panic): {msg}"
            )))
        }
    }
}

/// A JSON value as the Python object `json.loads` would give.
fn json_to_py(py: Python<'_>, v: &serde_json::Value) -> PyResult<PyObject> {
    use serde_json::Value as J;
    Ok(match v {
        J::Null => py.None(),
        J::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        J::Number(n) => {
            if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any().unbind()
            } else if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any().unbind()
            } else {
                n.as_f64()
                    .unwrap_or(0.0)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind()
            }
        }
        J::String(s) => PyString::new(py, s).into_any().unbind(),
        J::Array(a) => {
            let l = PyList::empty(py);
            for x in a {
                l.append(json_to_py(py, x)?)?;
            }
            l.into_any().unbind()
        }
        J::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, json_to_py(py, x)?)?;
            }
            d.into_any().unbind()
        }
    })
}

fn value_to_py(py: Python<'_>, v: &Value) -> PyResult<PyObject> {
    Ok(match v {
        Value::Uint(u) => u.into_pyobject(py)?.into_any().unbind(),
        Value::Text(s) => PyString::new(py, s).into_any().unbind(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any().unbind(),
        Value::Array(a) => PyList::new(py, a)?.into_any().unbind(),
        Value::Nested(a) => Py::new(py, Attribute::from((**a).clone()))?.into_any(),
    })
}

/// One structure read from the fabric (an SMP or PerfMgt attribute, an
/// SA record, a Notice): its fields are attributes of the object
/// (`ni.node_guid`), `to_dict()` gives what `mad --json` prints.
///
/// The answers of SMP queries keep their bytes and decode the fields when
/// one is first read (`madstack::Answer`): a batch whose answers are not
/// read field by field pays no decode.
#[pyclass(module = "madstack._native", frozen)]
struct Attribute {
    inner: madstack::Answer,
}

impl From<madstack::Attribute> for Attribute {
    fn from(a: madstack::Attribute) -> Self {
        Self { inner: a.into() }
    }
}

impl From<madstack::Answer> for Attribute {
    fn from(inner: madstack::Answer) -> Self {
        Self { inner }
    }
}

impl Attribute {
    fn attr(&self) -> &madstack::Attribute {
        self.inner.attribute()
    }
}

#[pymethods]
impl Attribute {
    /// The structure's name (`"NodeInfo"`).
    #[getter]
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// The field names, in wire order (reserved fields left out).
    #[getter]
    fn fields(&self) -> Vec<&'static str> {
        self.attr().fields.iter().map(|(n, _)| *n).collect()
    }

    /// Each field's label as smpquery / perfquery print it
    /// (`{"node_guid": "Guid", ...}`).
    #[getter]
    fn labels(&self) -> Vec<(&'static str, &'static str)> {
        let a = self.attr();
        a.fields
            .iter()
            .map(|(n, _)| *n)
            .zip(a.labels.iter().copied())
            .collect()
    }

    /// The structure's bytes as they were on the wire.
    #[getter]
    fn raw<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.bytes())
    }

    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<PyObject> {
        match self.attr().get(name) {
            Some(v) => value_to_py(py, v),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "{} has no field {name:?} (fields: {})",
                self.inner.name(),
                self.fields().join(", ")
            ))),
        }
    }

    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<PyObject> {
        match self.attr().get(name) {
            Some(v) => value_to_py(py, v),
            None => Err(pyo3::exceptions::PyKeyError::new_err(name.to_owned())),
        }
    }

    fn __dir__(&self) -> Vec<&'static str> {
        let mut v = self.fields();
        v.extend(["name", "fields", "labels", "raw", "to_dict"]);
        v
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .downcast::<Attribute>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }

    /// The fields as `mad --json` prints them: integers over 32 bits as
    /// `"0x…"` strings, text as text, other bytes as hex.
    fn to_dict(&self, py: Python<'_>) -> PyResult<PyObject> {
        json_to_py(py, &self.attr().to_json())
    }

    fn __repr__(&self) -> String {
        format!("<{} {}>", self.inner.name(), self.attr().to_json())
    }
}

/// A discovered fabric: the Rust model of `mad ibnetdiscover`, its nodes
/// read one at a time by their position in `mad ibnetdiscover --json`'s
/// `nodes` (switches, CAs, routers).
#[pyclass(module = "madstack._native", frozen)]
struct Fabric {
    d: fabric::Discovery,
    /// Position → index into the model's nodes.
    order: Vec<usize>,
    /// Index into the model's nodes → position (`usize::MAX`: not listed).
    pos: Vec<usize>,
}

impl Fabric {
    fn new(d: fabric::Discovery) -> Self {
        let order = fabric::json_order(&d);
        let mut pos = vec![usize::MAX; d.fabric.nodes.len()];
        for (k, &i) in order.iter().enumerate() {
            pos[i] = k;
        }
        Self { d, order, pos }
    }

    fn index(&self, k: usize) -> PyResult<usize> {
        self.order.get(k).copied().ok_or_else(|| {
            pyo3::exceptions::PyIndexError::new_err(format!(
                "node position {k} out of range (the fabric has {} nodes)",
                self.order.len()
            ))
        })
    }
}

#[pymethods]
impl Fabric {
    fn __len__(&self) -> usize {
        self.order.len()
    }

    /// Node `k`'s `(guid, type, description, num_ports, lid)`.
    fn node_info(&self, k: usize) -> PyResult<(u64, &'static str, String, u8, u16)> {
        let i = self.index(k)?;
        let n = &self.d.fabric.nodes[i];
        Ok((
            n.guid(),
            madstack::fabric::type_word(n.node_type()),
            fabric::node_name(&self.d, i),
            n.num_ports(),
            n.smalid,
        ))
    }

    /// Node `k` as `mad ibnetdiscover --json` writes it.
    fn node_dict(&self, py: Python<'_>, k: usize) -> PyResult<PyObject> {
        let i = self.index(k)?;
        json_to_py(py, &fabric::node_json(&self.d, i))
    }

    /// The position of the first node described `name`, or `None`.
    fn find(&self, name: &str) -> Option<usize> {
        self.order
            .iter()
            .position(|&i| fabric::node_name(&self.d, i) == name)
    }

    /// Every cable once as `(position, port, position, port)`, in the
    /// order of its first end among the nodes (ports in order).
    fn links(&self) -> Vec<(usize, u8, usize, u8)> {
        let f = &self.d.fabric;
        let mut v = Vec::new();
        for (k, &i) in self.order.iter().enumerate() {
            for p in f.nodes[i].ports.iter().skip(1).flatten() {
                let Some(r) = p.remote else { continue };
                let Some(&j) = self.pos.get(r.node) else {
                    continue;
                };
                if j == usize::MAX || (j, r.port) < (k, p.num) {
                    continue;
                }
                v.push((k, p.num, j, r.port));
            }
        }
        v
    }

    /// The `summary` object of `mad ibnetdiscover --json`.
    fn summary(&self, py: Python<'_>) -> PyResult<PyObject> {
        json_to_py(py, &fabric::summary_json(&self.d))
    }

    /// The whole `mad ibnetdiscover --json` object (envelope aside), as
    /// JSON text.
    fn to_json(&self) -> String {
        fabric::discovery_json(&self.d).to_string()
    }
}

/// A stream of the port's events.
#[pyclass(module = "madstack._native", frozen)]
struct Events {
    inner: Mutex<Option<madstack::Events>>,
}

#[pymethods]
impl Events {
    /// The next event's name (`"port_error"`, `"lid_change"`, ...), or
    /// `None` when none came within `timeout` seconds. Ctrl-C interrupts
    /// the wait.
    #[pyo3(signature = (timeout=None))]
    fn next(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<&'static str>> {
        let end = timeout.map(|t| std::time::Instant::now() + Duration::from_secs_f64(t.max(0.0)));
        loop {
            let slice = match end {
                Some(e) => match e.checked_duration_since(std::time::Instant::now()) {
                    Some(left) => left.min(Duration::from_millis(100)),
                    None => return Ok(None),
                },
                None => Duration::from_millis(100),
            };
            let got = blocking(py, || {
                let g = self
                    .inner
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let ev = g
                    .as_ref()
                    .ok_or_else(|| Error::Input("the event stream was closed".into()))?;
                Ok(ev.next(slice))
            })
            .map_err(|e| {
                if e.to_string().contains("was closed") {
                    ClosedError::new_err("the event stream was closed")
                } else {
                    e
                }
            })?;
            if let Some(e) = got {
                return Ok(Some(madstack::events::event_name(&e)));
            }
            py.check_signals()?;
        }
    }

    /// Stops listening (the agent is deregistered).
    fn close(&self) {
        *self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

/// An open port (see `madstack.open`).
#[pyclass(module = "madstack._native", frozen)]
struct Port {
    inner: Mutex<Option<madstack::Port>>,
}

fn guard(m: &Mutex<Option<madstack::Port>>) -> MutexGuard<'_, Option<madstack::Port>> {
    // A panic inside a call is raised as MadError; the port stays usable.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn closed() -> Error {
    Error::Input("the Port is closed".to_owned())
}

fn target(lid: Option<u16>, dr: Option<Vec<u8>>, guid: Option<u64>) -> PyResult<Target> {
    match (lid, dr, guid) {
        (Some(l), None, None) => Ok(Target::Lid(l)),
        (None, Some(d), None) => Ok(Target::Dr(d)),
        (None, None, Some(g)) => Ok(Target::Guid(g)),
        (None, None, None) => Ok(Target::Dr(Vec::new())),
        _ => Err(InputError::new_err("give one of lid=, dr= or guid=")),
    }
}

fn inputs(fields: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, Input)>> {
    let mut v = Vec::new();
    if let Some(d) = fields {
        for (k, x) in d.iter() {
            let k: String = k.extract()?;
            let i = if let Ok(n) = x.extract::<u64>() {
                Input::Uint(n)
            } else if let Ok(b) = x.extract::<Vec<u8>>().and_then(|b| {
                if x.is_instance_of::<PyBytes>() {
                    Ok(b)
                } else {
                    Err(PyValueError::new_err(""))
                }
            }) {
                Input::Bytes(b)
            } else if let Ok(s) = x.extract::<String>() {
                Input::Bytes(s.into_bytes())
            } else {
                return Err(InputError::new_err(format!(
                    "{k}= takes a non-negative integer, bytes or text, not {}",
                    x.get_type().name()?
                )));
            };
            v.push((k, i));
        }
    }
    Ok(v)
}

impl Port {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&madstack::Port) -> Result<T, Error> + Send,
    ) -> PyResult<T> {
        blocking(py, || {
            let g = guard(&self.inner);
            let p = g.as_ref().ok_or_else(closed)?;
            f(p)
        })
        .map_err(|e| {
            if e.to_string().contains("the Port is closed") {
                ClosedError::new_err("the Port is closed")
            } else {
                e
            }
        })
    }
}

/// `f` of every item of `seq` (a list read by index; any other
/// iterable through the iterator protocol), in order. A `str` is refused
/// (it iterates as characters).
fn each<'py, T>(
    seq: &Bound<'py, PyAny>,
    mut f: impl FnMut(&Bound<'py, PyAny>) -> PyResult<T>,
) -> PyResult<Vec<T>> {
    if let Ok(l) = seq.downcast::<PyList>() {
        let mut out = Vec::with_capacity(l.len());
        for x in l.iter() {
            out.push(f(&x)?);
        }
        return Ok(out);
    }
    if seq.is_instance_of::<PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "expected a sequence, not a str",
        ));
    }
    let mut out = Vec::new();
    for x in seq.try_iter()? {
        out.push(f(&x?)?);
    }
    Ok(out)
}

/// A directed route (egress port numbers) from a list, a tuple or any
/// other sequence of ints.
fn route(x: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(l) = x.downcast::<PyList>() {
        l.iter().map(|h| h.extract::<u8>()).collect()
    } else if let Ok(t) = x.downcast::<PyTuple>() {
        t.iter().map(|h| h.extract::<u8>()).collect()
    } else {
        x.extract()
    }
}

fn bounds(window: Option<usize>, per_node: Option<usize>, timeout: Option<f64>) -> Bounds {
    let mut b = Bounds::default();
    if let Some(w) = window {
        b.window = w.max(1);
    }
    if let Some(n) = per_node {
        b.per_node = n.max(1);
    }
    if let Some(t) = timeout {
        b.timeout = Duration::from_secs_f64(t.max(0.001));
    }
    b
}

/// A cancel check for long waits: runs Python's signal handlers (Ctrl-C)
/// at most every 50 ms, the GIL taken only then.
fn signal_check() -> impl FnMut() -> bool + Send {
    let mut last = std::time::Instant::now();
    move || {
        if last.elapsed() < Duration::from_millis(50) {
            return false;
        }
        last = std::time::Instant::now();
        Python::with_gil(|py| py.check_signals().is_err())
    }
}

#[pymethods]
impl Port {
    /// The port's attributes: `ca`, `port`, `lid`, `lmc`, `sm_lid`,
    /// `node_guid`, `port_guid`, `state`, `phys_state`, `is_switch`.
    fn attrs(&self, py: Python<'_>) -> PyResult<PyObject> {
        let a = self.with(py, |p| Ok(p.attrs()))?;
        let d = PyDict::new(py);
        d.set_item("ca", a.ca_name)?;
        d.set_item("port", a.port_num)?;
        d.set_item("lid", a.lid)?;
        d.set_item("lmc", a.lmc)?;
        d.set_item("sm_lid", a.sm_lid)?;
        d.set_item("node_guid", a.node_guid)?;
        d.set_item("port_guid", a.port_guid)?;
        d.set_item("state", a.state)?;
        d.set_item("phys_state", a.phys_state)?;
        d.set_item("is_switch", a.is_switch)?;
        Ok(d.into_any().unbind())
    }

    /// One line saying where the port is.
    fn describe(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |p| Ok(p.describe()))
    }

    #[pyo3(signature = (name, lid=None, dr=None, guid=None, attr_mod=0))]
    fn smp_get(
        &self,
        py: Python<'_>,
        name: &str,
        lid: Option<u16>,
        dr: Option<Vec<u8>>,
        guid: Option<u64>,
        attr_mod: u32,
    ) -> PyResult<Attribute> {
        let t = target(lid, dr, guid)?;
        let inner = self.with(py, |p| p.smp_get_answer(name, &t, attr_mod))?;
        Ok(Attribute { inner })
    }

    /// SubnGet of `name` at every LID of `lids` (or directed route of
    /// `drs`), all in flight at once; a list of Attributes, a failed
    /// target's entry being its exception (not raised).
    #[pyo3(signature = (name, lids=None, drs=None, attr_mod=0))]
    fn smp_get_many<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        lids: Option<&Bound<'py, PyAny>>,
        drs: Option<&Bound<'py, PyAny>>,
        attr_mod: u32,
    ) -> PyResult<Bound<'py, PyList>> {
        let targets: Vec<Target> = match (lids, drs) {
            (Some(l), None) => each(l, |x| Ok(Target::Lid(x.extract()?)))?,
            (None, Some(d)) => each(d, |x| route(x).map(Target::Dr))?,
            _ => return Err(InputError::new_err("give one of lids= or drs=")),
        };
        let rs = self.with(py, |p| p.smp_get_batch(name, &targets, attr_mod))?;
        drop(targets);
        // The list made in one pass, the GIL held throughout.
        let items = rs
            .into_iter()
            .map(|r| match r {
                Ok(inner) => Ok(Bound::new(py, Attribute { inner })?.into_any()),
                Err(e) => Ok(to_py(e).into_value(py).into_bound(py).into_any()),
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    #[allow(clippy::too_many_arguments)] // the Python signature
    #[pyo3(signature = (name, fields, lid=None, dr=None, guid=None, attr_mod=0))]
    fn smp_set(
        &self,
        py: Python<'_>,
        name: &str,
        fields: &Bound<'_, PyDict>,
        lid: Option<u16>,
        dr: Option<Vec<u8>>,
        guid: Option<u64>,
        attr_mod: u32,
    ) -> PyResult<Attribute> {
        let t = target(lid, dr, guid)?;
        let f = inputs(Some(fields))?;
        let a = self.with(py, |p| p.smp_set(name, &t, attr_mod, &f))?;
        Ok(a.into())
    }

    fn counters(&self, py: Python<'_>, lid: u16, port: u8, extended: bool) -> PyResult<Attribute> {
        let a = self.with(py, |p| p.counters(lid, port, extended))?;
        Ok(a.into())
    }

    fn reset_counters(
        &self,
        py: Python<'_>,
        lid: u16,
        port: u8,
        extended: bool,
    ) -> PyResult<Attribute> {
        let a = self.with(py, |p| p.reset_counters(lid, port, extended))?;
        Ok(a.into())
    }

    #[pyo3(signature = (name, fields=None))]
    fn sa_get(
        &self,
        py: Python<'_>,
        name: &str,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Attribute> {
        let f = inputs(fields)?;
        let a = self.with(py, |p| p.sa_get(name, &f))?;
        Ok(a.into())
    }

    /// The records and whether the table arrived cut to one MAD.
    #[pyo3(signature = (name, fields=None))]
    fn sa_get_table(
        &self,
        py: Python<'_>,
        name: &str,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<(Vec<Attribute>, bool)> {
        let f = inputs(fields)?;
        let t = self.with(py, |p| p.sa_table(name, &f))?;
        Ok((
            t.records.into_iter().map(Attribute::from).collect(),
            t.truncated,
        ))
    }

    /// Subscribes to trap `trap` (InformInfo Set); returns the
    /// subscription's id.
    fn subscribe(&self, py: Python<'_>, trap: u16) -> PyResult<u64> {
        self.with(py, |p| p.subscribe(trap).map(|s| s.id))
    }

    /// The next Report (its Notice), or `None` after `timeout` seconds.
    fn next_report(&self, py: Python<'_>, timeout: f64) -> PyResult<Option<Attribute>> {
        let t = Duration::from_secs_f64(timeout.max(0.0));
        let r = self.with(py, |p| Ok(p.next_report(t)))?;
        Ok(r.map(|r| madstack::Attribute::of(&r.notice).into()))
    }

    /// A fresh discovery: the Rust model, read a node at a time (the
    /// package's `Fabric` makes Python objects only of what is asked).
    #[pyo3(signature = (window=None, per_node=None, timeout=None))]
    fn discover(
        &self,
        py: Python<'_>,
        window: Option<usize>,
        per_node: Option<usize>,
        timeout: Option<f64>,
    ) -> PyResult<Fabric> {
        let b = bounds(window, per_node, timeout);
        let d = self.with(py, |p| fabric::discover_with(p, b, &mut signal_check()))?;
        Ok(Fabric::new(d))
    }

    /// `mad sweep --json`'s object of a fresh discovery and sweep, as
    /// JSON text.
    #[pyo3(signature = (window=None, per_node=None, timeout=None))]
    fn sweep(
        &self,
        py: Python<'_>,
        window: Option<usize>,
        per_node: Option<usize>,
        timeout: Option<f64>,
    ) -> PyResult<String> {
        let b = bounds(window, per_node, timeout);
        self.with(py, |p| {
            let d = fabric::discover_with(p, b, &mut signal_check())?;
            let s = fabric::sweep_with(p, &d.fabric, b, &mut signal_check())?;
            Ok(fabric::sweep_json(&d.fabric, &s).to_string())
        })
    }

    /// The directed route (egress ports) to `lid` through the
    /// forwarding tables, or `None`.
    fn route_to(&self, py: Python<'_>, lid: u16) -> PyResult<Option<Vec<u32>>> {
        let r = self.with(py, |p| Ok(p.route_to(lid)))?;
        Ok(r.map(|v| v.into_iter().map(u32::from).collect()))
    }

    fn events(&self, py: Python<'_>) -> PyResult<Events> {
        let e = self.with(py, madstack::Port::events)?;
        Ok(Events {
            inner: Mutex::new(Some(e)),
        })
    }

    /// Built-in fabric only: pulls (`up=False`) or plugs back the cable
    /// at `node`/`port`.
    fn sim_cable(&self, py: Python<'_>, node: String, port: u8, up: bool) -> PyResult<()> {
        self.with(py, |p| {
            let s = on_sim(p)?;
            let f = s.fabric();
            let r = if up {
                f.link_up(node.as_str(), port)
            } else {
                f.link_down(node.as_str(), port)
            };
            r.map_err(|e| Error::Input(e.to_string()))
        })
    }

    /// Built-in fabric only: SM-lite sweeps now (and reports what
    /// changed to the subscribers of its SA).
    fn sim_resweep(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |p| {
            let s = on_sim(p)?;
            s.resweep();
            Ok(())
        })
    }

    /// Built-in fabric only: raises the event `name` (`"lid_change"`,
    /// `"sm_change"`, `"client_reregister"`, ...) at this port.
    fn sim_event(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let ev = [
            AsyncEvent::PortActive,
            AsyncEvent::PortError,
            AsyncEvent::LidChange,
            AsyncEvent::PkeyChange,
            AsyncEvent::GidChange,
            AsyncEvent::SmChange,
            AsyncEvent::ClientReregister,
        ]
        .into_iter()
        .find(|e| madstack::events::event_name(e) == name)
        .ok_or_else(|| InputError::new_err(format!("no event {name:?}")))?;
        self.with(py, |p| {
            let s = on_sim(p)?;
            let a = p.attrs();
            s.fabric()
                .inject(a.ca_name.as_str(), a.port_num, EndpointFault::Event(ev))
                .map_err(|e| Error::Input(e.to_string()))
        })
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        guard(&self.inner).is_none()
    }

    /// Stops the port's threads; later calls raise `ClosedError`.
    /// Closing twice does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        blocking(py, || {
            let p = guard(&self.inner).take();
            match p {
                Some(p) => p.close(),
                None => Ok(()),
            }
        })
    }
}

/// Opens a port: `sim` (True or a topology file), `ibsim`, or `ca` /
/// `port` (a real port); `sim_node` where to attach on the built-in
/// fabric; `timeout` in seconds.
#[pyfunction]
#[pyo3(signature = (sim=None, ibsim=false, ca=None, port=None, sim_node=None, timeout=None))]
fn open(
    py: Python<'_>,
    sim: Option<&Bound<'_, PyAny>>,
    ibsim: bool,
    ca: Option<String>,
    port: Option<u8>,
    sim_node: Option<String>,
    timeout: Option<f64>,
) -> PyResult<Port> {
    let sim: Option<Option<String>> = match sim {
        None => None,
        Some(s) if s.is_none() => None,
        Some(s) => {
            if let Ok(b) = s.extract::<bool>() {
                b.then_some(None)
            } else if let Ok(t) = s.extract::<String>() {
                Some(Some(t))
            } else {
                return Err(InputError::new_err(
                    "sim= takes True or a topology file name",
                ));
            }
        }
    };
    let chosen = usize::from(sim.is_some())
        + usize::from(ibsim)
        + usize::from(ca.is_some() || port.is_some());
    if chosen > 1 {
        return Err(InputError::new_err(
            "give one of sim=, ibsim=True or ca=/port=",
        ));
    }
    let backend = match (sim, ibsim) {
        (Some(t), _) => Backend::Sim(t),
        (None, true) => Backend::IbSim,
        (None, false) => Backend::Umad {
            ca,
            port: port.unwrap_or(0),
        },
    };
    let mut o = Options::on(backend);
    o.sim_node = sim_node;
    if let Some(t) = timeout {
        o.timeout = Duration::from_secs_f64(t.max(0.001));
    }
    let p = blocking(py, || madstack::open(&o))?;
    Ok(Port {
        inner: Mutex::new(Some(p)),
    })
}

/// The names of the structures `smp_get`, `counters` and the SA calls
/// know, by class (`"smp"`, `"perf"`, `"sa"`).
#[pyfunction]
fn known_attributes(class_: &str) -> PyResult<Vec<&'static str>> {
    use madstack::attr::{Class, KINDS};
    let c = match class_ {
        "smp" => Class::Smp,
        "perf" => Class::Perf,
        "sa" => Class::Sa,
        other => {
            return Err(InputError::new_err(format!(
                "no class {other:?} (smp, perf, sa)"
            )))
        }
    };
    Ok(KINDS
        .iter()
        .filter(|k| k.class == c)
        .map(|k| k.name)
        .collect())
}

/// Panics on purpose (for the tests that prove a Rust panic becomes an
/// exception).
#[pyfunction]
fn _panic_for_test(py: Python<'_>) -> PyResult<()> {
    blocking(py, || -> Result<(), Error> {
        panic!("panic requested by the test")
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(known_attributes, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_class::<Port>()?;
    m.add_class::<Attribute>()?;
    m.add_class::<Events>()?;
    m.add_class::<Fabric>()?;
    m.add("MadError", py.get_type::<MadError>())?;
    m.add("OpenError", py.get_type::<OpenError>())?;
    m.add("RegistrationError", py.get_type::<RegistrationError>())?;
    m.add("MadTimeout", py.get_type::<MadTimeout>())?;
    m.add("StatusError", py.get_type::<StatusError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    Ok(())
}

/// The built-in fabric under `p`, for the `sim_*` calls.
fn on_sim(p: &madstack::Port) -> Result<&madstack::sim::Subnet, Error> {
    p.sim()
        .ok_or_else(|| Error::Input("not on the built-in fabric".into()))
}
