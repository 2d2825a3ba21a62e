//! What an agent registers for, the kernel's checks on it, and the table
//! that dispatches unsolicited requests (AGENTS.md §1, §2).

use std::collections::HashMap;

use mad_core::transport::Qp;
use mad_core::wire::vendor::OUI_MAX;
use mad_core::wire::{Method, MgmtClass};

use crate::{AgentId, RegisterError};

/// Class versions below this may be registered (the kernel's
/// `MAX_MGMT_VERSION` for InfiniBand without OPA).
pub const MAX_CLASS_VERSION: u8 = 8;
/// Classes below this may be registered, plus 0x81 (`MAX_MGMT_CLASS`).
pub const MAX_CLASS: u8 = 80;
/// OUIs per vendor range-2 class (`MAX_MGMT_OUI`).
pub const MAX_OUIS_PER_CLASS: usize = 8;

/// A set of methods (bit n = method n, 0..=127), as the kernel's 128-bit
/// method mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MethodMask(pub u128);

impl MethodMask {
    /// No method.
    pub const NONE: Self = Self(0);

    /// The mask of the given methods (the response bit is ignored).
    #[must_use]
    pub fn of(methods: &[Method]) -> Self {
        Self(
            methods
                .iter()
                .fold(0u128, |m, x| m | (1u128 << (x.0 & 0x7F))),
        )
    }

    /// True if `method` (response bit ignored) is in the set.
    #[must_use]
    pub fn contains(self, method: u8) -> bool {
        self.0 & (1u128 << (method & 0x7F)) != 0
    }

    /// The methods in the set, ascending.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        (0u8..128).filter(move |m| self.contains(*m))
    }
}

/// The unsolicited requests an agent owns: the kernel's
/// `ib_mad_reg_req`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestFilter {
    /// Management class.
    pub class: MgmtClass,
    /// Class version.
    pub class_version: u8,
    /// Methods owned.
    pub methods: MethodMask,
    /// IEEE OUI (vendor range 2 only; 0 otherwise).
    pub oui: u32,
}

/// How an agent is registered on a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSpec {
    /// A name used in errors and logs (e.g. "sa-client").
    pub name: String,
    /// QP0 (SMI) or QP1 (GSI).
    pub qp: Qp,
    /// Unsolicited requests to receive; `None` for a send-only agent (it
    /// still gets the responses to its own requests).
    pub requests: Option<RequestFilter>,
    /// RMPP (version 1) done by the agent layer for this agent: larger
    /// payloads go out as RMPP transfers and inbound transfers are
    /// reassembled. Off: the agent sees raw segments.
    pub rmpp: bool,
    /// Hold off a soft reset of the port until this agent acknowledges
    /// [`crate::AgentEvent::ResetPending`] (seed 001). Off: the agent is
    /// told but the layer acknowledges for it at once.
    pub hold_reset: bool,
}

impl AgentSpec {
    /// A send-only agent on `qp`.
    #[must_use]
    pub fn send_only(name: &str, qp: Qp) -> Self {
        Self {
            name: name.to_owned(),
            qp,
            requests: None,
            rmpp: false,
            hold_reset: false,
        }
    }

    /// An agent owning `methods` of `class` / `class_version` on the QP
    /// the class belongs to (QP0 for SMP classes, QP1 otherwise).
    #[must_use]
    pub fn requests(name: &str, class: MgmtClass, class_version: u8, methods: &[Method]) -> Self {
        let qp = if class.is_smp() { Qp::Qp0 } else { Qp::Qp1 };
        Self {
            name: name.to_owned(),
            qp,
            requests: Some(RequestFilter {
                class,
                class_version,
                methods: MethodMask::of(methods),
                oui: 0,
            }),
            rmpp: false,
            hold_reset: false,
        }
    }

    /// Sets the OUI (vendor range 2).
    #[must_use]
    pub fn with_oui(mut self, oui: u32) -> Self {
        if let Some(r) = &mut self.requests {
            r.oui = oui;
        }
        self
    }

    /// Turns RMPP on.
    #[must_use]
    pub fn with_rmpp(mut self) -> Self {
        self.rmpp = true;
        self
    }

    /// Asks to hold off soft resets until acknowledged.
    #[must_use]
    pub fn holding_reset(mut self) -> Self {
        self.hold_reset = true;
        self
    }

    /// The kernel's registration checks that do not depend on other
    /// agents (`ib_register_mad_agent`).
    ///
    /// # Errors
    /// [`RegisterError::Invalid`] naming the rule broken.
    pub fn validate(&self) -> Result<(), RegisterError> {
        let bad = |reason: String| Err(RegisterError::Invalid(reason));
        let Some(r) = &self.requests else {
            return Ok(());
        };
        if r.class_version >= MAX_CLASS_VERSION {
            return bad(format!(
                "class version {} is not below {MAX_CLASS_VERSION}",
                r.class_version
            ));
        }
        let c = r.class;
        if c.0 == 0 {
            return bad("management class 0 is reserved".into());
        }
        if c.0 >= MAX_CLASS && c != MgmtClass::SUBN_DIRECTED_ROUTE {
            return bad(format!(
                "management class {:#04x} cannot be registered (only classes below {MAX_CLASS:#04x} and 0x81)",
                c.0
            ));
        }
        if c.is_vendor_range2() {
            if r.oui == 0 || r.oui > OUI_MAX {
                return bad(format!(
                    "vendor class {:#04x} needs a non-zero 24-bit OUI (got {:#x})",
                    c.0, r.oui
                ));
            }
        } else if r.oui != 0 {
            return bad(format!(
                "an OUI is only meaningful for vendor classes 0x30-0x4f, not {:#04x}",
                c.0
            ));
        }
        if self.rmpp && !c.is_rmpp_class() {
            return bad(format!("class {:#04x} ({c}) does not use RMPP", c.0));
        }
        match self.qp {
            Qp::Qp0 if !c.is_smp() => bad(format!(
                "QP0 takes only the SMP classes 0x01 and 0x81, not {:#04x}",
                c.0
            )),
            Qp::Qp1 if c.is_smp() => bad(format!("SMP class {:#04x} belongs on QP0, not QP1", c.0)),
            _ => Ok(()),
        }
    }
}

