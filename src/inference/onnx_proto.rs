//! Just enough of the ONNX protobuf to list a model's initializers whose data sits in an
//! external file: their names, element types, shapes and byte ranges.
//!
//! The hub reads only files that ONNX Runtime wrote for it ([`super::shared_weights`]), but a
//! reader of a file is a reader of hostile bytes: every length is checked against what is left,
//! nesting is fixed (model → graph → tensor → entry), and the counts are bounded.

use std::fmt;

/// ModelProto.graph, GraphProto.initializer.
const MODEL_GRAPH: u32 = 7;
const GRAPH_INITIALIZER: u32 = 5;
/// TensorProto fields.
const TENSOR_DIMS: u32 = 1;
const TENSOR_DATA_TYPE: u32 = 2;
const TENSOR_NAME: u32 = 8;
const TENSOR_EXTERNAL_DATA: u32 = 13;
const TENSOR_DATA_LOCATION: u32 = 14;
/// TensorProto.DataLocation.EXTERNAL.
const LOCATION_EXTERNAL: u64 = 1;

/// The most initializers and dimensions a network may have here (BirdNET has some 140 and 4).
const MAX_INITIALIZERS: usize = 100_000;
const MAX_DIMS: usize = 16;

/// An initializer stored outside the model file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalTensor {
    pub name: String,
    /// `TensorProto.DataType` (1 = float, 7 = int64, ...).
    pub data_type: i32,
    pub dims: Vec<i64>,
    /// The file it is in, relative to the model.
    pub location: String,
    pub offset: u64,
    pub length: u64,
}

/// Why a model file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoError(&'static str);

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a readable ONNX model: {}", self.0)
    }
}

impl std::error::Error for ProtoError {}

/// The initializers of `model` (a serialised ModelProto) whose data is external.
pub fn external_initializers(model: &[u8]) -> Result<Vec<ExternalTensor>, ProtoError> {
    let mut found = Vec::new();
    let mut fields = Fields::new(model);
    while let Some((number, value)) = fields.next()? {
        if number != MODEL_GRAPH {
            continue;
        }
        let mut graph = Fields::new(value.bytes()?);
        while let Some((number, value)) = graph.next()? {
            if number != GRAPH_INITIALIZER {
                continue;
            }
            if found.len() == MAX_INITIALIZERS {
                return Err(ProtoError("too many initializers"));
            }
            if let Some(tensor) = tensor(value.bytes()?)? {
                found.push(tensor);
            }
        }
    }
    Ok(found)
}

/// One TensorProto, if its data is external.
fn tensor(bytes: &[u8]) -> Result<Option<ExternalTensor>, ProtoError> {
    let mut t = ExternalTensor {
        name: String::new(),
        data_type: 0,
        dims: Vec::new(),
        location: String::new(),
        offset: 0,
        length: u64::MAX,
    };
    let mut external = false;
    let mut fields = Fields::new(bytes);
    while let Some((number, value)) = fields.next()? {
        match (number, value) {
            (TENSOR_DIMS, Value::Varint(d)) => push_dim(&mut t.dims, d)?,
            (TENSOR_DIMS, Value::Bytes(packed)) => {
                let mut r = Fields::new(packed);
                while !r.done() {
                    push_dim(&mut t.dims, r.varint()?)?;
                }
            }
            (TENSOR_DATA_TYPE, Value::Varint(v)) => {
                t.data_type = i32::try_from(v).map_err(|_| ProtoError("data type out of range"))?
            }
            (TENSOR_NAME, Value::Bytes(b)) => t.name = text(b)?,
            (TENSOR_EXTERNAL_DATA, Value::Bytes(b)) => entry(b, &mut t)?,
            (TENSOR_DATA_LOCATION, Value::Varint(v)) => external = v == LOCATION_EXTERNAL,
            _ => {}
        }
    }
    if !external {
        return Ok(None);
    }
    if t.name.is_empty() || t.location.is_empty() || t.length == u64::MAX {
        return Err(ProtoError("an external tensor without a name, file or length"));
    }
    Ok(Some(t))
}

fn push_dim(dims: &mut Vec<i64>, d: u64) -> Result<(), ProtoError> {
    if dims.len() == MAX_DIMS {
        return Err(ProtoError("too many dimensions"));
    }
    // int64 on the wire: a negative dimension is ten bytes of two's complement.
    let d = d as i64;
    if d < 0 {
        return Err(ProtoError("a negative dimension"));
    }
    dims.push(d);
    Ok(())
}

/// A StringStringEntryProto of `external_data`: location, offset or length.
fn entry(bytes: &[u8], t: &mut ExternalTensor) -> Result<(), ProtoError> {
    let (mut key, mut value) = (String::new(), String::new());
    let mut fields = Fields::new(bytes);
    while let Some((number, v)) = fields.next()? {
        match number {
            1 => key = text(v.bytes()?)?,
            2 => value = text(v.bytes()?)?,
            _ => {}
        }
    }
    let number = || value.parse::<u64>().map_err(|_| ProtoError("an external offset or length is not a number"));
    match key.as_str() {
        "location" => t.location = value.clone(),
        "offset" => t.offset = number()?,
        "length" => t.length = number()?,
        _ => {}
    }
    Ok(())
}

fn text(bytes: &[u8]) -> Result<String, ProtoError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| ProtoError("a name is not UTF-8"))
}

/// A field's value by wire type (fixed-width values are skipped: nothing read here uses them).
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

impl<'a> Value<'a> {
    fn bytes(self) -> Result<&'a [u8], ProtoError> {
        match self {
            Value::Bytes(b) => Ok(b),
            _ => Err(ProtoError("a message field has the wrong wire type")),
        }
    }
}

/// The fields of one message, in order.
struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.buf.get(self.pos).ok_or(ProtoError("truncated"))?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtoError("a varint longer than ten bytes"))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], ProtoError> {
        let left = self.buf.len() - self.pos;
        let n = usize::try_from(n).ok().filter(|&n| n <= left).ok_or(ProtoError("truncated"))?;
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn next(&mut self) -> Result<Option<(u32, Value<'a>)>, ProtoError> {
        if self.done() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| ProtoError("a field number out of range"))?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed
            }
            2 => {
                let n = self.varint()?;
                Value::Bytes(self.take(n)?)
            }
            5 => {
                self.take(4)?;
                Value::Fixed
            }
            _ => return Err(ProtoError("an unsupported wire type")),
        };
        Ok(Some((number, value)))
    }
}

#[cfg(test)]
#[path = "onnx_proto_tests.rs"]
mod tests;
