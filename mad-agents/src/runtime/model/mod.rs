//! An exhaustive interleaving test of the runtime's deregistration
//! protocol (issue 4: "use loom or a model test for the deregistration
//! wait").
//!
//! The runtime's threads only meet under the core lock, so each step below
//! is one locked section of the real code (`next_delivery`, `drive`,
//! `begin_deregister`, `deregistered`, `inline_begin`, `inline_step`,
//! `AgentRef::send`) or one unlocked section (a callback, from its start
//! to its return). Actors: the loop thread, a thread deregistering from
//! outside (blocked on the condition variable until notified), the device
//! (completes the posted work requests; a request arrives), and a thread
//! sending through an `AgentRef`, a thread blocked in `send_and_wait`
//! (`begin_wait`, a turn of driving the port itself — `caller_take` —
//! then its channel), the thread receiving from a channel agent's channel
//! driving the port itself (`caller_drive`), and the loop thread's death (a panic
//! outside any callback: `loop_ended`). Every interleaving of their steps is
//! run (depth-first, each schedule replayed from scratch on a real engine
//! over a Loopback), and after each: deregistration returned only when
//! every send of the agent had completed — its work requests out of the
//! device, each completion delivered exactly once — and no callback of
//! it was running (but the one that called it); no callback of the agent
//! started after it returned; and no schedule ended with a thread waiting
//! for ever (lost wake-up, or a deregistration from the agent's own
//! callback waiting for that callback, or a `send_and_wait` whose
//! completion went elsewhere or whose loop died); and a channel agent's
//! events reached its channel in the order the port pulled them from the
//! device, none twice (`order`). Each property is shown to be
//! checked by injecting a bug that breaks it: the model must then fail.
#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::stack::Stack;
use mad_core::transport::{PortAttrs, Transport};

use super::shared::{Deviation, Route, Shared, Sink, Step, TICK};
use super::waiter::lock;
use super::waiter::{Taken, WaitSlot};
use super::*;
use crate::engine::AgentState;
use crate::spec::AgentSpec;
use crate::types::{AgentEvent, AgentId, EngineConfig, SendError, SendId, SendRequest};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{
    Address, AsyncEvent, OutMad, Posted, Qp, QpState, Received, SendCompletion, TransportError,
};
use mad_core::wire::{Method, MgmtClass};
use std::collections::HashSet;

/// The device, reachable from outside the engine; it logs what the port
/// pulled from it, in order (see [`order`]).
struct Dev(Arc<Mutex<Loopback>>, PortAttrs, Arc<Mutex<order::DevLog>>);

impl Transport for Dev {
    fn port_attrs(&self) -> &PortAttrs {
        &self.1
    }
    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        Ok(())
    }
    fn send_queue_depth(&self) -> usize {
        lock(&self.0).send_queue_depth()
    }
    fn post(&mut self, mad: OutMad<'_>, dest: &Address, wait: Duration) -> Posted {
        let wr = lock(&self.0).post(mad, dest, wait)?;
        lock(&self.2).posted(mad.bytes(), wr);
        Ok(wr)
    }
    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError> {
        let from = out.len();
        let n = lock(&self.0).poll_send_completions(out)?;
        lock(&self.2).completed(&out[from..]);
        Ok(n)
    }
    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        let r = lock(&self.0).poll_recv()?;
        if let Some(r) = &r {
            lock(&self.2).pulled.push(order::tid(r.mad.as_slice()));
        }
        Ok(r)
    }
    fn poll_event(&mut self) -> Option<AsyncEvent> {
        lock(&self.0).poll_event()
    }
    fn qp_state(&self, qp: Qp) -> QpState {
        lock(&self.0).qp_state(qp)
    }
    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
        lock(&self.0).modify_qp(qp, to)
    }
    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        lock(&self.0).recreate_queues()
    }
    fn raw_fd(&self) -> Option<RawFd> {
        None
    }
}

