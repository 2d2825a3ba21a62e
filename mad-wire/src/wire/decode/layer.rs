//! The decoder's output ([`DecodedMad`], [`Layer`]) and the helpers every
//! class decoder uses to append layers to it.

use crate::wire::{Error, FieldDesc, FieldValue, Fields, MadHeader, Repr};

/// The content of one decoded layer.
#[derive(Debug)]
pub enum LayerData {
    /// A structure with reflective fields.
    Fields(Box<dyn Fields>),
    /// Bytes this decoder does not interpret.
    Raw(Vec<u8>),
}

/// One decoded part of a MAD, in wire order.
#[derive(Debug)]
pub struct Layer {
    /// What the layer is: a structure name (`"NodeInfo"`, `"RMPP"`) or
    /// `"Data"` for uninterpreted bytes.
    pub name: &'static str,
    /// Position of a record in a table (SA GetTable responses), else `None`.
    pub index: Option<usize>,
    /// Byte offset of the layer from the start of the MAD.
    pub offset: usize,
    /// The decoded content.
    pub data: LayerData,
    /// Why a layer is raw, or anything else worth telling the reader.
    pub note: Option<String>,
}

impl Layer {
    /// The reflective structure, if the layer is one.
    #[must_use]
    pub fn fields(&self) -> Option<&dyn Fields> {
        match &self.data {
            LayerData::Fields(f) => Some(f.as_ref()),
            LayerData::Raw(_) => None,
        }
    }

    /// The raw bytes, if the layer is raw.
    #[must_use]
    pub fn raw(&self) -> Option<&[u8]> {
        match &self.data {
            LayerData::Fields(_) => None,
            LayerData::Raw(b) => Some(b),
        }
    }
}

/// A decoded MAD: the common header plus the layers that follow it.
#[derive(Debug)]
pub struct DecodedMad {
    /// The common MAD header.
    pub header: MadHeader,
    /// Everything after the common header, in wire order.
    pub layers: Vec<Layer>,
    /// Observations about the MAD as a whole (e.g. "RMPP middle segment").
    pub notes: Vec<String>,
    /// Length of the decoded buffer in bytes.
    pub len: usize,
}

impl DecodedMad {
    /// The first layer called `name`.
    #[must_use]
    pub fn layer(&self, name: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.name == name)
    }

    /// Appends the structure `f` (found at `offset`) as a layer called
    /// `name`.
    pub(super) fn push_struct(&mut self, name: &'static str, offset: usize, f: Box<dyn Fields>) {
        self.layers.push(Layer {
            name,
            index: None,
            offset,
            data: LayerData::Fields(f),
            note: None,
        });
    }

    /// Every layer called `name` (SA table records), in order.
    pub fn layers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Layer> + 'a {
        self.layers.iter().filter(move |l| l.name == name)
    }
}

/// Parses `R` from the start of `buf` and boxes it as a [`Fields`] object.
pub(crate) fn boxed<R: Repr + Fields + 'static>(buf: &[u8]) -> Result<Box<dyn Fields>, Error> {
    Ok(Box::new(R::parse(buf)?))
}

/// A parser of one structure into a reflective box.
pub(crate) type ParseFn = fn(&[u8]) -> Result<Box<dyn Fields>, Error>;

/// A known attribute or record: its display name, parser and length.
#[derive(Clone, Copy)]
pub(super) struct Known {
    pub(super) name: &'static str,
    pub(super) parse: ParseFn,
    pub(super) len: usize,
}

impl Known {
    pub(super) fn of<R: Repr + Fields + 'static>() -> Self {
        Self {
            name: R::NAME,
            parse: boxed::<R>,
            len: R::LEN,
        }
    }
}

/// Appends `buf[offset..]` as a raw `"Data"` layer (nothing when empty).
pub(super) fn push_raw(d: &mut DecodedMad, buf: &[u8], offset: usize, note: Option<String>) {
    push_raw_slice(d, buf.get(offset..).unwrap_or(&[]), offset, note);
}

/// Appends `bytes` (found at `offset`) as a raw layer (nothing when empty).
pub(super) fn push_raw_slice(
    d: &mut DecodedMad,
    bytes: &[u8],
    offset: usize,
    note: Option<String>,
) {
    if bytes.is_empty() {
        return;
    }
    d.layers.push(Layer {
        name: "Data",
        index: None,
        offset,
        data: LayerData::Raw(bytes.to_vec()),
        note,
    });
}

/// Parses a fixed header layer at `offset` of `buf`.
pub(super) fn push_fields(
    d: &mut DecodedMad,
    name: &'static str,
    parse: ParseFn,
    buf: &[u8],
    offset: usize,
) -> Result<(), Error> {
    let f = parse(buf.get(offset..).unwrap_or(&[]))?;
    d.push_struct(name, offset, f);
    Ok(())
}

/// The note for an attribute this decoder does not know.
pub(super) fn unknown_note(d: &DecodedMad) -> String {
    let attr = d.header.attr_id;
    match attr.name_in(d.header.mgmt_class) {
        Some(n) => format!("attribute {n} ({:#06x}) is not decoded here", attr.0),
        None => format!("unknown attribute {:#06x}", attr.0),
    }
}

/// Decodes one attribute from `data` (found at `offset`): a known one as
/// fields when `data` is long enough, followed by any non-zero bytes after
/// it; anything else as raw bytes with a note.
pub(super) fn push_attribute(
    d: &mut DecodedMad,
    known: Option<Known>,
    data: &[u8],
    offset: usize,
) -> Result<(), Error> {
    match known {
        Some(k) if data.len() >= k.len => {
            push_fields(d, k.name, k.parse, data, 0)?;
            if let Some(l) = d.layers.last_mut() {
                l.offset = offset;
            }
            let rest = data.get(k.len..).unwrap_or(&[]);
            if rest.iter().any(|b| *b != 0) {
                let note = format!("bytes after the {} attribute", k.name);
                push_raw_slice(d, rest, offset + k.len, Some(note));
            }
        }
        Some(k) => {
            let note = format!(
                "{} needs {} bytes but only {} are present; shown raw",
                k.name,
                k.len,
                data.len()
            );
            push_raw_slice(d, data, offset, Some(note));
        }
        None => {
            let note = unknown_note(d);
            push_raw_slice(d, data, offset, Some(note));
        }
    }
    Ok(())
}

/// `len` bytes of `buf` from `offset`, or fewer if `buf` ends first.
pub(super) fn slice_at(buf: &[u8], offset: usize, len: usize) -> &[u8] {
    let end = offset.saturating_add(len).min(buf.len());
    buf.get(offset..end).unwrap_or(&[])
}

/// A structure shown with some of its fields hidden: [`Fields::field_value`]
/// returns `None` for them, which printers skip. Used to show the SMP
/// headers without repeating the common header and the attribute data.
#[derive(Debug)]
pub(super) struct Without<T> {
    pub(super) inner: T,
    pub(super) hidden: &'static [&'static str],
}

impl<T: Fields> Fields for Without<T> {
    fn struct_name(&self) -> &'static str {
        self.inner.struct_name()
    }
    fn field_descs(&self) -> &'static [FieldDesc] {
        self.inner.field_descs()
    }
    fn field_value(&self, index: usize) -> Option<FieldValue<'_>> {
        let desc = self.inner.field_descs().get(index)?;
        if self.hidden.contains(&desc.name) {
            return None;
        }
        self.inner.field_value(index)
    }
}
