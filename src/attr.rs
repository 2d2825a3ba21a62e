//! Attributes by name: the SMP, PerfMgt and SA structures the front door
//! ([`crate::Port`]) reads and writes when a caller names them with a
//! string (`"NodeInfo"`, `"PortCounters"`, `"PathRecord"`), as scripts and
//! the Python package do.
//!
//! An [`Attribute`] is an answer: its structure's name, its bytes, its
//! fields with their values ([`Value`]), and the object `mad --json`
//! prints for it ([`Attribute::to_json`], the tools' contract: 64-bit
//! values as `"0x"` + 16 hex digits). Fields are found by their `Repr`
//! names (`node_guid`, `port_state`); a nested structure's fields also
//! answer to their own name (`NodeRecord`'s `node_guid` is
//! `node_info.node_guid`).

use mad_agents::sa::client::{parse_record, parse_table};
use mad_agents::sa::{component_layout, SaError};
use mad_core::wire::attr::{
    ClassPortInfo, GuidInfo, LinearFwdTable, MulticastFwdTable, NodeDescription, NodeInfo,
    PKeyTable, PortCounters, PortCountersExt, PortInfo, SlToVlTable, SmInfo, SwitchInfo,
    VlArbTable,
};
use mad_core::wire::field::{get_bits, set_bits};
use mad_core::wire::sa_records::{
    GuidInfoRecord, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord, MftRecord, NodeRecord,
    PKeyTableRecord, PathRecord, PortInfoRecord, SaRecord, ServiceRecord, Sl2VlRecord,
    SmInfoRecord, SwitchInfoRecord, VlArbRecord,
};
use mad_core::wire::{AttributeId, FieldKind, FieldValue, Fields, Repr};
use mad_tools::json::Json;

use crate::Error;

/// The value of one field, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// An unsigned integer (or wire enum) of any width up to 64 bits.
    Uint(u64),
    /// Text (a node description, a service name), up to its first NUL.
    Text(String),
    /// Bytes (GIDs, keys, raw blocks).
    Bytes(Vec<u8>),
    /// A packed array of integers.
    Array(Vec<u64>),
    /// An embedded structure.
    Nested(Box<Attribute>),
}

/// One structure read from the fabric, with named fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// The structure's name (`"NodeInfo"`, `"PathRecord"`).
    pub name: &'static str,
    /// Its fields in wire order, reserved ones left out.
    pub fields: Vec<(&'static str, Value)>,
    /// Each field's label, as libibmad (smpquery, perfquery) prints it,
    /// in the order of `fields`.
    pub labels: Vec<&'static str>,
    /// Each field's width in bits (an array's: of one element), in the
    /// order of `fields`: what the JSON form needs.
    widths: Vec<u32>,
    /// Its bytes on the wire.
    pub bytes: Vec<u8>,
}

fn is_text(name: &str) -> bool {
    name.contains("desc") || name.ends_with("name")
}

impl Attribute {
    /// The attribute of a parsed structure `f` whose bytes are `bytes`.
    #[must_use]
    pub fn from_fields(f: &dyn Fields, bytes: Vec<u8>) -> Self {
        // Sized once: growing three vectors field by field was a good part
        // of an SMP batch's time per answer (python/benches/smp_rate.py).
        let descs = f.field_descs();
        let mut fields = Vec::with_capacity(descs.len());
        let mut labels = Vec::with_capacity(descs.len());
        let mut widths = Vec::with_capacity(descs.len());
        for (i, d) in descs.iter().enumerate() {
            let (Some(label), Some(v)) = (d.label, f.field_value(i)) else {
                continue;
            };
            labels.push(label);
            widths.push(match d.kind {
                FieldKind::Array { elem_bits, .. } => elem_bits,
                _ => d.bit_len,
            });
            let v = match v {
                FieldValue::Uint(v) => Value::Uint(v),
                FieldValue::Bytes(b) if is_text(d.name) => {
                    let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
                    Value::Text(String::from_utf8_lossy(&b[..end]).into_owned())
                }
                FieldValue::Bytes(b) => Value::Bytes(b.to_vec()),
                FieldValue::Array(a) => Value::Array(a),
                FieldValue::Nested(n) => {
                    Value::Nested(Box::new(Attribute::from_fields(n, Vec::new())))
                }
            };
            fields.push((d.name, v));
        }
        Self {
            name: f.struct_name(),
            fields,
            labels,
            widths,
            bytes,
        }
    }