#[derive(Default)]
struct Log {
    /// What each agent's callback was given, by name.
    events: HashMap<&'static str, Vec<AgentEvent>>,
    /// Agents whose deregistration has returned.
    returned: HashSet<&'static str>,
    violations: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    /// "a" (two sends in the device) is deregistered by another thread.
    OtherThread,
    /// "a" deregisters itself from its callback while another thread
    /// sends on it.
    OwnCallback,
    /// "a"'s callback deregisters "b" while another thread deregisters
    /// "b" too.
    OtherAgentFromCallback,
    /// "a" deregisters itself from its callback while another thread
    /// waits in `send_and_wait` on it.
    WaiterOwnCallback,
    /// Another thread deregisters "a" while a third waits in
    /// `send_and_wait` on it, and the loop thread may die at any point
    /// between two of its steps.
    LoopDies,
    /// Another thread deregisters channel agent "a" while the thread
    /// receiving from its channel drives the port itself (the fast path,
    /// `caller_drive`).
    ReceiverDrives,
    /// Another thread deregisters "a" while a third waits in
    /// `send_and_wait` on it and drives the port itself (`caller_take`)
    /// before it blocks.
    WaiterDrives,
    /// Two callers drive the port at once — the thread receiving from
    /// channel agent "a" (`caller_drive`) and a thread in
    /// `send_and_wait` on "a" (`caller_take`) — while another thread
    /// deregisters "a" and two requests for it arrive: its events reach
    /// its channel in the order the port pulled them, each once.
    TwoCallersDrive,
    /// The thread receiving from channel agent "a" takes a batch by
    /// driving the port (two requests), hands out one, and a third
    /// request, delivered by the loop thread, enters the channel while it
    /// holds the other: the three come out in the order they arrived.
    ReceiverKeepsBatch,
}

enum L {
    Take,
    Call(AgentId, AgentEvent, Route),
    Ret(AgentId),
    Drive,
    Idle,
    /// A callback of `caller` deregistering `target` on the loop
    /// thread, one `inline_step` at a time.
    Inline {
        caller: AgentId,
        target: AgentId,
        own: bool,
        sink: Option<Arc<Mutex<Sink>>>,
        begun: bool,
        /// The last step changed nothing, at this version of the
        /// others' state: spinning again is pointless until they act.
        idle_at: Option<u64>,
    },
    Done,
}

enum D {
    Idle,
    Begin(AgentId),
    Check(AgentId),
    Wait(AgentId, u64),
    Returned,
}

#[derive(Clone, Copy)]
enum W {
    /// The device completes the posted work requests.
    Unstall,
    /// A Set request for "a" arrives.
    Request,
    /// Two Set requests for "a" arrive (TIDs 1 and 2).
    Requests,
    /// A third Set request for "a" arrives (TID 3).
    Third,
}

const L_ACTOR: usize = 0;
const D_ACTOR: usize = 1;
const T_ACTOR: usize = 2;
const X_ACTOR: usize = 3;
/// The receiving thread of a channel agent, driving the port.
const R_ACTOR: usize = 4;
/// The thread in `send_and_wait`, driving the port before it blocks.
const C_ACTOR: usize = 5;
const W_ACTOR: usize = 6;

struct World {
    sc: Scenario,
    sh: Arc<Shared>,
    dev: Arc<Mutex<Loopback>>,
    log: Arc<Mutex<Log>>,
    names: HashMap<AgentId, &'static str>,
    ids: HashMap<&'static str, AgentId>,
    /// Sends each agent made; each must complete exactly once.
    sends: HashMap<&'static str, Vec<SendId>>,
    now: Instant,
    woken: bool,
    version: u64,
    l: L,
    d: D,
    t: bool,
    w: Vec<Option<W>>,
    running: HashSet<AgentId>,
    pending: Option<Pending>,
    kept: Vec<AgentEvent>,
    triggered: bool,
    /// The channel of the thread blocked in `send_and_wait`.
    waiter: Option<WaitSlot>,
    /// What that thread got.
    waited: Vec<SendId>,
    /// The channel of the channel agent and its name, and how many more
    /// times its receiving thread drives the port.
    channel: Option<(&'static str, super::channel::Receiver, u8)>,
    /// The send the thread in `send_and_wait` waits for, while it may
    /// still drive the port itself (`caller_take`) before blocking.
    take: Option<(AgentId, SendId)>,
    /// What the port pulled from the device, in order.
    pulled: Arc<Mutex<order::DevLog>>,
    /// The loop thread may still die.
    may_die: bool,
    /// It died.
    dead: bool,
}

fn perf(method: Method) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    mad_testkit_wire::header::edit(&mut m, |h| {
        h.base_version = 1;
        h.mgmt_class = MgmtClass::PERF_MGT;
        h.class_version = 1;
        h.method = method;
    });
    m
}

