//! The walk over a protobuf export: each field read by its number and wire
//! type, and skipped or followed into, without decoding anything.

use super::Field::{Fixed, Many, ManyText, One, Text, Varints};
use super::{Estimate, Msg, Stop, Vectors, fields, malformed, size, too_many};
use crate::budget::heap;
use crate::problem::IngestProblem;

/// Nesting deeper than prost decodes (its recursion limit is 100): refused.
const MAX_DEPTH: u32 = 128;

/// Sizes a protobuf export whose root message is `root`.
pub(crate) fn estimate(root: Msg, body: &[u8]) -> Result<Estimate, IngestProblem> {
    let mut sized = Estimate {
        items: 0,
        bytes: size(root),
    };
    match walk(body, root, 0, &mut sized) {
        Ok(()) => Ok(sized),
        Err(Stop::TooMany) => Err(too_many(root)),
        Err(Stop::Malformed(why)) => Err(malformed(root, false, why)),
    }
}

fn varint(buf: &mut &[u8]) -> Result<u64, Stop> {
    prost::encoding::decode_varint(buf).map_err(|_| Stop::Malformed("a broken varint"))
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], Stop> {
    if buf.len() < n {
        return Err(Stop::Malformed("a field runs past the end"));
    }
    let (taken, rest) = buf.split_at(n);
    *buf = rest;
    Ok(taken)
}

/// A field's key: its number and wire type.
fn key(buf: &mut &[u8]) -> Result<(u32, u64), Stop> {
    let key = varint(buf)?;
    let tag = u32::try_from(key >> 3).map_err(|_| Stop::Malformed("a field number too large"))?;
    Ok((tag, key & 7))
}

/// Skips a field's value of wire type `wire` (after its key).
fn skip(buf: &mut &[u8], tag: u32, wire: u64, depth: u32) -> Result<(), Stop> {
    match wire {
        0 => {
            varint(buf)?;
        }
        1 => {
            take(buf, 8)?;
        }
        2 => {
            let len = usize::try_from(varint(buf)?).map_err(|_| Stop::Malformed("a length"))?;
            take(buf, len)?;
        }
        3 => loop {
            if depth > MAX_DEPTH {
                return Err(Stop::Malformed("groups nested too deep"));
            }
            let (inner, inner_wire) = key(buf)?;
            if inner_wire == 4 {
                if inner != tag {
                    return Err(Stop::Malformed("a group ends with another's tag"));
                }
                break;
            }
            skip(buf, inner, inner_wire, depth + 1)?;
        },
        5 => {
            take(buf, 4)?;
        }
        _ => return Err(Stop::Malformed("an unexpected wire type")),
    }
    Ok(())
}

fn walk(mut buf: &[u8], msg: Msg, depth: u32, sized: &mut Estimate) -> Result<(), Stop> {
    if depth > MAX_DEPTH {
        return Err(Stop::Malformed("messages nested too deep"));
    }
    let table = fields(msg);
    let mut vectors = Vectors::default();
    while !buf.is_empty() {
        let (tag, wire) = key(&mut buf)?;
        if tag == 0 {
            return Err(Stop::Malformed("field number 0"));
        }
        let field = table.iter().find(|(t, _, _)| *t == tag).map(|(_, _, f)| *f);
        match (field, wire) {
            (Some(Fixed | Varints), 0 | 1) => {
                skip(&mut buf, tag, wire, depth)?;
                vectors.add(tag, 8, 1);
            }
            (Some(field), 2) => {
                let len =
                    usize::try_from(varint(&mut buf)?).map_err(|_| Stop::Malformed("a length"))?;
                let payload = take(&mut buf, len)?;
                match field {
                    One(child) => walk(payload, child, depth + 1, sized)?,
                    Many(child) => {
                        sized.item(child)?;
                        vectors.add(tag, size(child), 1);
                        walk(payload, child, depth + 1, sized)?;
                    }
                    Text => sized.add(heap(len)),
                    ManyText => {
                        vectors.add(tag, size_of::<String>(), 1);
                        sized.add(heap(len));
                    }
                    Fixed => vectors.add(tag, 8, len / 8),
                    Varints => vectors.add(tag, 8, payload.iter().filter(|b| **b < 0x80).count()),
                }
            }
            // Scalars, fields the types do not have (groups included), and
            // known fields of the wrong wire type, which prost refuses.
            _ => skip(&mut buf, tag, wire, depth)?,
        }
    }
    sized.add(vectors.bytes());
    Ok(())
}