    /// A structure `name` with no fields and no bytes.
    fn empty(name: &'static str) -> Self {
        Self {
            name,
            fields: Vec::new(),
            labels: Vec::new(),
            widths: Vec::new(),
            bytes: Vec::new(),
        }
    }

    /// The attribute of a `Repr` value.
    #[must_use]
    pub fn of<R: Repr + Fields>(r: &R) -> Self {
        Self::from_fields(r, r.to_vec().unwrap_or_default())
    }

    /// The field `name`, searched in nested structures too.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Value> {
        for (n, v) in &self.fields {
            if *n == name {
                return Some(v);
            }
        }
        self.fields.iter().find_map(|(_, v)| match v {
            Value::Nested(a) => a.get(name),
            _ => None,
        })
    }

    /// The integer field `name` (nested structures searched too).
    #[must_use]
    pub fn uint(&self, name: &str) -> Option<u64> {
        match self.get(name) {
            Some(Value::Uint(v)) => Some(*v),
            _ => None,
        }
    }

    /// The object `mad --json` prints for this structure (reserved fields
    /// left out; integers over 32 bits as `"0x…"` strings).
    #[must_use]
    pub fn to_json(&self) -> Json {
        // The rules of `mad_tools::ibdiag::attr_json` (tested equal to
        // `mad --json` in python/tests/test_json_contract.py), from the
        // owned values: built only when asked for.
        let mut o = serde_json::Map::new();
        for ((name, v), bits) in self.fields.iter().zip(&self.widths) {
            let j = match v {
                Value::Uint(x) => mad_tools::json::uint_field(*bits, *x),
                Value::Text(t) => Json::String(t.clone()),
                Value::Bytes(b) => Json::String(b.iter().map(|x| format!("{x:02x}")).collect()),
                Value::Array(a) => Json::Array(
                    a.iter()
                        .map(|x| mad_tools::json::uint_field(*bits, *x))
                        .collect(),
                ),
                Value::Nested(n) => n.to_json(),
            };
            o.insert((*name).to_owned(), j);
        }
        Json::Object(o)
    }
}

/// An answer kept as its bytes and decoded into an [`Attribute`] when its
/// fields are first read: what a batch of SMPs returns
/// ([`crate::Port::smp_get_batch`]), so that answers nobody reads field
/// by field cost one copy of their bytes, not a decode.
#[derive(Debug)]
pub struct Answer {
    name: &'static str,
    /// The structure's kind and bytes; `None` for an answer made of an
    /// [`Attribute`].
    raw: Option<(&'static Kind, RawBytes)>,
    /// Boxed: an undecoded answer stays small to move and to hold in a
    /// Python object.
    decoded: std::sync::OnceLock<Box<Attribute>>,
}

impl Answer {
    /// The answer of structure `kind` whose bytes start `bytes`.
    ///
    /// # Errors
    /// [`Error::Malformed`] when `bytes` are shorter than the structure.
    pub fn new(kind: &'static Kind, bytes: &[u8]) -> Result<Self, Error> {
        let b = bytes.get(..kind.len).ok_or_else(|| {
            Error::Malformed(format!(
                "{} needs {} bytes, the answer has {}",
                kind.name,
                kind.len,
                bytes.len()
            ))
        })?;
        Ok(Self {
            name: kind.name,
            raw: Some((kind, RawBytes::of(b))),
            decoded: std::sync::OnceLock::new(),
        })
    }

    /// The structure's name (`"NodeInfo"`), without decoding.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The structure's bytes on the wire, without decoding.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        match &self.raw {
            Some((_, b)) => b.as_slice(),
            None => self.attribute().bytes.as_slice(),
        }
    }

    /// The decoded attribute (decoded on the first call, kept).
    #[must_use]
    pub fn attribute(&self) -> &Attribute {
        self.decoded.get_or_init(|| match &self.raw {
            Some((kind, b)) => Box::new(decode(kind, b.as_slice())),
            // An answer made of an Attribute has it set from the start.
            None => Box::new(Attribute::empty(self.name)),
        })
    }

    /// The decoded attribute, owned.
    #[must_use]
    pub fn into_attribute(self) -> Attribute {
        match self.decoded.into_inner() {
            Some(a) => *a,
            None => match &self.raw {
                Some((kind, b)) => decode(kind, b.as_slice()),
                None => Attribute::empty(self.name),
            },
        }
    }
}

