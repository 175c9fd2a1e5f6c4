//! `ucode_lib.json`: the table that binds each FunctionId of the dispatch words to a
//! kernel name in a per-core library, as the compiler's `ModuleArtifactInfo` builds it
//! and its NEFF packager writes it.
//!
//! [`UcodeLibRegistry`] mirrors the compiler's three entry points
//! (`addCustomOpLibFile`, `allocateCustomOpFunctionId`, `addCustomOpFunction`);
//! [`UcodeLib`] is the resulting document, written with [`UcodeLib::to_json`] and read
//! back, strictly checked, with [`UcodeLib::from_json`]. The loader maps a header's
//! FunctionId to a name with [`UcodeLib::function_name`], then the name to the kernel
//! the library registered. Schema and rules: `docs/abi/dispatch.md`.
//!
//! ```
//! use neuroncustomop_ucode_lib::{UcodeLib, UcodeLibRegistry};
//!
//! let mut registry = UcodeLibRegistry::new();
//! let relu = registry.allocate_function_id().unwrap();
//! for cpu in 0..8 {
//!     let library = format!("librelu_cpu{cpu}.so");
//!     registry.add_lib_file(&library, "1.0", "2.0", false, cpu, 8).unwrap();
//!     registry.add_function(&library, "relu", relu).unwrap();
//! }
//! let json = registry.ucode_lib().to_json().unwrap();
//! let read = UcodeLib::from_json(&json).unwrap();
//! assert_eq!(&read, registry.ucode_lib());
//! assert_eq!(read.function_name(relu), Some("relu"));
//! ```

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fmt;

use neuroncustomop_wire::{FunctionId, FunctionTable, HEADER_OPCODE};
use serde::{Deserialize, Serialize};

/// The `opcode` every function carries: the header word's opcode, 0x85 = 133.
pub const FUNCTION_OPCODE: i64 = HEADER_OPCODE as i64;

/// The whole `ucode_lib.json` document: every library of the module, in registration
/// order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UcodeLib {
    /// The libraries, one per file (the 8 per-core images of a package are 8 entries).
    pub libraries: Vec<LibraryEntry>,
}

/// One library file and the functions it provides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryEntry {
    /// The library's file name, unique in the document.
    pub library: String,
    /// The library-to-microcode version, carried verbatim from the library's build.
    pub ulib_to_ucode_version: String,
    /// The library-to-ISA version, carried verbatim from the library's build.
    pub ulib_to_isa_version: String,
    /// Whether the library is one of the compiler's builtins (sort, top-k).
    pub is_builtin: bool,
    /// The core this image is linked for, below `total_cpus`.
    pub cpu_id: u8,
    /// How many cores the package has images for.
    pub total_cpus: u8,
    /// The functions, in registration order.
    pub functions: Vec<FunctionEntry>,
}

/// One function of a library: its name and the FunctionId that selects it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionEntry {
    /// The name the kernel is registered under.
    pub name: String,
    /// The FunctionId (JSON `sub_opcode`); the JSON `opcode` is always 133.
    pub sub_opcode: FunctionId,
}

/// Why a registration was refused, or why a `ucode_lib.json` was rejected.
#[derive(Debug)]
pub enum UcodeLibError {
    /// The text is not JSON, or does not have the schema's shape: an unknown, missing or
    /// repeated key, or a value of the wrong type or range. Says where.
    Json(serde_json::Error),
    /// A library was registered again with different version strings.
    VersionMismatch {
        /// The library.
        library: String,
        /// (ucode, ISA) versions registered first.
        registered: (String, String),
        /// (ucode, ISA) versions of the new registration.
        requested: (String, String),
    },
    /// A library was registered again, same versions, but another builtin flag, core
    /// or core count.
    AttributeMismatch {
        /// The library.
        library: String,
    },
    /// A library's `cpu_id` is not below its `total_cpus`.
    CpuIdOutOfRange {
        /// The library.
        library: String,
        /// Its core.
        cpu_id: u8,
        /// Its core count.
        total_cpus: u8,
    },
    /// The same library file appears twice in the document.
    DuplicateLibrary {
        /// The library.
        library: String,
    },
    /// A function was added to a library that was never registered.
    UnknownLibrary {
        /// The library named.
        library: String,
    },
    /// All [`FunctionId::MAX_FUNCTIONS`] FunctionIds are taken.
    TooManyFunctions,
    /// A function was added with a FunctionId the registry never allocated.
    UnallocatedFunctionId {
        /// The id.
        id: FunctionId,
    },
    /// A function already in a library was added again with another FunctionId.
    FunctionRebound {
        /// The library.
        library: String,
        /// The function.
        function: String,
        /// Its id.
        registered: FunctionId,
        /// The other id.
        requested: FunctionId,
    },
    /// One FunctionId names two different functions, so a header could not say which.
    ConflictingFunctionId {
        /// The id.
        id: FunctionId,
        /// The function it was bound to first.
        first: String,
        /// The other function.
        second: String,
    },
    /// A function name appears twice in one library.
    DuplicateFunctionName {
        /// The library.
        library: String,
        /// The function.
        function: String,
    },
    /// A FunctionId appears twice in one library.
    DuplicateSubOpcode {
        /// The library.
        library: String,
        /// The id.
        id: FunctionId,
    },
    /// A function's `opcode` is not 133.
    WrongOpcode {
        /// The library.
        library: String,
        /// The function.
        function: String,
        /// The value found.
        opcode: i64,
    },
    /// A function's `sub_opcode` is 0xFF, the "unset" FunctionId.
    UnsetSubOpcode {
        /// The library.
        library: String,
        /// The function.
        function: String,
    },
    /// A function's `sub_opcode` is 0xFE: past the 254 FunctionIds a module can have.
    SubOpcodeOutOfRange {
        /// The library.
        library: String,
        /// The function.
        function: String,
        /// The value found.
        sub_opcode: u8,
    },
}