impl World {
    fn new(sc: Scenario, deviation: Deviation) -> Self {
        let mut lb = Loopback::new(Loopback::attrs("model", 1, 5), 64);
        lb.set_stalled(true);
        let attrs = lb.port_attrs().clone();
        let dev = Arc::new(Mutex::new(lb));
        let pulled: Arc<Mutex<order::DevLog>> = Arc::default();
        let stack = Stack::new(
            Box::new(Dev(dev.clone(), attrs, pulled.clone())) as Box<dyn Transport>,
            EngineConfig::default(),
        );
        let sh = Arc::new(Shared::new(
            stack,
            None,
            Wakeup::NoFd { tick: TICK },
            deviation,
        ));
        let log: Arc<Mutex<Log>> = Arc::default();
        let mut w = World {
            sc,
            sh,
            dev,
            log,
            names: HashMap::new(),
            ids: HashMap::new(),
            sends: HashMap::new(),
            now: Instant::now(),
            woken: false,
            version: 0,
            l: L::Take,
            d: D::Idle,
            t: false,
            w: Vec::new(),
            running: HashSet::new(),
            pending: None,
            kept: Vec::new(),
            triggered: false,
            waiter: None,
            waited: Vec::new(),
            channel: None,
            take: None,
            pulled,
            may_die: false,
            dead: false,
        };
        let owner = AgentSpec::requests("a", MgmtClass::PERF_MGT, 1, &[Method::SET]);
        match sc {
            Scenario::OtherThread => {
                let a = w.agent("a", AgentSpec::send_only("a", Qp::Qp1));
                w.send(a, true);
                w.send(a, false);
                w.d = D::Begin(a);
                w.w = vec![Some(W::Unstall)];
            }
            Scenario::OwnCallback => {
                let a = w.agent("a", owner);
                w.send(a, true);
                w.t = true;
                w.w = vec![Some(W::Request), Some(W::Unstall)];
            }
            Scenario::OtherAgentFromCallback => {
                w.agent("a", owner);
                let b = w.agent("b", AgentSpec::send_only("b", Qp::Qp1));
                w.send(b, true);
                w.send(b, false);
                w.d = D::Begin(b);
                // The request that makes "a"'s callback deregister "b"
                // is there from the start.
                w.step_device(W::Request);
                w.w = vec![Some(W::Unstall)];
            }
            Scenario::WaiterOwnCallback => {
                let a = w.agent("a", owner);
                w.wait(a);
                w.w = vec![Some(W::Request), Some(W::Unstall)];
            }
            Scenario::LoopDies => {
                let a = w.agent("a", AgentSpec::send_only("a", Qp::Qp1));
                w.wait(a);
                w.send(a, false);
                w.d = D::Begin(a);
                w.w = vec![Some(W::Unstall)];
                w.may_die = true;
            }
            Scenario::ReceiverDrives => {
                let a = w.channel_agent(AgentSpec::send_only("a", Qp::Qp1), 1);
                w.send(a, true);
                w.d = D::Begin(a);
                w.w = vec![Some(W::Unstall)];
            }
            Scenario::WaiterDrives => {
                let a = w.agent("a", AgentSpec::send_only("a", Qp::Qp1));
                w.wait(a);
                w.d = D::Begin(a);
                w.w = vec![Some(W::Unstall)];
            }
            Scenario::TwoCallersDrive => {
                // The device completes at once, and the two requests are
                // there from the start (fewer actors: fewer schedules).
                w.step_device(W::Unstall);
                w.step_device(W::Requests);
                let a = w.channel_agent(owner, 1);
                w.wait(a);
                w.d = D::Begin(a);
            }
            Scenario::ReceiverKeepsBatch => {
                w.step_device(W::Unstall);
                w.step_device(W::Requests);
                w.channel_agent(owner, 2);
                w.w = vec![Some(W::Third)];
            }
        }
        w
    }

    /// Another thread sends on `agent` (awaiting a response) and blocks
    /// in `send_and_wait`.
    fn wait(&mut self, agent: AgentId) {
        let req = SendRequest::new(perf(Method::GET), Address::gsi(7))
            .expect_response(Duration::from_secs(3600), 0);
        let (rx, send) = self
            .sh
            .begin_wait(&mut self.sh.core(), agent, req, self.now)
            .unwrap();
        self.sends.get_mut(self.names[&agent]).unwrap().push(send);
        self.waiter = Some(rx);
        if matches!(self.sc, Scenario::WaiterDrives | Scenario::TwoCallersDrive) {
            self.take = Some((agent, send));
        }
    }