impl From<Attribute> for Answer {
    fn from(a: Attribute) -> Self {
        Self {
            name: a.name,
            raw: None,
            decoded: std::sync::OnceLock::from(Box::new(a)),
        }
    }
}

impl PartialEq for Answer {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.attribute() == other.attribute()
    }
}

/// An answer's bytes: in place up to an SMP's 64 bytes of data (no
/// allocation per answer of a batch), on the heap beyond.
#[derive(Debug)]
enum RawBytes {
    Inline(u8, [u8; 64]),
    Heap(Vec<u8>),
}

impl RawBytes {
    fn of(b: &[u8]) -> Self {
        match u8::try_from(b.len()) {
            Ok(n) if b.len() <= 64 => {
                let mut a = [0u8; 64];
                a[..b.len()].copy_from_slice(b);
                Self::Inline(n, a)
            }
            _ => Self::Heap(b.to_vec()),
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Inline(n, a) => &a[..usize::from(*n)],
            Self::Heap(v) => v,
        }
    }
}

/// `b` (at least `kind.len` bytes: [`Answer::new`] checked) decoded.
fn decode(kind: &Kind, b: &[u8]) -> Attribute {
    // The structures' parsers fail only on too few bytes.
    (kind.parse)(b).unwrap_or_else(|| Attribute::empty(kind.name))
}

/// Which management class an attribute name belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Subnet management (QP0).
    Smp,
    /// Performance management.
    Perf,
    /// Subnet administration.
    Sa,
}

/// A structure known by name.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// Its name (as `mad decode` names it).
    pub name: &'static str,
    /// Other names accepted (smpquery's op names, short forms).
    pub aliases: &'static [&'static str],
    /// Its class.
    pub class: Class,
    /// Its attribute ID.
    pub attr_id: AttributeId,
    /// Its length on the wire.
    pub len: usize,
    parse: fn(&[u8]) -> Option<Attribute>,
    leaves: fn() -> Vec<Leaf>,
    sa_answer: Option<SaAnswerFn>,
}

/// Reads an SA answer's records (a GetTable's when the flag is set) and
/// whether it was cut.
type SaAnswerFn = fn(&[u8], bool) -> Result<(Vec<Attribute>, bool), SaError>;

/// A field at the bottom of a (possibly nested) structure.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// The field's `Repr` name.
    pub name: &'static str,
    /// Its label (libibmad's), if any.
    pub label: Option<&'static str>,
    /// Offset in bits from the structure's first byte.
    pub bit_offset: u32,
    /// Width in bits.
    pub bit_len: u32,
    /// An integer field (else bytes).
    pub is_uint: bool,
}

fn leaves_of(f: &dyn Fields, base: u32, out: &mut Vec<Leaf>) {
    for (i, d) in f.field_descs().iter().enumerate() {
        if let (FieldKind::Nested, Some(FieldValue::Nested(n))) = (d.kind, f.field_value(i)) {
            leaves_of(n, base + d.bit_offset, out);
            continue;
        }
        out.push(Leaf {
            name: d.name,
            label: d.label,
            bit_offset: base + d.bit_offset,
            bit_len: d.bit_len,
            is_uint: matches!(d.kind, FieldKind::Uint),
        });
    }
}

fn parse_as<R: Repr + Fields>(b: &[u8]) -> Option<Attribute> {
    let r = R::parse(b).ok()?;
    Some(Attribute::from_fields(
        &r,
        b.get(..R::LEN).unwrap_or(b).to_vec(),
    ))
}

/// The records of an SA answer `mad` (a GetTable's when `table`, else a
/// Get's one), through mad-agents' parsers, and whether it was cut.
fn sa_answer_as<R: SaRecord + Fields>(
    mad: &[u8],
    table: bool,
) -> Result<(Vec<Attribute>, bool), SaError> {
    if table {
        let t = parse_table::<R>(mad)?;
        Ok((t.records.iter().map(Attribute::of).collect(), t.truncated))
    } else {
        parse_record::<R>(mad).map(|r| (vec![Attribute::of(&r)], false))
    }
}

fn leaves_as<R: Repr + Fields + Default>() -> Vec<Leaf> {
    let mut v = Vec::new();
    leaves_of(&R::default(), 0, &mut v);
    v
}