impl fmt::Display for UcodeLibError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Json(error) => write!(f, "ucode_lib.json does not match the schema: {error}"),
            Self::VersionMismatch { library, registered, requested } => write!(
                f,
                "library {library} registered again with versions (ucode {:?}, isa {:?}), \
                 first registered with (ucode {:?}, isa {:?})",
                requested.0, requested.1, registered.0, registered.1
            ),
            Self::AttributeMismatch { library } => {
                write!(f, "library {library} registered again with another is_builtin, cpu_id or total_cpus")
            }
            Self::CpuIdOutOfRange { library, cpu_id, total_cpus } => {
                write!(f, "library {library}: cpu_id {cpu_id} is not below total_cpus {total_cpus}")
            }
            Self::DuplicateLibrary { library } => write!(f, "library {library} appears twice"),
            Self::UnknownLibrary { library } => {
                write!(f, "function added to library {library}, which is not registered")
            }
            Self::TooManyFunctions => {
                write!(f, "number of unique custom op functions cannot exceed {}", FunctionId::MAX_FUNCTIONS)
            }
            Self::UnallocatedFunctionId { id } => {
                write!(f, "FunctionId {} was never allocated", id.get())
            }
            Self::FunctionRebound { library, function, registered, requested } => write!(
                f,
                "library {library}: function {function} has FunctionId {}, not {}",
                registered.get(),
                requested.get()
            ),
            Self::ConflictingFunctionId { id, first, second } => {
                write!(f, "FunctionId {} names both {first} and {second}", id.get())
            }
            Self::DuplicateFunctionName { library, function } => {
                write!(f, "library {library}: function {function} appears twice")
            }
            Self::DuplicateSubOpcode { library, id } => {
                write!(f, "library {library}: sub_opcode {} appears twice", id.get())
            }
            Self::WrongOpcode { library, function, opcode } => {
                write!(f, "library {library}: function {function} has opcode {opcode}, not {FUNCTION_OPCODE}")
            }
            Self::UnsetSubOpcode { library, function } => {
                write!(f, "library {library}: function {function} has sub_opcode 255 (unset)")
            }
            Self::SubOpcodeOutOfRange { library, function, sub_opcode } => write!(
                f,
                "library {library}: function {function} has sub_opcode {sub_opcode}, \
                 past the {} FunctionIds a module can have",
                FunctionId::MAX_FUNCTIONS
            ),
        }
    }
}

impl std::error::Error for UcodeLibError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Json(error) => Some(error),
            _ => None,
        }
    }
}

impl UcodeLib {
    /// The document as `ucode_lib.json` text: `{"ucode_lib": [...]}` with the schema's
    /// key order, 2-space indentation and a final newline.
    ///
    /// # Errors
    /// Whatever [`validate`](Self::validate) finds: an invalid model is never written.
    pub fn to_json(&self) -> Result<String, UcodeLibError> {
        self.validate()?;
        let document = RawDocument { ucode_lib: self.libraries.iter().map(RawLibrary::from).collect() };
        let mut text = serde_json::to_string_pretty(&document).map_err(UcodeLibError::Json)?;
        text.push('\n');
        Ok(text)
    }

    /// Reads `ucode_lib.json` text, checking the schema and every rule.
    ///
    /// # Errors
    /// [`UcodeLibError::Json`] for text that is not the schema's shape (unknown,
    /// missing or repeated keys, wrong types, numbers out of a byte's range);
    /// [`UcodeLibError::WrongOpcode`], [`UcodeLibError::UnsetSubOpcode`] and
    /// [`UcodeLibError::SubOpcodeOutOfRange`] for bad function fields; and whatever
    /// [`validate`](Self::validate) finds.
    pub fn from_json(text: &str) -> Result<Self, UcodeLibError> {
        let document: RawDocument = serde_json::from_str(text).map_err(UcodeLibError::Json)?;
        let libraries = document.ucode_lib.into_iter().map(LibraryEntry::try_from).collect::<Result<_, _>>()?;
        let ucode_lib = Self { libraries };
        ucode_lib.validate()?;
        Ok(ucode_lib)
    }

