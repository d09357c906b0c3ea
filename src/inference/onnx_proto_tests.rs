use proptest::prelude::*;

use super::*;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn bytes_field(number: u32, body: &[u8], out: &mut Vec<u8>) {
    varint(u64::from(number) << 3 | 2, out);
    varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

fn varint_field(number: u32, v: u64, out: &mut Vec<u8>) {
    varint(u64::from(number) << 3, out);
    varint(v, out);
}

fn entry(key: &str, value: &str) -> Vec<u8> {
    let mut e = Vec::new();
    bytes_field(1, key.as_bytes(), &mut e);
    bytes_field(2, value.as_bytes(), &mut e);
    e
}

/// A TensorProto: external (with packed dims) or inline.
fn tensor(name: &str, dims: &[u64], external: Option<(u64, u64)>, packed: bool) -> Vec<u8> {
    let mut t = Vec::new();
    if packed {
        let mut p = Vec::new();
        for &d in dims {
            varint(d, &mut p);
        }
        bytes_field(1, &p, &mut t);
    } else {
        for &d in dims {
            varint_field(1, d, &mut t);
        }
    }
    varint_field(2, 1, &mut t);
    bytes_field(8, name.as_bytes(), &mut t);
    // A float32 field (fixed32) and a double (fixed64) the reader must step over.
    t.extend_from_slice(&[(4 << 3) | 5, 0, 0, 128, 63]);
    t.extend_from_slice(&[(10 << 3) | 1, 0, 0, 0, 0, 0, 0, 240, 63]);
    match external {
        Some((offset, length)) => {
            bytes_field(13, &entry("location", "net.bin"), &mut t);
            bytes_field(13, &entry("offset", &offset.to_string()), &mut t);
            bytes_field(13, &entry("length", &length.to_string()), &mut t);
            varint_field(14, 1, &mut t);
        }
        None => bytes_field(9, &[0; 16], &mut t),
    }
    t
}

fn model(tensors: &[Vec<u8>]) -> Vec<u8> {
    let mut graph = Vec::new();
    bytes_field(1, b"a node the reader skips", &mut graph);
    for t in tensors {
        bytes_field(5, t, &mut graph);
    }
    let mut m = Vec::new();
    varint_field(1, 8, &mut m);
    bytes_field(7, &graph, &mut m);
    m
}

fn sample() -> Vec<u8> {
    model(&[
        tensor("conv/w", &[1536, 1, 3, 3], Some((4096, 55_296)), true),
        tensor("inline", &[4], None, true),
        tensor("dense/b", &[6522], Some((59_392, 26_088)), false),
    ])
}

#[test]
fn lists_the_external_initializers_with_their_shapes_and_ranges() {
    let found = external_initializers(&sample()).expect("the sample reads");
    assert_eq!(
        found,
        vec![
            ExternalTensor {
                name: "conv/w".into(),
                data_type: 1,
                dims: vec![1536, 1, 3, 3],
                location: "net.bin".into(),
                offset: 4096,
                length: 55_296,
            },
            ExternalTensor {
                name: "dense/b".into(),
                data_type: 1,
                dims: vec![6522],
                location: "net.bin".into(),
                offset: 59_392,
                length: 26_088,
            },
        ]
    );
}

#[test]
fn every_truncation_is_an_error_or_a_shorter_list_never_a_panic() {
    let full = sample();
    for end in 0..full.len() {
        if let Ok(found) = external_initializers(&full[..end]) {
            assert!(found.len() < 2, "a cut at {end} of {} still read both tensors", full.len());
        }
    }
}

#[test]
fn lengths_past_the_end_overlong_varints_and_groups_are_refused() {
    // A graph that claims 1 GB.
    let mut m = Vec::new();
    varint(7 << 3 | 2, &mut m);
    varint(1 << 30, &mut m);
    m.extend_from_slice(&[0; 8]);
    assert_eq!(external_initializers(&m), Err(ProtoError("truncated")));
    // Eleven continuation bytes.
    let m = [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    assert_eq!(external_initializers(&m), Err(ProtoError("a varint longer than ten bytes")));
    // A start-group wire type.
    assert_eq!(external_initializers(&[(7 << 3) | 3]), Err(ProtoError("an unsupported wire type")));
    // The graph field as a varint.
    assert_eq!(external_initializers(&[7 << 3, 1]), Err(ProtoError("a message field has the wrong wire type")));
}

#[test]
fn bad_dimensions_and_incomplete_external_tensors_are_refused() {
    let negative = model(&[tensor("w", &[u64::MAX], Some((0, 4)), true)]);
    assert_eq!(external_initializers(&negative), Err(ProtoError("a negative dimension")));
    let deep = model(&[tensor("w", &[1; 17], Some((0, 4)), false)]);
    assert_eq!(external_initializers(&deep), Err(ProtoError("too many dimensions")));
    // External, but no length entry.
    let mut t = Vec::new();
    bytes_field(8, b"w", &mut t);
    bytes_field(13, &entry("location", "net.bin"), &mut t);
    varint_field(14, 1, &mut t);
    assert_eq!(
        external_initializers(&model(&[t])),
        Err(ProtoError("an external tensor without a name, file or length"))
    );
    let mut t = Vec::new();
    bytes_field(8, b"w", &mut t);
    bytes_field(13, &entry("length", "-4"), &mut t);
    assert_eq!(external_initializers(&model(&[t])), Err(ProtoError("an external offset or length is not a number")));
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = external_initializers(&bytes);
    }

    #[test]
    fn flipped_bytes_of_a_real_layout_never_panic(at in 0usize..200, to in any::<u8>()) {
        let mut m = sample();
        let at = at % m.len();
        m[at] = to;
        let _ = external_initializers(&m);
    }
}