macro_rules! kind {
    ($class:ident, $ty:ty, $id:expr, $name:literal, [$($alias:literal),*]) => {
        Kind {
            name: $name,
            aliases: &[$($alias),*],
            class: Class::$class,
            attr_id: $id,
            len: <$ty as Repr>::LEN,
            parse: parse_as::<$ty>,
            leaves: leaves_as::<$ty>,
            sa_answer: None,
        }
    };
    (Sa, $ty:ty, $name:literal, [$($alias:literal),*]) => {
        Kind {
            name: $name,
            aliases: &[$($alias),*],
            class: Class::Sa,
            attr_id: <$ty as SaRecord>::ATTR_ID,
            len: <$ty as Repr>::LEN,
            parse: parse_as::<$ty>,
            leaves: leaves_as::<$ty>,
            sa_answer: Some(sa_answer_as::<$ty>),
        }
    };
}

/// Every structure the front door knows by name.
pub static KINDS: &[Kind] = &[
    kind!(Smp, NodeInfo, AttributeId::NODE_INFO, "NodeInfo", ["NI"]),
    kind!(
        Smp,
        NodeDescription,
        AttributeId::NODE_DESC,
        "NodeDescription",
        ["NodeDesc", "ND"]
    ),
    kind!(Smp, PortInfo, AttributeId::PORT_INFO, "PortInfo", ["PI"]),
    kind!(
        Smp,
        SwitchInfo,
        AttributeId::SWITCH_INFO,
        "SwitchInfo",
        ["SI"]
    ),
    kind!(
        Smp,
        GuidInfo,
        AttributeId::GUID_INFO,
        "GUIDInfo",
        ["GuidInfo", "GI"]
    ),
    kind!(
        Smp,
        PKeyTable,
        AttributeId::PKEY_TABLE,
        "P_KeyTable",
        ["PKeyTable", "PKeys"]
    ),
    kind!(
        Smp,
        SlToVlTable,
        AttributeId::SL_TO_VL_TABLE,
        "SLtoVLMappingTable",
        ["SL2VLTable", "SL2VL"]
    ),
    kind!(
        Smp,
        VlArbTable,
        AttributeId::VL_ARB_TABLE,
        "VLArbitrationTable",
        ["VLArb"]
    ),
    kind!(
        Smp,
        LinearFwdTable,
        AttributeId::LINEAR_FWD_TABLE,
        "LinearForwardingTable",
        ["LFT"]
    ),
    kind!(
        Smp,
        MulticastFwdTable,
        AttributeId::MCAST_FWD_TABLE,
        "MulticastForwardingTable",
        ["MFT"]
    ),
    kind!(Smp, SmInfo, AttributeId::SM_INFO, "SMInfo", ["SmInfo"]),
    kind!(
        Perf,
        PortCounters,
        AttributeId::PM_PORT_COUNTERS,
        "PortCounters",
        []
    ),
    kind!(
        Perf,
        PortCountersExt,
        AttributeId::PM_PORT_COUNTERS_EXT,
        "PortCountersExtended",
        ["PortCountersExt"]
    ),
    kind!(
        Perf,
        ClassPortInfo,
        AttributeId::CLASS_PORT_INFO,
        "ClassPortInfo",
        []
    ),
    kind!(Sa, NodeRecord, "NodeRecord", []),
    kind!(Sa, PortInfoRecord, "PortInfoRecord", []),
    kind!(Sa, PathRecord, "PathRecord", []),
    kind!(Sa, LinkRecord, "LinkRecord", []),
    kind!(Sa, SwitchInfoRecord, "SwitchInfoRecord", []),
    kind!(Sa, SmInfoRecord, "SMInfoRecord", ["SmInfoRecord"]),
    kind!(Sa, ServiceRecord, "ServiceRecord", []),
    kind!(Sa, McMemberRecord, "MCMemberRecord", ["McMemberRecord"]),
    kind!(Sa, PKeyTableRecord, "P_KeyTableRecord", ["PKeyTableRecord"]),
    kind!(Sa, GuidInfoRecord, "GuidInfoRecord", ["GUIDInfoRecord"]),
    kind!(
        Sa,
        LftRecord,
        "LinearForwardingTableRecord",
        ["LFTRecord", "LftRecord"]
    ),
    kind!(
        Sa,
        MftRecord,
        "MulticastForwardingTableRecord",
        ["MFTRecord", "MftRecord"]
    ),
    kind!(
        Sa,
        Sl2VlRecord,
        "SLtoVLMappingTableRecord",
        ["SL2VLRecord", "Sl2VlRecord"]
    ),
    kind!(
        Sa,
        VlArbRecord,
        "VLArbitrationTableRecord",
        ["VLArbRecord", "VlArbRecord"]
    ),
    kind!(Sa, InformInfoRecord, "InformInfoRecord", []),
];