    /// Takes what the waiting thread has been given; false if it still
    /// waits.
    fn waiter_woken(&mut self) -> bool {
        let Some(rx) = &self.waiter else {
            return true;
        };
        loop {
            match rx.try_recv() {
                Taken::Done(c) => self.waited.push(c.send),
                Taken::Empty => return !self.waited.is_empty(),
                Taken::Closed => return true,
            }
        }
    }

    /// Registers channel agent "a", whose receiving thread drives the
    /// port `drives` times.
    fn channel_agent(&mut self, spec: AgentSpec, drives: u8) -> AgentId {
        let (tx, mut rx) = super::channel::channel();
        rx.queue_first = self.sh.deviation == Deviation::QueueBeforeTaken;
        let sink = Sink::Channel {
            tx,
            queued: Arc::default(),
        };
        let a = self.sh.register_sink(spec, sink).unwrap();
        self.names.insert(a, "a");
        self.ids.insert("a", a);
        self.sends.insert("a", Vec::new());
        self.channel = Some(("a", rx, drives));
        a
    }

    fn agent(&mut self, name: &'static str, spec: AgentSpec) -> AgentId {
        let log = self.log.clone();
        let cb: Callback = Box::new(move |ev| {
            let mut l = lock(&log);
            if l.returned.contains(name) {
                l.violations.push(format!(
                    "{name}'s callback ran after its deregistration returned: {ev:?}"
                ));
            }
            l.events.entry(name).or_default().push(ev);
        });
        let id = self.sh.register_sink(spec, Sink::Callback(cb)).unwrap();
        self.names.insert(id, name);
        self.ids.insert(name, id);
        self.sends.insert(name, Vec::new());
        id
    }

    fn send(&mut self, agent: AgentId, response: bool) {
        let mut req = SendRequest::new(perf(Method::GET), Address::gsi(7));
        if response {
            req = req.expect_response(Duration::from_secs(3600), 0);
        }
        let id = self.sh.core().engine.send(agent, req, self.now).unwrap();
        self.sends.get_mut(self.names[&agent]).unwrap().push(id);
    }

    fn violation(&self, what: String) {
        lock(&self.log).violations.push(what);
    }

    fn enabled(&self) -> Vec<usize> {
        let mut v = Vec::new();
        let l = match &self.l {
            L::Idle => self.woken,
            L::Done => false,
            L::Inline { begun, idle_at, .. } => !*begun || *idle_at != Some(self.version),
            _ => true,
        };
        if l {
            v.push(L_ACTOR);
        }
        let d = match self.d {
            D::Begin(_) | D::Check(_) => true,
            D::Wait(_, seen) => self.sh.core().notifies > seen,
            D::Idle | D::Returned => false,
        };
        if d {
            v.push(D_ACTOR);
        }
        if self.t {
            v.push(T_ACTOR);
        }
        if self.may_die && matches!(self.l, L::Take | L::Drive | L::Idle) {
            v.push(X_ACTOR);
        }
        if self.channel.as_ref().is_some_and(|c| c.2 > 0) {
            v.push(R_ACTOR);
        }
        if self.take.is_some() {
            v.push(C_ACTOR);
        }
        for (i, w) in self.w.iter().enumerate() {
            if w.is_some() {
                v.push(W_ACTOR + i);
            }
        }
        v
    }

    /// What the callback does with this event: deregister someone
    /// (target, own) or just record it.
    fn trigger(&self, agent: AgentId, ev: &AgentEvent) -> Option<(AgentId, bool)> {
        if self.triggered || self.names[&agent] != "a" || !matches!(ev, AgentEvent::Received(_)) {
            return None;
        }
        match self.sc {
            Scenario::OtherThread
            | Scenario::LoopDies
            | Scenario::ReceiverDrives
            | Scenario::WaiterDrives
            | Scenario::TwoCallersDrive
            | Scenario::ReceiverKeepsBatch => None,
            Scenario::OwnCallback | Scenario::WaiterOwnCallback => Some((agent, true)),
            Scenario::OtherAgentFromCallback => Some((self.ids["b"], false)),
        }
    }

