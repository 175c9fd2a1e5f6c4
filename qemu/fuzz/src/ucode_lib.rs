//! The `ucode_lib.json` reader (`UcodeLib::from_json`) against the schema's rules, and
//! the writer against the reader.
//!
//! Input: a mode byte. Raw mode (odd) reads the whole input, that byte included, as
//! text, so a `ucode_lib.json` file is a raw input as it is. Document mode (even) builds a document
//! from the fuzzer's choices (names from a small pool, so duplicates happen, with
//! quotes, backslashes, control and non-ASCII characters; keys in any order; any
//! opcode and sub_opcode; any core numbers), writes it as JSON, perhaps broken in its
//! shape (an unknown, missing or repeated key, a value of the wrong type or range,
//! trailing text), and knows what the reader must answer.
//!
//! Checked, whatever the text:
//! - `from_json` never panics;
//! - in document mode it returns exactly the model's document or error;
//! - whatever it accepts obeys every rule of the schema (checked independently), and
//!   `to_json` writes it as text that reads back to the same document and writes
//!   again to the same text.

use arbitrary::{Arbitrary, Unstructured};
use neuroncustomop_ucode_lib::{FUNCTION_OPCODE, FunctionEntry, LibraryEntry, UcodeLib, UcodeLibError};
use neuroncustomop_wire::FunctionId;
use std::collections::{HashMap, HashSet};

use crate::ensure_eq;

/// Names the documents are made of: few, so that duplicates are common.
const NAMES: [&str; 8] = ["relu", "sort", "lib\"q\".so", "back\\slash", "tab\there", "é ü ✓", "", "nul\u{0}x"];

#[derive(Arbitrary, Debug)]
struct FunctionSpec {
    name: u8,
    /// `None`: 133, the only valid opcode.
    opcode: Option<i64>,
    sub_opcode: u8,
}

#[derive(Arbitrary, Debug)]
struct LibrarySpec {
    library: u8,
    versions: (u8, u8),
    is_builtin: bool,
    cpu_id: u8,
    total_cpus: u8,
    functions: Vec<FunctionSpec>,
    /// A rotation of the keys' order.
    key_rotation: u8,
}

/// A break in the document's shape: the reader must answer with a JSON error.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Break {
    UnknownKey,
    MissingKey(u8),
    RepeatedKey(u8),
    NumberAsString,
    CpuIdOutOfByteRange(u16),
    NegativeTotal,
    FloatSubOpcode,
    TrailingText,
    NotAnObject,
}

#[derive(Arbitrary, Debug)]
struct DocumentSpec {
    libraries: Vec<LibrarySpec>,
    /// Where a break goes: in library `.0` (mod the count), or at the top level.
    broken: Option<(u8, Break)>,
}

fn name(index: u8) -> &'static str {
    NAMES[usize::from(index) % NAMES.len()]
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

/// Writes `"key": value` members as an object, rotated by `rotation`, with `broken`
/// applied when it is one that acts on an object's members.
fn object(mut members: Vec<(&str, String)>, rotation: u8, broken: Option<Break>) -> String {
    let len = members.len();
    members.rotate_left(usize::from(rotation) % len);
    match broken {
        Some(Break::UnknownKey) => members.push(("extra", "0".to_owned())),
        Some(Break::MissingKey(k)) => drop(members.remove(usize::from(k) % len)),
        Some(Break::RepeatedKey(k)) => members.push(members[usize::from(k) % len].clone()),
        _ => {}
    }
    let body: Vec<String> = members.iter().map(|(key, value)| format!("{}: {value}", quoted(key))).collect();
    format!("{{{}}}", body.join(", "))
}