fn norm(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

impl Kind {
    /// The kind named `name` (case and `_` ignored) in `class`.
    ///
    /// # Errors
    /// [`Error::Input`] naming the known ones.
    pub fn find(class: Class, name: &str) -> Result<&'static Kind, Error> {
        let want = norm(name);
        KINDS
            .iter()
            .filter(|k| k.class == class)
            .find(|k| norm(k.name) == want || k.aliases.iter().any(|a| norm(a) == want))
            .ok_or_else(|| {
                let known: Vec<&str> = KINDS
                    .iter()
                    .filter(|k| k.class == class)
                    .map(|k| k.name)
                    .collect();
                Error::Input(format!(
                    "unknown {class:?} attribute {name:?} (known: {})",
                    known.join(", ")
                ))
            })
    }

    /// Parses `bytes` as this structure.
    ///
    /// # Errors
    /// [`Error::Malformed`] when they are too short.
    pub fn parse(&self, bytes: &[u8]) -> Result<Attribute, Error> {
        (self.parse)(bytes).ok_or_else(|| {
            Error::Malformed(format!(
                "{} needs {} bytes, the answer has {}",
                self.name,
                self.len,
                bytes.len()
            ))
        })
    }

    /// The records of the SA answer `mad` (a GetTable's when `table`)
    /// and whether it arrived cut to one MAD.
    ///
    /// # Errors
    /// Not an SA record; the answer's inconsistencies.
    pub fn sa_records(&self, mad: &[u8], table: bool) -> Result<(Vec<Attribute>, bool), Error> {
        match self.sa_answer {
            Some(f) => Ok(f(mad, table)?),
            None => Err(Error::Input(format!("{} is no SA record", self.name))),
        }
    }

    /// Its fields at the bottom of every nesting, reserved ones included.
    #[must_use]
    pub fn leaves(&self) -> Vec<Leaf> {
        (self.leaves)()
    }

    /// The names [`Kind::write`] accepts.
    #[must_use]
    pub fn field_names(&self) -> Vec<&'static str> {
        self.leaves()
            .into_iter()
            .filter(|l| l.label.is_some())
            .map(|l| l.name)
            .collect()
    }

    /// The ComponentMask bits of an SA record's field `leaf`: the
    /// components (mad-agents' [`component_layout`]) its bits fall in
    /// (ServiceID spans two).
    fn component_bits(&self, leaf: &Leaf) -> u64 {
        let Some(layout) = component_layout(self.attr_id) else {
            return 0;
        };
        let (a, b) = (
            leaf.bit_offset as usize,
            (leaf.bit_offset + leaf.bit_len) as usize,
        );
        let mut bits = 0u64;
        for n in 0..layout.len().min(64) {
            if let Some((off, len)) = layout.range(n) {
                if off < b && a < off + len {
                    bits |= 1u64 << n;
                }
            }
        }
        bits
    }

    /// Writes `fields` (name, value) into `buf` (this structure's bytes);
    /// for an SA record also returns the ComponentMask that selects them.
    ///
    /// # Errors
    /// [`Error::Input`] for an unknown field, a value wider than the
    /// field, bytes of the wrong length, or (SA) a field the SA cannot
    /// select on.
    pub fn write(&self, buf: &mut [u8], fields: &[(String, Input)]) -> Result<u64, Error> {
        let leaves = self.leaves();
        let mut mask = 0u64;
        for (name, value) in fields {
            let Some(leaf) = leaves.iter().find(|l| l.label.is_some() && l.name == name) else {
                return Err(Error::Input(format!(
                    "{} has no field {name:?} (fields: {})",
                    self.name,
                    self.field_names().join(", ")
                )));
            };
            let (off, len) = (leaf.bit_offset as usize, leaf.bit_len as usize);
            match value {
                Input::Uint(v) if leaf.is_uint => {
                    if len < 64 && *v >> len != 0 {
                        return Err(Error::Input(format!(
                            "{}.{name} is {len} bits wide; {v} does not fit",
                            self.name
                        )));
                    }
                    set_bits(buf, off, len, *v);
                }
                Input::Bytes(b) if !leaf.is_uint && off % 8 == 0 => {
                    let n = len / 8;
                    if b.len() > n {
                        return Err(Error::Input(format!(
                            "{}.{name} holds {n} bytes, not {}",
                            self.name,
                            b.len()
                        )));
                    }
                    let dst = &mut buf[off / 8..off / 8 + n];
                    dst.fill(0);
                    dst[..b.len()].copy_from_slice(b);
                }
                _ => {
                    return Err(Error::Input(format!(
                        "{}.{name} takes {}",
                        self.name,
                        if leaf.is_uint {
                            "an integer"
                        } else {
                            "bytes or text"
                        }
                    )))
                }
            }
            if self.class == Class::Sa {
                let bits = self.component_bits(leaf);
                if bits == 0 {
                    return Err(Error::Input(format!(
                        "{}.{name} is no component the SA selects on",
                        self.name
                    )));
                }
                mask |= bits;
            }
        }
        Ok(mask)
    }

    /// Reads the integer field `name` of `buf` (this structure's bytes).
    #[must_use]
    pub fn read_uint(&self, buf: &[u8], name: &str) -> Option<u64> {
        let l = self
            .leaves()
            .into_iter()
            .find(|l| l.name == name && l.is_uint)?;
        Some(get_bits(buf, l.bit_offset as usize, l.bit_len as usize))
    }
}

