//! The interface between the SA responder and where its records come
//! from: the request as a [`RecordSource`] sees it ([`RecordQuery`]), the
//! source trait, a source of fixed records ([`StaticRecords`]), and what
//! a request is answered with. [`super::responder`] and the
//! MultiPathRecord rules ([`super::multipath`]) both build on it.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use mad_core::transport::Address;
use mad_core::wire::sa_records::SaRecord;
use mad_core::wire::{AttributeId, MadStatus, Method, Repr};

/// One request as a [`RecordSource`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct RecordQuery<'a> {
    /// Method (Get, GetTable, Set, Delete; no response bit).
    pub method: Method,
    /// The attribute asked for.
    pub attr_id: AttributeId,
    /// AttributeModifier of the request.
    pub attr_mod: u32,
    /// ComponentMask (host order: bit n = component n).
    pub comp_mask: u64,
    /// The request's record: the SA data of the request (up to 200 bytes;
    /// the record is its first `LEN` bytes).
    pub template: &'a [u8],
    /// Where the request came from.
    pub src: &'a Address,
}

/// Where an [`SaResponder`](super::responder::SaResponder) gets its records; see
/// the [responder's documentation](super::responder).
pub trait RecordSource: Send + Sync {
    /// Candidate records for `query` (a superset of the matches is fine:
    /// the responder filters by ComponentMask). `None`: the attribute is
    /// not served.
    fn records(&self, query: &RecordQuery<'_>) -> Option<Vec<Vec<u8>>>;

    /// True when [`RecordSource::records`] already returns exactly the
    /// records that answer `query`, by rules of the source's own that a
    /// ComponentMask match would not give (OpenSM answers a
    /// VLArbitrationTableRecord query for a CA's port 0 with the CA's own
    /// port, say): the responder then takes them without matching.
    /// Default: false.
    fn exact(&self, query: &RecordQuery<'_>) -> bool {
        let _ = query;
        false
    }

    /// ComponentMask bits of `query` that [`RecordSource::records`]
    /// already matched by rules of its own, so the responder does not
    /// compare them: OpenSM finds a NodeRecord or PortInfoRecord by any
    /// LID of a port's LMC range and answers with the base LID, which a
    /// comparison with the template's LID would drop. Default: none.
    fn matched_components(&self, query: &RecordQuery<'_>) -> u64 {
        let _ = query;
        0
    }

    /// SubnAdmSet of `query.template` (other than InformInfo): the record
    /// to answer with, or an SA status. Default: 0x000C (unsupported).
    ///
    /// # Errors
    /// The status word to answer with.
    fn set(&self, query: &RecordQuery<'_>) -> Result<Vec<u8>, u16> {
        let _ = query;
        Err(MadStatus::METHOD_ATTR_UNSUPPORTED.0)
    }

    /// SubnAdmDelete of `query.template`: the record to answer with, or an
    /// SA status. Default: 0x000C (unsupported).
    ///
    /// # Errors
    /// The status word to answer with.
    fn delete(&self, query: &RecordQuery<'_>) -> Result<Vec<u8>, u16> {
        let _ = query;
        Err(MadStatus::METHOD_ATTR_UNSUPPORTED.0)
    }
}

/// A [`RecordSource`] holding fixed records per attribute.
#[derive(Debug, Default)]
pub struct StaticRecords {
    map: RwLock<HashMap<u16, Vec<Vec<u8>>>>,
}

impl StaticRecords {
    /// An empty source (every known record type served, with no records).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the records of type `R`.
    ///
    /// # Errors
    /// When a record cannot be emitted (a field wider than its bits).
    pub fn set_records<R: SaRecord>(&self, records: &[R]) -> Result<(), mad_core::wire::Error> {
        let v = records
            .iter()
            .map(Repr::to_vec)
            .collect::<Result<Vec<_>, _>>()?;
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(R::ATTR_ID.0, v);
        Ok(())
    }

    /// Adds one record of type `R`.
    ///
    /// # Errors
    /// As [`StaticRecords::set_records`].
    pub fn push<R: SaRecord>(&self, record: &R) -> Result<(), mad_core::wire::Error> {
        let v = record.to_vec()?;
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(R::ATTR_ID.0)
            .or_default()
            .push(v);
        Ok(())
    }
}

impl RecordSource for StaticRecords {
    fn records(&self, query: &RecordQuery<'_>) -> Option<Vec<Vec<u8>>> {
        let map = self.map.read().unwrap_or_else(PoisonError::into_inner);
        Some(map.get(&query.attr_id.0).cloned().unwrap_or_default())
    }
}

/// What to answer a request with.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) attr_offset: u16,
    pub(super) data: Vec<u8>,
    pub(super) table: bool,
    /// The response's AttributeID when it is not the request's (the
    /// PathRecords answering a MultiPathRecord).
    pub(super) attr: Option<AttributeId>,
}

impl Answer {
    pub(super) fn status(status: u16) -> Self {
        Self {
            status,
            attr_offset: 0,
            data: Vec::new(),
            table: false,
            attr: None,
        }
    }

    /// A table of records `stride` bytes apart (AttributeOffset 0 when
    /// it is empty).
    pub(super) fn table(data: Vec<u8>, stride: usize) -> Self {
        Self {
            status: 0,
            attr_offset: if data.is_empty() {
                0
            } else {
                (stride / 8) as u16
            },
            data,
            table: true,
            attr: None,
        }
    }
}