/// The document's text, and whether a break made its shape invalid.
fn write_document(spec: &DocumentSpec) -> (String, bool) {
    let count = spec.libraries.len();
    let target = spec.broken.map(|(at, brk)| (usize::from(at) % count.max(1), brk));
    let mut broke = false;
    let libraries: Vec<String> = spec
        .libraries
        .iter()
        .enumerate()
        .map(|(index, library)| {
            let brk = target.filter(|&(at, _)| at == index).map(|(_, brk)| brk);
            broke |= brk.is_some() && !matches!(brk, Some(Break::TrailingText | Break::NotAnObject));
            let mut cpu_id = library.cpu_id.to_string();
            let mut total_cpus = library.total_cpus.to_string();
            match brk {
                Some(Break::NumberAsString) => cpu_id = quoted(&cpu_id),
                Some(Break::CpuIdOutOfByteRange(extra)) => cpu_id = (256 + u32::from(extra)).to_string(),
                Some(Break::NegativeTotal) => total_cpus = "-1".to_owned(),
                _ => {}
            }
            let functions: Vec<String> = library
                .functions
                .iter()
                .enumerate()
                .map(|(k, function)| {
                    let opcode = function.opcode.unwrap_or(FUNCTION_OPCODE);
                    let sub_opcode = match brk {
                        Some(Break::FloatSubOpcode) if k == 0 => format!("{}.5", function.sub_opcode),
                        _ => function.sub_opcode.to_string(),
                    };
                    let members = vec![
                        ("name", quoted(name(function.name))),
                        ("opcode", opcode.to_string()),
                        ("sub_opcode", sub_opcode),
                    ];
                    object(members, library.key_rotation, None)
                })
                .collect();
            // A float sub_opcode with no function to carry it breaks nothing.
            broke &= !(matches!(brk, Some(Break::FloatSubOpcode)) && library.functions.is_empty());
            let members = vec![
                ("library", quoted(name(library.library))),
                ("ulib_to_ucode_version", quoted(name(library.versions.0))),
                ("ulib_to_isa_version", quoted(name(library.versions.1))),
                ("is_builtin", library.is_builtin.to_string()),
                ("cpu_id", cpu_id),
                ("total_cpus", total_cpus),
                ("functions", format!("[{}]", functions.join(", "))),
            ];
            let object_break =
                brk.filter(|b| matches!(b, Break::UnknownKey | Break::MissingKey(_) | Break::RepeatedKey(_)));
            object(members, library.key_rotation, object_break)
        })
        .collect();
    let mut text = format!("{{\"ucode_lib\": [{}]}}\n", libraries.join(",\n"));
    match target {
        Some((_, Break::TrailingText)) => {
            text.push_str("{}");
            broke = true;
        }
        Some((_, Break::NotAnObject)) => {
            text = format!("[{text}]");
            broke = true;
        }
        _ => {}
    }
    (text, broke)
}

/// What the reader must answer for an unbroken document: the per-function field
/// errors first (the whole document is converted before the rules are checked), then
/// the rules in document order.
fn model_read(spec: &DocumentSpec) -> Result<UcodeLib, UcodeLibError> {
    let mut libraries = Vec::new();
    for library in &spec.libraries {
        let library_name = name(library.library).to_owned();
        let mut functions = Vec::new();
        for function in &library.functions {
            let function_name = name(function.name).to_owned();
            let opcode = function.opcode.unwrap_or(FUNCTION_OPCODE);
            if opcode != FUNCTION_OPCODE {
                return Err(UcodeLibError::WrongOpcode { library: library_name, function: function_name, opcode });
            }
            match function.sub_opcode {
                0xFF => return Err(UcodeLibError::UnsetSubOpcode { library: library_name, function: function_name }),
                0xFE => {
                    return Err(UcodeLibError::SubOpcodeOutOfRange {
                        library: library_name,
                        function: function_name,
                        sub_opcode: 0xFE,
                    });
                }
                raw => functions
                    .push(FunctionEntry { name: function_name, sub_opcode: FunctionId::new(raw).expect("below 254") }),
            }
        }
        libraries.push(LibraryEntry {
            library: library_name,
            ulib_to_ucode_version: name(library.versions.0).to_owned(),
            ulib_to_isa_version: name(library.versions.1).to_owned(),
            is_builtin: library.is_builtin,
            cpu_id: library.cpu_id,
            total_cpus: library.total_cpus,
            functions,
        });
    }
    let document = UcodeLib { libraries };
    model_rules(&document)?;
    Ok(document)
}