    fn step(&mut self, actor: usize) {
        if actor != L_ACTOR {
            self.version += 1;
        }
        match actor {
            L_ACTOR => self.step_loop(),
            D_ACTOR => self.step_deregistering_thread(),
            T_ACTOR => {
                self.t = false;
                let a = self.ids["a"];
                let r = AgentRef {
                    shared: self.sh.clone(),
                    id: a,
                };
                match r.send(SendRequest::new(perf(Method::GET), Address::gsi(7))) {
                    Ok(h) => self.sends.get_mut("a").unwrap().push(h.id()),
                    Err(SendError::UnknownAgent(_)) => {
                        if self.sh.core().engine.agent_state(a) == Some(AgentState::Active) {
                            self.violation("a send to an active agent was refused".into());
                        }
                    }
                    Err(e) => self.violation(format!("send failed: {e}")),
                }
                self.woken = true;
            }
            R_ACTOR => {
                if let Some(c) = &mut self.channel {
                    c.2 -= 1;
                }
                // As `AgentReceiver::recv`: one event if the channel has
                // one (the receiver may keep more of a batch it took),
                // else a drive of the port, then one event.
                if !self.take_one() {
                    let a = self.ids["a"];
                    self.sh.caller_drive(a, self.now);
                    self.take_one();
                }
            }
            C_ACTOR => {
                // One turn of driving; after it, the thread either has its
                // completion or blocks on its channel.
                if let Some((agent, send)) = self.take.take() {
                    let (got, _) = self.sh.caller_take(agent, send, self.now);
                    if let Some(c) = got {
                        self.waited.push(c.send);
                    }
                }
            }
            X_ACTOR => {
                // The loop thread panics between two steps: `run`'s
                // guard ends the loop on the way out.
                self.may_die = false;
                self.dead = true;
                self.l = L::Done;
                self.sh.loop_ended(&mut self.sh.core());
            }
            _ => {
                if let Some(w) = self.w[actor - W_ACTOR].take() {
                    self.step_device(w);
                }
            }
        }
    }

    fn step_device(&mut self, w: W) {
        match w {
            W::Unstall => lock(&self.dev).set_stalled(false),
            W::Request => lock(&self.dev).push_recv(Received {
                qp: Qp::Qp1,
                src: Address::gsi(9),
                mad: perf(Method::SET).into(),
            }),
            W::Requests | W::Third => {
                let tids: &[u8] = if matches!(w, W::Third) { &[3] } else { &[1, 2] };
                let mut d = lock(&self.dev);
                for &tid in tids {
                    let mut mad = perf(Method::SET);
                    mad_testkit_wire::header::edit(&mut mad, |h| h.tid = u64::from(tid));
                    d.push_recv(Received {
                        qp: Qp::Qp1,
                        src: Address::gsi(9),
                        mad: mad.into(),
                    });
                }
            }
        }
        self.woken = true;
    }

    fn step_loop(&mut self) {
        let l = std::mem::replace(&mut self.l, L::Done);
        self.l = match l {
            L::Take => {
                let next = self
                    .sh
                    .next_delivery(&mut self.sh.core(), self.pending.take());
                match next {
                    Some((agent, ev, route)) => L::Call(agent, ev, route),
                    None => L::Drive,
                }
            }
            L::Call(agent, ev, route) => {
                self.running.insert(agent);
                match self.trigger(agent, &ev) {
                    Some((target, own)) => {
                        // The callback gets the event and deregisters.
                        self.triggered = true;
                        let name = self.names[&agent];
                        {
                            let mut log = lock(&self.log);
                            if log.returned.contains(name) {
                                log.violations.push(format!("{name} called after return"));
                            }
                            log.events.entry(name).or_default().push(ev);
                        }
                        self.pending = Some(Pending {
                            agent,
                            dropped: false,
                            coalesced: false,
                            callback: true,
                        });
                        L::Inline {
                            caller: agent,
                            target,
                            own,
                            sink: None,
                            begun: false,
                            idle_at: None,
                        }
                    }
                    None => {
                        self.pending = Some(self.sh.hand_over(agent, ev, route));
                        L::Ret(agent)
                    }
                }
            }
            L::Ret(agent) => {
                self.running.remove(&agent);
                L::Take
            }
            L::Drive => match self.sh.drive(&mut self.sh.core(), self.now) {
                Step::Again => L::Take,
                Step::Wait(_) => L::Idle,
                Step::Stop => L::Done,
            },
            L::Idle => {
                self.woken = false;
                L::Take
            }
            L::Inline {
                caller,
                target,
                own,
                begun: false,
                ..
            } => L::Inline {
                caller,
                target,
                own,
                sink: self.sh.inline_begin(target),
                begun: true,
                idle_at: None,
            },
            L::Inline {
                caller,
                target,
                own,
                sink,
                ..
            } => {
                let before = (self.sh.core().engine.stats(), self.kept.len());
                let mut kept = std::mem::take(&mut self.kept);
                let done = self
                    .sh
                    .inline_step(target, own, sink.as_ref(), &mut kept, self.now);
                self.kept = kept;
                let after = (self.sh.core().engine.stats(), self.kept.len());
                if done {
                    self.returned(target, own.then_some(caller));
                    L::Ret(caller)
                } else {
                    L::Inline {
                        caller,
                        target,
                        own,
                        sink,
                        begun: true,
                        idle_at: (before == after).then_some(self.version),
                    }
                }
            }
            L::Done => L::Done,
        };
    }