    /// Checks the rules that the types alone do not: `cpu_id < total_cpus`, library
    /// names unique, function names and FunctionIds unique within a library, and each
    /// FunctionId naming one function across the whole document.
    ///
    /// # Errors
    /// The first rule broken, in document order.
    pub fn validate(&self) -> Result<(), UcodeLibError> {
        let mut library_names = HashSet::new();
        let mut names_by_id: HashMap<FunctionId, &str> = HashMap::new();
        for entry in &self.libraries {
            check_cpu_id(&entry.library, entry.cpu_id, entry.total_cpus)?;
            if !library_names.insert(entry.library.as_str()) {
                return Err(UcodeLibError::DuplicateLibrary { library: entry.library.clone() });
            }
            let mut function_names = HashSet::new();
            let mut ids = HashSet::new();
            for function in &entry.functions {
                if !function_names.insert(function.name.as_str()) {
                    return Err(UcodeLibError::DuplicateFunctionName {
                        library: entry.library.clone(),
                        function: function.name.clone(),
                    });
                }
                if !ids.insert(function.sub_opcode) {
                    return Err(UcodeLibError::DuplicateSubOpcode {
                        library: entry.library.clone(),
                        id: function.sub_opcode,
                    });
                }
                bind_id(&mut names_by_id, function.sub_opcode, &function.name)?;
            }
        }
        Ok(())
    }

    /// The name of the function `id` selects, in whichever library has it.
    pub fn function_name(&self, id: FunctionId) -> Option<&str> {
        self.libraries
            .iter()
            .flat_map(|entry| &entry.functions)
            .find(|function| function.sub_opcode == id)
            .map(|function| function.name.as_str())
    }
}

/// A FunctionId is known when some library has a function with it.
impl FunctionTable for UcodeLib {
    fn contains(&self, id: FunctionId) -> bool {
        self.function_name(id).is_some()
    }
}

/// Builds a [`UcodeLib`] the way the compiler's `ModuleArtifactInfo` does: register the
/// library files, allocate a FunctionId per unique function (dense from 0), bind each
/// function to its libraries.
#[derive(Clone, Debug, Default)]
pub struct UcodeLibRegistry {
    ucode_lib: UcodeLib,
    next_function_id: usize,
}

impl UcodeLibRegistry {
    /// An empty registry: no libraries, no FunctionIds allocated.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a library file (`addCustomOpLibFile`). Registering it again with the
    /// same fields does nothing.
    ///
    /// # Errors
    /// [`UcodeLibError::VersionMismatch`] if it was registered with other version
    /// strings, [`UcodeLibError::AttributeMismatch`] if with another builtin flag, core
    /// or core count, and [`UcodeLibError::CpuIdOutOfRange`] unless
    /// `cpu_id < total_cpus`.
    pub fn add_lib_file(
        &mut self,
        name: &str,
        ulib_to_ucode_version: &str,
        ulib_to_isa_version: &str,
        is_builtin: bool,
        cpu_id: u8,
        total_cpus: u8,
    ) -> Result<(), UcodeLibError> {
        if let Some(existing) = self.library(name) {
            if existing.ulib_to_ucode_version != ulib_to_ucode_version
                || existing.ulib_to_isa_version != ulib_to_isa_version
            {
                return Err(UcodeLibError::VersionMismatch {
                    library: name.to_owned(),
                    registered: (existing.ulib_to_ucode_version.clone(), existing.ulib_to_isa_version.clone()),
                    requested: (ulib_to_ucode_version.to_owned(), ulib_to_isa_version.to_owned()),
                });
            }
            if (existing.is_builtin, existing.cpu_id, existing.total_cpus) != (is_builtin, cpu_id, total_cpus) {
                return Err(UcodeLibError::AttributeMismatch { library: name.to_owned() });
            }
            return Ok(());
        }
        check_cpu_id(name, cpu_id, total_cpus)?;
        self.ucode_lib.libraries.push(LibraryEntry {
            library: name.to_owned(),
            ulib_to_ucode_version: ulib_to_ucode_version.to_owned(),
            ulib_to_isa_version: ulib_to_isa_version.to_owned(),
            is_builtin,
            cpu_id,
            total_cpus,
            functions: Vec::new(),
        });
        Ok(())
    }

    /// Allocates the next FunctionId (`allocateCustomOpFunctionId`): 0, 1, 2, … in call
    /// order, one per unique function of the module.
    ///
    /// # Errors
    /// [`UcodeLibError::TooManyFunctions`] once [`FunctionId::MAX_FUNCTIONS`] (254) ids
    /// are taken: 0xFE would be the 255th and 0xFF means "unset".
    pub fn allocate_function_id(&mut self) -> Result<FunctionId, UcodeLibError> {
        let id = u8::try_from(self.next_function_id)
            .ok()
            .and_then(FunctionId::new)
            .ok_or(UcodeLibError::TooManyFunctions)?;
        self.next_function_id += 1;
        Ok(id)
    }