/// The key of one method table: (QP, class, class version, OUI). 0x01 and
/// 0x81 are separate classes here, as in the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Slot {
    qp: Qp,
    class: u8,
    version: u8,
    oui: u32,
}

/// Owners of unsolicited requests.
#[derive(Debug, Default)]
pub(crate) struct RegTable {
    slots: HashMap<Slot, Box<[Option<AgentId>; 128]>>,
}

impl RegTable {
    /// Claims `filter`'s methods for `agent`, or names the first
    /// conflicting owner.
    pub(crate) fn insert(
        &mut self,
        qp: Qp,
        filter: &RequestFilter,
        agent: AgentId,
        name_of: impl Fn(AgentId) -> String,
    ) -> Result<(), RegisterError> {
        let slot = Slot {
            qp,
            class: filter.class.0,
            version: filter.class_version,
            oui: filter.oui,
        };
        if filter.class.is_vendor_range2() && !self.slots.contains_key(&slot) {
            let ouis = self
                .slots
                .keys()
                .filter(|s| s.qp == qp && s.class == slot.class && s.version == slot.version)
                .count();
            if ouis >= MAX_OUIS_PER_CLASS {
                return Err(RegisterError::Invalid(format!(
                    "all {MAX_OUIS_PER_CLASS} OUI slots of vendor class {:#04x} are in use",
                    slot.class
                )));
            }
        }
        if let Some(table) = self.slots.get(&slot) {
            for m in filter.methods.iter() {
                if let Some(owner) = table[usize::from(m)] {
                    return Err(RegisterError::MethodInUse {
                        class: filter.class,
                        class_version: filter.class_version,
                        method: m,
                        owner,
                        owner_name: name_of(owner),
                    });
                }
            }
        }
        let table = self
            .slots
            .entry(slot)
            .or_insert_with(|| Box::new([None; 128]));
        for m in filter.methods.iter() {
            table[usize::from(m)] = Some(agent);
        }
        Ok(())
    }

    /// Releases every method `agent` owns.
    pub(crate) fn remove(&mut self, agent: AgentId) {
        for t in self.slots.values_mut() {
            for e in t.iter_mut() {
                if *e == Some(agent) {
                    *e = None;
                }
            }
        }
        self.slots.retain(|_, t| t.iter().any(Option::is_some));
    }

    /// The owner of a request with this QP, class, version, method and
    /// OUI (ignored unless the class is vendor range 2).
    pub(crate) fn lookup(
        &self,
        qp: Qp,
        class: u8,
        version: u8,
        method: u8,
        oui: u32,
    ) -> Option<AgentId> {
        let oui = if MgmtClass(class).is_vendor_range2() {
            oui
        } else {
            0
        };
        let slot = Slot {
            qp,
            class,
            version,
            oui,
        };
        self.slots.get(&slot)?[usize::from(method & 0x7F)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(spec: &AgentSpec) -> String {
        match spec.validate() {
            Err(RegisterError::Invalid(s)) => s,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn kernel_registration_checks_refuse_what_the_kernel_refuses() {
        let sa = AgentSpec::requests("sa", MgmtClass::SUBN_ADM, 2, &[Method::GET]);
        assert!(sa.validate().is_ok());
        assert!(sa.clone().with_rmpp().validate().is_ok());
        let mut s = sa.clone();
        if let Some(r) = s.requests.as_mut() {
            r.class_version = 8;
        }
        assert!(invalid(&s).contains("class version"));
        let zero = AgentSpec::requests("z", MgmtClass(0), 1, &[Method::GET]);
        assert!(invalid(&zero).contains("reserved"));
        let high = AgentSpec::requests("h", MgmtClass(0x50), 1, &[Method::GET]);
        assert!(invalid(&high).contains("cannot be registered"));
        let vendor = AgentSpec::requests("v", MgmtClass(0x32), 1, &[Method::GET]);
        assert!(invalid(&vendor).contains("OUI"));
        assert!(vendor.with_oui(0x1405).validate().is_ok());
        let perf = AgentSpec::requests("p", MgmtClass::PERF_MGT, 1, &[Method::GET]).with_rmpp();
        assert!(invalid(&perf).contains("does not use RMPP"));
        let mut smp_on_gsi = AgentSpec::requests("s", MgmtClass::SUBN_LID_ROUTED, 1, &[]);
        smp_on_gsi.qp = Qp::Qp1;
        assert!(invalid(&smp_on_gsi).contains("QP0"));
        let mut sa_on_smi = sa;
        sa_on_smi.qp = Qp::Qp0;
        assert!(invalid(&sa_on_smi).contains("QP0 takes only"));
        assert!(AgentSpec::send_only("x", Qp::Qp1).validate().is_ok());
    }

    #[test]
    fn method_mask_ignores_the_response_bit() {
        let m = MethodMask::of(&[Method::GET, Method::SET, Method(0x81)]);
        assert!(m.contains(1) && m.contains(2) && m.contains(0x81));
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![1, 2]);
    }
}