/// The schema's rules (`docs/abi/dispatch.md`): `cpu_id < total_cpus`; library names
/// unique; function names and FunctionIds unique within a library; one name per
/// FunctionId across the document. The first rule broken, in document order.
fn model_rules(document: &UcodeLib) -> Result<(), UcodeLibError> {
    let mut library_names = HashSet::new();
    let mut name_of_id: HashMap<FunctionId, &str> = HashMap::new();
    for entry in &document.libraries {
        let library = entry.library.clone();
        if entry.cpu_id >= entry.total_cpus {
            return Err(UcodeLibError::CpuIdOutOfRange { library, cpu_id: entry.cpu_id, total_cpus: entry.total_cpus });
        }
        if !library_names.insert(entry.library.as_str()) {
            return Err(UcodeLibError::DuplicateLibrary { library });
        }
        for (k, function) in entry.functions.iter().enumerate() {
            let earlier = &entry.functions[..k];
            if earlier.iter().any(|f| f.name == function.name) {
                return Err(UcodeLibError::DuplicateFunctionName { library, function: function.name.clone() });
            }
            if earlier.iter().any(|f| f.sub_opcode == function.sub_opcode) {
                return Err(UcodeLibError::DuplicateSubOpcode { library, id: function.sub_opcode });
            }
            let first = *name_of_id.entry(function.sub_opcode).or_insert(&function.name);
            if first != function.name {
                return Err(UcodeLibError::ConflictingFunctionId {
                    id: function.sub_opcode,
                    first: first.to_owned(),
                    second: function.name.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Whatever the reader accepted: every rule holds, and it writes and reads back.
fn check_accepted(document: &UcodeLib) {
    if let Err(error) = model_rules(document) {
        panic!("from_json accepted a document that breaks a rule: {error:?}");
    }
    for function in document.libraries.iter().flat_map(|entry| &entry.functions) {
        ensure_eq!(document.function_name(function.sub_opcode), Some(function.name.as_str()), "function_name");
    }
    let text = document.to_json().unwrap_or_else(|error| panic!("to_json refuses an accepted document: {error}"));
    let reread = UcodeLib::from_json(&text).unwrap_or_else(|error| panic!("from_json refuses to_json's text: {error}"));
    ensure_eq!(&reread, document, "read back");
    ensure_eq!(reread.to_json().expect("valid"), text, "written again");
}

/// Compares two errors by variant and fields (a JSON error's position aside).
fn same_error(got: &UcodeLibError, expected: &UcodeLibError) -> bool {
    match (got, expected) {
        (UcodeLibError::Json(_), UcodeLibError::Json(_)) => true,
        _ => format!("{got:?}") == format!("{expected:?}"),
    }
}

/// The whole target.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode & 1 == 1 {
        // The whole input, mode byte included: a JSON file ('{' is odd) is a raw input.
        if let Ok(document) = UcodeLib::from_json(&String::from_utf8_lossy(data)) {
            check_accepted(&document);
        }
        return;
    }
    let Ok(spec) = DocumentSpec::arbitrary(&mut Unstructured::new(rest)) else { return };
    let (text, broke) = write_document(&spec);
    let got = UcodeLib::from_json(&text);
    if broke {
        match got {
            Err(UcodeLibError::Json(_)) => {}
            other => panic!("a broken document read as {other:?}:\n{text}"),
        }
        return;
    }
    match (got, model_read(&spec)) {
        (Ok(document), Ok(expected)) => {
            ensure_eq!(document, expected, "the document read");
            check_accepted(&document);
        }
        (Err(error), Err(expected)) => {
            assert!(same_error(&error, &expected), "from_json gave {error:?}, the model {expected:?}:\n{text}");
            assert!(!error.to_string().is_empty(), "{error:?} displays as nothing");
        }
        (got, expected) => panic!("from_json gave {got:?}, the model {expected:?}:\n{text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_random_inputs_pass() {
        crate::smoke::check_inputs(check, 5_000, 512);
    }

    #[test]
    fn the_model_refuses_a_second_name_for_an_id() {
        let function = |name: &str| FunctionEntry { name: name.to_owned(), sub_opcode: FunctionId::new(1).unwrap() };
        let library = |name: &str, f: FunctionEntry| LibraryEntry {
            library: name.to_owned(),
            ulib_to_ucode_version: String::new(),
            ulib_to_isa_version: String::new(),
            is_builtin: false,
            cpu_id: 0,
            total_cpus: 1,
            functions: vec![f],
        };
        let document = UcodeLib { libraries: vec![library("a", function("x")), library("b", function("y"))] };
        assert!(matches!(model_rules(&document), Err(UcodeLibError::ConflictingFunctionId { .. })));
    }
}