    fn step_deregistering_thread(&mut self) {
        self.d = match self.d {
            D::Begin(x) => {
                self.sh.begin_deregister(&mut self.sh.core(), x);
                self.woken = true;
                D::Check(x)
            }
            D::Check(x) | D::Wait(x, _) => {
                let mut core = self.sh.core();
                if self.sh.deregistered(&mut core, x) {
                    drop(core);
                    self.returned(x, None);
                    D::Returned
                } else {
                    D::Wait(x, core.notifies)
                }
            }
            D::Idle => D::Idle,
            D::Returned => D::Returned,
        };
    }

    /// Deregistration of `x` returned (from its own callback when
    /// `caller` is given).
    fn returned(&mut self, x: AgentId, caller: Option<AgentId>) {
        let name = self.names[&x];
        if self.running.contains(&x) && caller != Some(x) {
            self.violation(format!(
                "{name}'s deregistration returned while its callback ran"
            ));
        }
        if self.dead {
            // Its sends are abandoned with the loop; returning at all
            // is what counts (checked at the end).
            lock(&self.log).returned.insert(name);
            return;
        }
        {
            let core = self.sh.core();
            if core.engine.agent_outstanding(x) != 0 {
                self.violation(format!(
                    "{name}'s deregistration returned with sends outstanding"
                ));
            }
        }
        // Requests (the agents' sends) only: the port answers a request
        // that came for an agent already closing itself.
        let queued = lock(&self.pulled).requests.len();
        if queued != 0 {
            self.violation(format!(
                "{name}'s deregistration returned with {queued} work requests in the device"
            ));
        }
        self.take_channel();
        self.check_completions(name, caller == Some(x));
        lock(&self.log).returned.insert(name);
    }

    /// Every send of `name` completed exactly once (through its
    /// callback, or — deregistering itself — in the returned events).
    fn check_completions(&mut self, name: &'static str, with_kept: bool) {
        self.waiter_woken();
        let log = lock(&self.log);
        let mut done: Vec<SendId> = log
            .events
            .get(name)
            .into_iter()
            .flatten()
            .chain(self.kept.iter().filter(|_| with_kept))
            .filter_map(|e| match e {
                AgentEvent::SendDone(c) => Some(c.send),
                _ => None,
            })
            .chain(self.waited.iter().copied())
            .collect();
        drop(log);
        done.sort();
        let mut want = self.sends[name].clone();
        want.sort();
        if done != want {
            self.violation(format!("{name}: completions {done:?}, sends {want:?}"));
        }
    }

    /// At the end of a schedule (no step enabled).
    fn finish(&mut self) {
        self.take_channel();
        if !self.waiter_woken() {
            self.violation("a thread waits for ever in send_and_wait".into());
        }
        if !matches!(self.d, D::Idle | D::Returned) {
            self.violation("a deregistering thread waits for ever".into());
        }
        if matches!(self.l, L::Inline { .. }) {
            self.violation("a deregistration from a callback spins for ever".into());
        }
        if self.t || self.w.iter().any(Option::is_some) {
            self.violation("stopped with steps left".into());
        }
        self.check_channel_order();
    }
}

mod explore;
mod order;