    /// Binds `function` in `library` to `id` (`addCustomOpFunction`). Adding the same
    /// binding again does nothing.
    ///
    /// # Errors
    /// [`UcodeLibError::UnallocatedFunctionId`] for an id not yet allocated,
    /// [`UcodeLibError::UnknownLibrary`] for a library not registered,
    /// [`UcodeLibError::FunctionRebound`] if the library has the function under another
    /// id, and [`UcodeLibError::ConflictingFunctionId`] if `id` already names another
    /// function.
    pub fn add_function(&mut self, library: &str, function: &str, id: FunctionId) -> Result<(), UcodeLibError> {
        if usize::from(id.get()) >= self.next_function_id {
            return Err(UcodeLibError::UnallocatedFunctionId { id });
        }
        let Some(index) = self.ucode_lib.libraries.iter().position(|e| e.library == library) else {
            return Err(UcodeLibError::UnknownLibrary { library: library.to_owned() });
        };
        let entry = &self.ucode_lib.libraries[index];
        if let Some(existing) = entry.functions.iter().find(|f| f.name == function) {
            return if existing.sub_opcode == id {
                Ok(())
            } else {
                Err(UcodeLibError::FunctionRebound {
                    library: library.to_owned(),
                    function: function.to_owned(),
                    registered: existing.sub_opcode,
                    requested: id,
                })
            };
        }
        if let Some(other) = self.ucode_lib.function_name(id).filter(|&other| other != function) {
            return Err(UcodeLibError::ConflictingFunctionId {
                id,
                first: other.to_owned(),
                second: function.to_owned(),
            });
        }
        self.ucode_lib.libraries[index].functions.push(FunctionEntry { name: function.to_owned(), sub_opcode: id });
        Ok(())
    }

    /// The document built so far.
    pub fn ucode_lib(&self) -> &UcodeLib {
        &self.ucode_lib
    }

    /// The document, ending the registration.
    pub fn into_ucode_lib(self) -> UcodeLib {
        self.ucode_lib
    }

    fn library(&self, name: &str) -> Option<&LibraryEntry> {
        self.ucode_lib.libraries.iter().find(|entry| entry.library == name)
    }
}

fn check_cpu_id(library: &str, cpu_id: u8, total_cpus: u8) -> Result<(), UcodeLibError> {
    if cpu_id < total_cpus {
        Ok(())
    } else {
        Err(UcodeLibError::CpuIdOutOfRange { library: library.to_owned(), cpu_id, total_cpus })
    }
}

/// Records that `id` names `name`, refusing a second name for the same id.
fn bind_id<'a>(
    names_by_id: &mut HashMap<FunctionId, &'a str>,
    id: FunctionId,
    name: &'a str,
) -> Result<(), UcodeLibError> {
    match names_by_id.entry(id) {
        Entry::Occupied(first) if *first.get() != name => {
            Err(UcodeLibError::ConflictingFunctionId { id, first: (*first.get()).to_owned(), second: name.to_owned() })
        }
        Entry::Occupied(_) => Ok(()),
        Entry::Vacant(slot) => {
            slot.insert(name);
            Ok(())
        }
    }
}