/// A field value given by a caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// An integer.
    Uint(u64),
    /// Bytes (a GID) or text (a description), left-aligned and
    /// zero-padded in the field.
    Bytes(Vec<u8>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sa_field_a_caller_can_name_selects_a_component() {
        for k in KINDS.iter().filter(|k| k.class == Class::Sa) {
            for l in k.leaves().iter().filter(|l| l.label.is_some()) {
                assert_ne!(k.component_bits(l), 0, "{}.{}", k.name, l.name);
            }
        }
    }

    #[test]
    fn an_answer_decodes_when_read_to_what_the_eager_parse_gives() {
        let k = Kind::find(Class::Smp, "NodeInfo").unwrap();
        let ni = NodeInfo {
            node_guid: 0x1234_5678_9abc,
            num_ports: 3,
            ..NodeInfo::default()
        };
        // As an SMP's data: the structure, then padding to 64 bytes.
        let mut b = ni.to_vec().unwrap();
        b.resize(64, 0xee);
        let a = Answer::new(k, &b).unwrap();
        assert_eq!(a.name(), "NodeInfo");
        assert_eq!(a.bytes(), &b[..k.len]);
        assert_eq!(a.attribute(), &k.parse(&b).unwrap());
        assert_eq!(a.attribute().uint("node_guid"), Some(0x1234_5678_9abc));
        assert_eq!(
            Answer::new(k, &b).unwrap().into_attribute(),
            k.parse(&b).unwrap()
        );
        let e = Answer::new(k, &b[..10]).unwrap_err();
        assert!(e.to_string().contains("NodeInfo needs 40 bytes"), "{e}");
        // An answer made of an Attribute keeps it.
        let from = Answer::from(k.parse(&b).unwrap());
        assert_eq!(from.bytes(), a.bytes());
        assert!(from == a);
    }

    #[test]
    fn path_record_fields_select_their_component_bits() {
        let k = Kind::find(Class::Sa, "pathrecord").unwrap();
        let mut b = vec![0u8; k.len];
        let m = k
            .write(
                &mut b,
                &[
                    ("slid".into(), Input::Uint(1)),
                    ("dlid".into(), Input::Uint(7)),
                    ("service_id".into(), Input::Uint(5)),
                ],
            )
            .unwrap();
        assert_eq!(
            m,
            PathRecord::COMP_SLID | PathRecord::COMP_DLID | PathRecord::COMP_SERVICE_ID
        );
        let a = k.parse(&b).unwrap();
        assert_eq!(a.uint("dlid"), Some(7));
    }

    #[test]
    fn a_value_wider_than_its_field_or_an_unknown_field_is_refused_by_name() {
        let k = Kind::find(Class::Smp, "PortInfo").unwrap();
        let mut b = vec![0u8; k.len];
        let e = k
            .write(&mut b, &[("port_state".into(), Input::Uint(99))])
            .unwrap_err();
        assert!(e.to_string().contains("port_state is 4 bits"), "{e}");
        let e = k
            .write(&mut b, &[("nope".into(), Input::Uint(1))])
            .unwrap_err();
        assert!(e.to_string().contains("no field \"nope\""), "{e}");
        let e = Kind::find(Class::Smp, "Bogus").unwrap_err();
        assert!(e.to_string().contains("NodeInfo"), "{e}");
    }
}