// The JSON shapes, field order = the schema's key order. Unknown keys are refused;
// serde refuses missing and repeated keys and values of the wrong type or range.

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDocument {
    ucode_lib: Vec<RawLibrary>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLibrary {
    library: String,
    ulib_to_ucode_version: String,
    ulib_to_isa_version: String,
    is_builtin: bool,
    cpu_id: u8,
    total_cpus: u8,
    functions: Vec<RawFunction>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFunction {
    name: String,
    opcode: i64,
    sub_opcode: u8,
}

impl From<&LibraryEntry> for RawLibrary {
    fn from(entry: &LibraryEntry) -> Self {
        Self {
            library: entry.library.clone(),
            ulib_to_ucode_version: entry.ulib_to_ucode_version.clone(),
            ulib_to_isa_version: entry.ulib_to_isa_version.clone(),
            is_builtin: entry.is_builtin,
            cpu_id: entry.cpu_id,
            total_cpus: entry.total_cpus,
            functions: entry
                .functions
                .iter()
                .map(|function| RawFunction {
                    name: function.name.clone(),
                    opcode: FUNCTION_OPCODE,
                    sub_opcode: function.sub_opcode.get(),
                })
                .collect(),
        }
    }
}

impl TryFrom<RawLibrary> for LibraryEntry {
    type Error = UcodeLibError;

    fn try_from(raw: RawLibrary) -> Result<Self, UcodeLibError> {
        let functions = raw
            .functions
            .into_iter()
            .map(|function| {
                if function.opcode != FUNCTION_OPCODE {
                    return Err(UcodeLibError::WrongOpcode {
                        library: raw.library.clone(),
                        function: function.name,
                        opcode: function.opcode,
                    });
                }
                match FunctionId::new(function.sub_opcode) {
                    Some(sub_opcode) => Ok(FunctionEntry { name: function.name, sub_opcode }),
                    None if function.sub_opcode == FunctionId::UNSET_BYTE => {
                        Err(UcodeLibError::UnsetSubOpcode { library: raw.library.clone(), function: function.name })
                    }
                    None => Err(UcodeLibError::SubOpcodeOutOfRange {
                        library: raw.library.clone(),
                        function: function.name,
                        sub_opcode: function.sub_opcode,
                    }),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            library: raw.library,
            ulib_to_ucode_version: raw.ulib_to_ucode_version,
            ulib_to_isa_version: raw.ulib_to_isa_version,
            is_builtin: raw.is_builtin,
            cpu_id: raw.cpu_id,
            total_cpus: raw.total_cpus,
            functions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neuroncustomop_wire::{decode, encode};
    use proptest::prelude::*;

    fn id(raw: u8) -> FunctionId {
        FunctionId::new(raw).unwrap()
    }

    /// Two per-core builtin images, each with `sort` (id 0) and `topk` (id 1).
    fn two_core_sort() -> UcodeLibRegistry {
        let mut registry = UcodeLibRegistry::new();
        let sort = registry.allocate_function_id().unwrap();
        let topk = registry.allocate_function_id().unwrap();
        for cpu in 0..2 {
            let library = format!("libsort_cpu{cpu}.so");
            registry.add_lib_file(&library, "1.21.1.0", "2.0", true, cpu, 2).unwrap();
            registry.add_function(&library, "sort", sort).unwrap();
            registry.add_function(&library, "topk", topk).unwrap();
        }
        registry
    }

    const TWO_CORE_SORT_JSON: &str = r#"{
  "ucode_lib": [
    {
      "library": "libsort_cpu0.so",
      "ulib_to_ucode_version": "1.21.1.0",
      "ulib_to_isa_version": "2.0",
      "is_builtin": true,
      "cpu_id": 0,
      "total_cpus": 2,
      "functions": [
        {
          "name": "sort",
          "opcode": 133,
          "sub_opcode": 0
        },
        {
          "name": "topk",
          "opcode": 133,
          "sub_opcode": 1
        }
      ]
    },
    {
      "library": "libsort_cpu1.so",
      "ulib_to_ucode_version": "1.21.1.0",
      "ulib_to_isa_version": "2.0",
      "is_builtin": true,
      "cpu_id": 1,
      "total_cpus": 2,
      "functions": [
        {
          "name": "sort",
          "opcode": 133,
          "sub_opcode": 0
        },
        {
          "name": "topk",
          "opcode": 133,
          "sub_opcode": 1
        }
      ]
    }
  ]
}
"#;

    /// `TWO_CORE_SORT_JSON` with `from` replaced by `to`, exactly once.
    fn edited(from: &str, to: &str) -> String {
        assert_eq!(TWO_CORE_SORT_JSON.matches(from).count(), 1, "{from:?} must occur once");
        TWO_CORE_SORT_JSON.replacen(from, to, 1)
    }

    fn schema_error(text: &str) -> String {
        match UcodeLib::from_json(text) {
            Err(UcodeLibError::Json(error)) => error.to_string(),
            other => panic!("expected a schema error, got {other:?}"),
        }
    }

    #[test]
    fn writer_emits_the_schema_keys_in_order() {
        assert_eq!(two_core_sort().ucode_lib().to_json().unwrap(), TWO_CORE_SORT_JSON);
    }

    #[test]
    fn reader_reads_what_the_writer_wrote() {
        let registry = two_core_sort();
        let read = UcodeLib::from_json(TWO_CORE_SORT_JSON).unwrap();
        assert_eq!(&read, registry.ucode_lib());
        assert_eq!(read.function_name(id(0)), Some("sort"));
        assert_eq!(read.function_name(id(1)), Some("topk"));
        assert_eq!(read.function_name(id(2)), None);
    }

    #[test]
    fn reader_accepts_any_key_order_and_whitespace() {
        let reordered = r#"{"ucode_lib":[{"functions":[{"sub_opcode":0,"opcode":133,
            "name":"relu"}],"total_cpus":1,"cpu_id":0,"is_builtin":false,
            "ulib_to_isa_version":"b","ulib_to_ucode_version":"a","library":"x.so"}]}"#;
        let read = UcodeLib::from_json(reordered).unwrap();
        assert_eq!(read.libraries[0].functions[0].name, "relu");
        assert_eq!(read.libraries[0].ulib_to_ucode_version, "a");
    }

    #[test]
    fn empty_document_round_trips() {
        let empty = UcodeLib::default();
        assert_eq!(empty.to_json().unwrap(), "{\n  \"ucode_lib\": []\n}\n");
        assert_eq!(UcodeLib::from_json("{\"ucode_lib\": []}").unwrap(), empty);
    }

    #[test]
    fn eight_core_package_dispatches_through_the_wire_decoder() {
        let kernels = ["relu", "vector_add", "relu_tcm"];
        let mut registry = UcodeLibRegistry::new();
        for kernel in kernels {
            let kernel_id = registry.allocate_function_id().unwrap();
            for cpu in 0..8 {
                let library = format!("libexamples_cpu{cpu}.so");
                registry.add_lib_file(&library, "1.0", "1.0", false, cpu, 8).unwrap();
                registry.add_function(&library, kernel, kernel_id).unwrap();
            }
        }
        let ucode_lib = UcodeLib::from_json(&registry.ucode_lib().to_json().unwrap()).unwrap();
        assert_eq!(ucode_lib.libraries.len(), 8);
        assert!(ucode_lib.libraries.iter().all(|entry| entry.functions.len() == 3));

        let words = encode(id(1), Some(&[0; 48]), &[[1; 48], [2; 48]]).unwrap();
        let op = decode(words.as_bytes(), &ucode_lib).unwrap();
        assert_eq!(ucode_lib.function_name(op.function_id()), Some("vector_add"));

        let unknown = encode(id(3), None, &[]).unwrap();
        assert_eq!(
            decode(unknown.as_bytes(), &ucode_lib),
            Err(neuroncustomop_wire::WireError::UnknownFunctionId { raw: 3 })
        );
    }

    // ---- the registry ----

    #[test]
    fn function_ids_are_dense_and_254_fit() {
        let mut registry = UcodeLibRegistry::new();
        for expected in 0..254u8 {
            assert_eq!(registry.allocate_function_id().unwrap(), id(expected));
        }
        assert!(matches!(registry.allocate_function_id(), Err(UcodeLibError::TooManyFunctions)));
        // Still refused: the failed call did not advance past the limit.
        assert!(matches!(registry.allocate_function_id(), Err(UcodeLibError::TooManyFunctions)));
    }

    #[test]
    fn a_document_with_254_functions_round_trips() {
        let mut registry = UcodeLibRegistry::new();
        registry.add_lib_file("big.so", "1", "1", false, 0, 1).unwrap();
        for n in 0..254 {
            let function_id = registry.allocate_function_id().unwrap();
            registry.add_function("big.so", &format!("f{n}"), function_id).unwrap();
        }
        let ucode_lib = registry.into_ucode_lib();
        let read = UcodeLib::from_json(&ucode_lib.to_json().unwrap()).unwrap();
        assert_eq!(read, ucode_lib);
        assert_eq!(read.function_name(id(253)), Some("f253"));
    }

    #[test]
    fn the_255th_function_is_refused_with_the_compilers_message() {
        let mut registry = UcodeLibRegistry::new();
        for _ in 0..254 {
            registry.allocate_function_id().unwrap();
        }
        let error = registry.allocate_function_id().unwrap_err();
        assert_eq!(error.to_string(), "number of unique custom op functions cannot exceed 254");
    }

    #[test]
    fn registering_a_library_again_is_idempotent() {
        let mut registry = two_core_sort();
        registry.add_lib_file("libsort_cpu0.so", "1.21.1.0", "2.0", true, 0, 2).unwrap();
        assert_eq!(registry.ucode_lib().to_json().unwrap(), TWO_CORE_SORT_JSON);
    }

    #[test]
    fn registering_a_library_with_other_versions_is_refused() {
        let mut registry = two_core_sort();
        for (ucode, isa) in [("1.21.1.1", "2.0"), ("1.21.1.0", "2.1")] {
            let error = registry.add_lib_file("libsort_cpu0.so", ucode, isa, true, 0, 2).unwrap_err();
            let UcodeLibError::VersionMismatch { library, registered, requested } = &error else {
                panic!("{error:?}");
            };
            assert_eq!(library, "libsort_cpu0.so");
            assert_eq!(registered, &("1.21.1.0".to_owned(), "2.0".to_owned()));
            assert_eq!(requested, &(ucode.to_owned(), isa.to_owned()));
        }
        assert_eq!(registry.ucode_lib().to_json().unwrap(), TWO_CORE_SORT_JSON);
    }

    #[test]
    fn registering_a_library_with_other_attributes_is_refused() {
        let mut registry = two_core_sort();
        for (builtin, cpu, total) in [(false, 0, 2), (true, 1, 2), (true, 0, 8)] {
            assert!(matches!(
                registry.add_lib_file("libsort_cpu0.so", "1.21.1.0", "2.0", builtin, cpu, total),
                Err(UcodeLibError::AttributeMismatch { .. })
            ));
        }
    }

    #[test]
    fn a_library_for_a_core_past_the_count_is_refused() {
        let mut registry = UcodeLibRegistry::new();
        for (cpu, total) in [(8, 8), (0, 0)] {
            assert!(matches!(
                registry.add_lib_file("x.so", "1", "1", false, cpu, total),
                Err(UcodeLibError::CpuIdOutOfRange { cpu_id, total_cpus, .. })
                    if (cpu_id, total_cpus) == (cpu, total)
            ));
        }
        assert!(registry.ucode_lib().libraries.is_empty());
    }

    #[test]
    fn a_function_needs_a_registered_library_and_an_allocated_id() {
        let mut registry = UcodeLibRegistry::new();
        let first = registry.allocate_function_id().unwrap();
        assert!(matches!(
            registry.add_function("missing.so", "relu", first),
            Err(UcodeLibError::UnknownLibrary { library }) if library == "missing.so"
        ));
        registry.add_lib_file("x.so", "1", "1", false, 0, 1).unwrap();
        assert!(matches!(
            registry.add_function("x.so", "relu", id(1)),
            Err(UcodeLibError::UnallocatedFunctionId { id: unallocated }) if unallocated == id(1)
        ));
    }

    #[test]
    fn adding_a_function_again_is_idempotent_but_not_under_another_id() {
        let mut registry = two_core_sort();
        registry.add_function("libsort_cpu0.so", "sort", id(0)).unwrap();
        assert_eq!(registry.ucode_lib().to_json().unwrap(), TWO_CORE_SORT_JSON);

        let error = registry.add_function("libsort_cpu0.so", "sort", id(1)).unwrap_err();
        assert_eq!(error.to_string(), "library libsort_cpu0.so: function sort has FunctionId 0, not 1");
    }

    #[test]
    fn one_id_cannot_name_two_functions() {
        let mut registry = two_core_sort();
        let error = registry.add_function("libsort_cpu1.so", "argsort", id(0)).unwrap_err();
        assert_eq!(error.to_string(), "FunctionId 0 names both sort and argsort");
    }

    #[test]
    fn writer_refuses_an_invalid_model() {
        let mut ucode_lib = two_core_sort().into_ucode_lib();
        ucode_lib.libraries[1].cpu_id = 2;
        assert!(matches!(ucode_lib.to_json(), Err(UcodeLibError::CpuIdOutOfRange { .. })));
    }

    // ---- the reader's schema checks, one rule each ----

    #[test]
    fn rejects_text_that_is_not_json() {
        assert!(schema_error(&TWO_CORE_SORT_JSON[..100]).contains("EOF"));
    }

    #[test]
    fn rejects_unknown_keys_at_every_level() {
        for (from, to) in [
            ("{\n  \"ucode_lib\"", "{\n  \"neff\": 1, \"ucode_lib\""),
            ("\"library\": \"libsort_cpu0.so\"", "\"library\": \"libsort_cpu0.so\", \"arch\": 2"),
            (
                "\"sub_opcode\": 1\n        }\n      ]\n    },",
                "\"sub_opcode\": 1, \"args\": 3\n        }\n      ]\n    },",
            ),
        ] {
            assert!(schema_error(&edited(from, to)).contains("unknown field"), "{to}");
        }
    }

    #[test]
    fn rejects_every_missing_key() {
        let keys = [
            "library",
            "ulib_to_ucode_version",
            "ulib_to_isa_version",
            "is_builtin",
            "cpu_id",
            "total_cpus",
            "functions",
            "name",
            "opcode",
            "sub_opcode",
            "ucode_lib",
        ];
        for key in keys {
            let quoted = format!("\"{key}\"");
            let renamed = TWO_CORE_SORT_JSON.replacen(&quoted, "\"renamed_away\"", 1);
            let text = schema_error(&renamed);
            // Renaming is reported as whichever comes first: the unknown or the missing key.
            assert!(text.contains("unknown field `renamed_away`") || text.contains("missing field"));
            let mut document: serde_json::Value = serde_json::from_str(TWO_CORE_SORT_JSON).unwrap();
            remove_first_key(&mut document, key);
            let text = schema_error(&document.to_string());
            assert!(text.contains(&format!("missing field `{key}`")), "{key}: {text}");
        }
    }

    /// Removes `key` from the first object (depth first) that has it.
    fn remove_first_key(value: &mut serde_json::Value, key: &str) -> bool {
        match value {
            serde_json::Value::Object(map) => {
                map.remove(key).is_some() || map.values_mut().any(|v| remove_first_key(v, key))
            }
            serde_json::Value::Array(items) => items.iter_mut().any(|v| remove_first_key(v, key)),
            _ => false,
        }
    }

    #[test]
    fn rejects_repeated_keys() {
        let text = edited("\"cpu_id\": 1,", "\"cpu_id\": 1, \"cpu_id\": 0,");
        assert!(schema_error(&text).contains("duplicate field `cpu_id`"));
    }

    #[test]
    fn rejects_wrong_types() {
        for (from, to, expected) in [
            (
                "\"is_builtin\": true,\n      \"cpu_id\": 1",
                "\"is_builtin\": 1,\n      \"cpu_id\": 1",
                "expected a boolean",
            ),
            ("\"cpu_id\": 1,", "\"cpu_id\": \"1\",", "expected u8"),
            ("\"cpu_id\": 1,", "\"cpu_id\": -1,", "expected u8"),
            ("\"cpu_id\": 1,", "\"cpu_id\": 256,", "expected u8"),
            (
                "\"ulib_to_isa_version\": \"2.0\",\n      \"is_builtin\": true,\n      \"cpu_id\": 1",
                "\"ulib_to_isa_version\": 2.0,\n      \"is_builtin\": true,\n      \"cpu_id\": 1",
                "expected a string",
            ),
            ("\"library\": \"libsort_cpu1.so\"", "\"library\": null", "expected a string"),
            (
                "\"sub_opcode\": 1\n        }\n      ]\n    },",
                "\"sub_opcode\": 1.0\n        }\n      ]\n    },",
                "expected u8",
            ),
            (
                "\"sub_opcode\": 1\n        }\n      ]\n    },",
                "\"sub_opcode\": 256\n        }\n      ]\n    },",
                "expected u8",
            ),
        ] {
            let text = schema_error(&edited(from, to));
            assert!(text.contains(expected), "{to}: {text}");
        }
        assert!(schema_error("{\"ucode_lib\": {}}").contains("expected a sequence"));
        assert!(schema_error("[]").contains("expected struct"));
    }

    #[test]
    fn rejects_an_opcode_other_than_133() {
        let text = TWO_CORE_SORT_JSON.replacen("\"opcode\": 133", "\"opcode\": 134", 1);
        let error = UcodeLib::from_json(&text).unwrap_err();
        assert!(matches!(&error, UcodeLibError::WrongOpcode { opcode: 134, function, .. } if function == "sort"));
        assert_eq!(error.to_string(), "library libsort_cpu0.so: function sort has opcode 134, not 133");
    }

    #[test]
    fn rejects_the_unset_sub_opcode() {
        let text =
            edited("\"sub_opcode\": 1\n        }\n      ]\n    },", "\"sub_opcode\": 255\n        }\n      ]\n    },");
        assert!(matches!(
            UcodeLib::from_json(&text),
            Err(UcodeLibError::UnsetSubOpcode { library, function }) if library == "libsort_cpu0.so" && function == "topk"
        ));
    }

    #[test]
    fn rejects_a_sub_opcode_past_the_limit() {
        let text =
            edited("\"sub_opcode\": 1\n        }\n      ]\n    },", "\"sub_opcode\": 254\n        }\n      ]\n    },");
        assert!(matches!(UcodeLib::from_json(&text), Err(UcodeLibError::SubOpcodeOutOfRange { sub_opcode: 254, .. })));
    }

    #[test]
    fn rejects_a_sub_opcode_twice_in_a_library() {
        let text =
            edited("\"sub_opcode\": 1\n        }\n      ]\n    },", "\"sub_opcode\": 0\n        }\n      ]\n    },");
        assert!(matches!(
            UcodeLib::from_json(&text),
            Err(UcodeLibError::DuplicateSubOpcode { library, id: dup }) if library == "libsort_cpu0.so" && dup == id(0)
        ));
    }

    #[test]
    fn rejects_a_function_name_twice_in_a_library() {
        let text = TWO_CORE_SORT_JSON.replacen("\"name\": \"topk\"", "\"name\": \"sort\"", 1);
        assert!(matches!(
            UcodeLib::from_json(&text),
            Err(UcodeLibError::DuplicateFunctionName { function, .. }) if function == "sort"
        ));
    }

    #[test]
    fn rejects_one_id_naming_two_functions_across_libraries() {
        // cpu1's id 1 is renamed: the header's FunctionId 1 would be ambiguous.
        let at = TWO_CORE_SORT_JSON.rfind("\"name\": \"topk\"").unwrap();
        let mut text = TWO_CORE_SORT_JSON.to_owned();
        text.replace_range(at..at + "\"name\": \"topk\"".len(), "\"name\": \"argsort\"");
        assert!(matches!(
            UcodeLib::from_json(&text),
            Err(UcodeLibError::ConflictingFunctionId { first, second, .. }) if first == "topk" && second == "argsort"
        ));
    }

    #[test]
    fn rejects_a_cpu_id_not_below_total_cpus() {
        let text = edited("\"cpu_id\": 1,", "\"cpu_id\": 2,");
        let error = UcodeLib::from_json(&text).unwrap_err();
        assert_eq!(error.to_string(), "library libsort_cpu1.so: cpu_id 2 is not below total_cpus 2");
    }

    #[test]
    fn rejects_a_library_listed_twice() {
        let text = edited("\"library\": \"libsort_cpu1.so\"", "\"library\": \"libsort_cpu0.so\"");
        assert!(matches!(
            UcodeLib::from_json(&text),
            Err(UcodeLibError::DuplicateLibrary { library }) if library == "libsort_cpu0.so"
        ));
    }

    // ---- round trips of arbitrary registrations ----

    /// One library to register: ucode and ISA versions, builtin, total_cpus, cpu_id.
    type LibraryPlan = (String, String, bool, u8, u8);

    /// Libraries, which of the module's functions each gets, and how many there are.
    type Plan = (Vec<LibraryPlan>, Vec<Vec<bool>>, usize);

    fn plan() -> impl Strategy<Value = Plan> {
        let library = (".*", ".*", any::<bool>(), 1u8..=8).prop_flat_map(|(ucode, isa, builtin, total)| {
            (Just(ucode), Just(isa), Just(builtin), Just(total), 0..total)
        });
        (1usize..=20).prop_flat_map(move |functions| {
            proptest::collection::vec(library.clone(), 1..=8).prop_flat_map(move |libraries| {
                let count = libraries.len();
                (
                    Just(libraries),
                    proptest::collection::vec(proptest::collection::vec(any::<bool>(), functions), count),
                    Just(functions),
                )
            })
        })
    }

    proptest! {
        #[test]
        fn any_registration_round_trips((libraries, membership, functions) in plan()) {
            let mut registry = UcodeLibRegistry::new();
            let ids: Vec<FunctionId> =
                (0..functions).map(|_| registry.allocate_function_id().unwrap()).collect();
            for (n, ((ucode, isa, builtin, total, cpu), members)) in
                libraries.iter().zip(&membership).enumerate()
            {
                let library = format!("lib\"{n}\"\\cpu{cpu}.so");
                registry.add_lib_file(&library, ucode, isa, *builtin, *cpu, *total).unwrap();
                for (k, _) in members.iter().enumerate().filter(|(_, member)| **member) {
                    registry.add_function(&library, &format!("kernel {k} é"), ids[k]).unwrap();
                }
            }
            let ucode_lib = registry.into_ucode_lib();
            let text = ucode_lib.to_json().unwrap();
            prop_assert_eq!(UcodeLib::from_json(&text).unwrap(), ucode_lib.clone());
            for (k, kernel_id) in ids.iter().enumerate() {
                let bound = membership.iter().any(|members| members[k]);
                let expected = format!("kernel {k} é");
                prop_assert_eq!(ucode_lib.function_name(*kernel_id), bound.then_some(expected.as_str()));
            }
        }
    }
}
