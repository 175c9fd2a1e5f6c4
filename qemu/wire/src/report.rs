//! The simulated loader's report: one typed definition of every line it prints, shared
//! by the firmware that prints them (through [`Line`]'s `Display`) and the host that
//! parses them ([`Line::parse`]), so the two cannot drift apart.
//!
//! Every line is one fact, `KIND key=value ...`; a [`Line::Dump`] line is followed by
//! its `len` raw bytes and a newline (the output tensor, unformatted: hex would cost
//! the guest about 100 instructions a byte).
//!
//! ```
//! use neuroncustomop_wire::report::{Count, Line, OpStatus};
//!
//! let line = Line::Op {
//!     index: 2,
//!     core: 3,
//!     function: "relu",
//!     status: OpStatus::Returned(0),
//!     count: Some(Count { instructions: 1234, exact: true }),
//!     error: None,
//! };
//! let text = format!("{line}");
//! assert_eq!(text, "OP 2 core=3 function=relu status=0 instructions=1234 exact=yes");
//! assert_eq!(Line::parse(&text), Ok(line));
//! ```

use core::fmt;

/// Bytes a line carries in hex: the firmware prints [`Bytes::Raw`], the host parses
/// [`Bytes::Hex`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bytes<'a> {
    /// The bytes themselves (firmware side).
    Raw(&'a [u8]),
    /// Their hex text, two digits a byte (host side).
    Hex(&'a str),
}

impl Bytes<'_> {
    /// The bytes, decoded; a malformed hex pair is skipped.
    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        let (raw, hex) = match self {
            Self::Raw(raw) => (*raw, ""),
            Self::Hex(hex) => (&[][..], *hex),
        };
        raw.iter().copied().chain(
            (0..hex.len() / 2)
                .filter_map(move |i| hex.get(2 * i..2 * i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok())),
        )
    }
}

impl fmt::Display for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Raw(raw) => raw.iter().try_for_each(|b| write!(f, "{b:02x}")),
            Self::Hex(hex) => f.write_str(hex),
        }
    }
}

/// How an op ended on one core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpStatus {
    /// The kernel returned; its invocation status (0 is success).
    Returned(u32),
    /// The kernel called `abort`.
    Abort,
    /// The kernel (or its panic handler) called `exit(code)`.
    Exit(i32),
    /// The kernel took an exception (the runtime's exit code for it).
    Exception(i32),
    /// The kernel ran past the op's instruction budget and was stopped.
    OverBudget,
    /// `entry_func` had failed on this core, so no kernel runs.
    NotEntered,
    /// The op's FunctionId names a kernel `register_funcs` did not report.
    UnknownKernel,
    /// The op's dispatch words were malformed (the line's `error` says how).
    BadWords,
}

impl fmt::Display for OpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Returned(status) => write!(f, "{status}"),
            Self::Abort => f.write_str("abort"),
            Self::Exit(code) => write!(f, "exit({code})"),
            Self::Exception(code) => write!(f, "exception({code})"),
            Self::OverBudget => f.write_str("over-budget"),
            Self::NotEntered => f.write_str("not-entered"),
            Self::UnknownKernel => f.write_str("unknown-kernel"),
            Self::BadWords => f.write_str("bad-words"),
        }
    }
}

impl OpStatus {
    fn parse(text: &str) -> Option<Self> {
        let call = |name: &str| text.strip_prefix(name)?.strip_prefix('(')?.strip_suffix(')')?.parse().ok();
        Some(match text {
            "abort" => Self::Abort,
            "over-budget" => Self::OverBudget,
            "not-entered" => Self::NotEntered,
            "unknown-kernel" => Self::UnknownKernel,
            "bad-words" => Self::BadWords,
            _ => {
                if let Some(code) = call("exit") {
                    Self::Exit(code)
                } else if let Some(code) = call("exception") {
                    Self::Exception(code)
                } else {
                    Self::Returned(text.parse().ok()?)
                }
            }
        })
    }
}

/// The guest instructions one kernel took on one core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    /// Instructions the core retired between the kernel's entry and its return.
    pub instructions: u64,
    /// True when the figure counts exactly this core's instructions; false when it
    /// is an estimate (a clock that may also have run while other cores did).
    pub exact: bool,
}

/// One line of the loader's report. Each field is printed as the key of the same name
/// (`core=3`); `core` is the core that printed the line, `op`/`index` the op's index in
/// its job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // The fields are named for what they hold; the variants say the rest.
pub enum Line<'a> {
    /// `entry_func` called the handoff callback `name`.
    Callback { core: u32, name: &'a str },
    /// `register_ext_isa_fn` call number `index` registered `name`; the loader answered `status`.
    Register { core: u32, index: u32, name: &'a str, status: u32 },
    /// `entry_func` returned `status`.
    Entry { core: u32, status: u32 },
    /// `register_funcs` returned `status`.
    RegisterFuncs { core: u32, status: u32 },
    /// `register_funcs` reported kernel `name` at `ptr`, with library handle `handle`.
    Kernel { core: u32, index: u32, ptr: u32, name: &'a str, handle: u32 },
    /// What the kernel of op `op` printed (one chunk, from byte `offset`); `lost` bytes
    /// the ring dropped (oldest first) before it, in the first chunk only.
    Stdout { core: u32, op: u32, lost: u32, offset: u32, bytes: Bytes<'a> },
    /// The library's stdout ring header was inconsistent, so op `op`'s output is lost.
    BadRing { core: u32, op: u32 },
    /// Op `index` of the job ended on `core` with `status`; `count` when the kernel ran.
    /// `error` (the rest of the line) says why the words were rejected.
    Op { index: u32, core: u32, function: &'a str, status: OpStatus, count: Option<Count>, error: Option<&'a str> },
    /// A kernel ran past its instruction budget: where it was when stopped.
    OverBudget { core: u32, op: u32, function: &'a str, instructions: u64, pc: u32 },
    /// The kernel of op `op` stopped without returning, and the loader gave back the
    /// heap blocks it had taken: `blocks` blocks of `bytes` bytes in all; `kept` blocks
    /// stay taken, and `rebuilt` says a heap was rebuilt empty (its metadata was found
    /// inconsistent: the kernel stopped inside the allocator, or wrote over it).
    GivenBack { core: u32, op: u32, bytes: u32, blocks: u32, kept: u32, rebuilt: bool },
    /// `len` raw bytes of op `op`'s output, from byte `offset`, follow this line (then a
    /// newline).
    Dump { op: u32, offset: u32, len: u32 },
    /// Job number `job` (counted from 1 in a session) is over: every core has finished it.
    Done { job: u32 },
    /// Something went wrong in the loader itself (the rest of the line says what).
    Error { message: &'a str },
}

/// A line that is not one of [`Line`]'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError;

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a loader report line")
    }
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Callback { core, name } => write!(f, "CALLBACK core={core} name={name}"),
            Self::Register { core, index, name, status } => {
                write!(f, "REGISTER core={core} index={index} name={name} status={status}")
            }
            Self::Entry { core, status } => write!(f, "ENTRY core={core} status={status}"),
            Self::RegisterFuncs { core, status } => write!(f, "REGISTER_FUNCS core={core} status={status}"),
            Self::Kernel { core, index, ptr, name, handle } => {
                write!(f, "KERNEL core={core} index={index} ptr={ptr:#010x} name={name} handle={handle:#010x}")
            }
            Self::Stdout { core, op, lost, offset, bytes } => {
                write!(f, "STDOUT core={core} op={op} lost={lost} offset={offset} hex={bytes}")
            }
            Self::BadRing { core, op } => write!(f, "STDOUT core={core} op={op} lost=0 offset=0 error=bad-ring"),
            Self::Op { index, core, function, status, count, error } => {
                write!(f, "OP {index} core={core} function={function} status={status}")?;
                if let Some(Count { instructions, exact }) = count {
                    write!(f, " instructions={instructions} exact={}", if exact { "yes" } else { "no" })?;
                }
                match error {
                    Some(error) => write!(f, " error={error}"),
                    None => Ok(()),
                }
            }
            Self::OverBudget { core, op, function, instructions, pc } => {
                write!(
                    f,
                    "OVER_BUDGET core={core} op={op} function={function} instructions={instructions} pc={pc:#010x}"
                )
            }
            Self::GivenBack { core, op, bytes, blocks, kept, rebuilt } => write!(
                f,
                "GIVEN_BACK core={core} op={op} bytes={bytes} blocks={blocks} kept={kept} rebuilt={}",
                if rebuilt { "yes" } else { "no" }
            ),
            Self::Dump { op, offset, len } => write!(f, "DUMP op={op} offset={offset} len={len}"),
            Self::Done { job } => write!(f, "DONE job={job}"),
            Self::Error { message } => write!(f, "ERROR {message}"),
        }
    }
}

/// The `key=value` fields of a line (single spaces between them), looked up by key:
/// the one parser of the device's `key=value` lines, the loader's report lines here
/// and the runtime's `FAULT` lines (the machine's symbolizer).
pub struct Fields<'a>(&'a str);

impl<'a> Fields<'a> {
    /// The fields of `line` (the words that are not `key=value` are skipped).
    pub fn new(line: &'a str) -> Self {
        Self(line)
    }

    /// The value of `key`.
    ///
    /// # Errors
    /// [`ParseError`] when the line has no `key=`.
    pub fn text(&self, key: &str) -> Result<&'a str, ParseError> {
        self.0.split(' ').find_map(|word| word.strip_prefix(key)?.strip_prefix('=')).ok_or(ParseError)
    }

    /// The value of `key` as a number ([`Number`]).
    ///
    /// # Errors
    /// [`ParseError`] when the line has no `key=`, or its value is not a number.
    pub fn number<T: Number>(&self, key: &str) -> Result<T, ParseError> {
        T::parse(self.text(key)?).ok_or(ParseError)
    }
}

/// A number field: decimal, or `0x` hex for a `u32` (addresses, statuses).
pub trait Number: Sized {
    /// `text` as a number, or `None`.
    fn parse(text: &str) -> Option<Self>;
}

impl Number for u32 {
    fn parse(text: &str) -> Option<Self> {
        match text.strip_prefix("0x") {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => text.parse().ok(),
        }
    }
}

impl Number for u64 {
    fn parse(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

impl<'a> Line<'a> {
    /// Parses one line (without its newline).
    ///
    /// # Errors
    /// [`ParseError`] for anything [`Line`]'s `Display` does not print.
    pub fn parse(line: &'a str) -> Result<Self, ParseError> {
        let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
        let f = Fields(rest);
        Ok(match kind {
            "CALLBACK" => Self::Callback { core: f.number("core")?, name: f.text("name")? },
            "REGISTER" => Self::Register {
                core: f.number("core")?,
                index: f.number("index")?,
                name: f.text("name")?,
                status: f.number("status")?,
            },
            "ENTRY" => Self::Entry { core: f.number("core")?, status: f.number("status")? },
            "REGISTER_FUNCS" => Self::RegisterFuncs { core: f.number("core")?, status: f.number("status")? },
            "KERNEL" => Self::Kernel {
                core: f.number("core")?,
                index: f.number("index")?,
                ptr: f.number("ptr")?,
                name: f.text("name")?,
                handle: f.number("handle")?,
            },
            "STDOUT" if f.text("error") == Ok("bad-ring") => {
                Self::BadRing { core: f.number("core")?, op: f.number("op")? }
            }
            "STDOUT" => Self::Stdout {
                core: f.number("core")?,
                op: f.number("op")?,
                lost: f.number("lost")?,
                offset: f.number("offset")?,
                bytes: Bytes::Hex(f.text("hex")?),
            },
            "OP" => {
                // The error is the rest of the line: it has spaces.
                let (rest, error) = match rest.split_once(" error=") {
                    Some((rest, error)) => (rest, Some(error)),
                    None => (rest, None),
                };
                let (index, fields) = rest.split_once(' ').ok_or(ParseError)?;
                let f = Fields(fields);
                let count = match f.number::<u64>("instructions") {
                    Ok(instructions) => Some(Count { instructions, exact: f.text("exact")? == "yes" }),
                    Err(_) => None,
                };
                Self::Op {
                    index: Number::parse(index).ok_or(ParseError)?,
                    core: f.number("core")?,
                    function: f.text("function")?,
                    status: OpStatus::parse(f.text("status")?).ok_or(ParseError)?,
                    count,
                    error,
                }
            }
            "OVER_BUDGET" => Self::OverBudget {
                core: f.number("core")?,
                op: f.number("op")?,
                function: f.text("function")?,
                instructions: f.number("instructions")?,
                pc: f.number("pc")?,
            },
            "GIVEN_BACK" => Self::GivenBack {
                core: f.number("core")?,
                op: f.number("op")?,
                bytes: f.number("bytes")?,
                blocks: f.number("blocks")?,
                kept: f.number("kept")?,
                rebuilt: f.text("rebuilt")? == "yes",
            },
            "DUMP" => Self::Dump { op: f.number("op")?, offset: f.number("offset")?, len: f.number("len")? },
            "DONE" => Self::Done { job: f.number("job")? },
            "ERROR" => Self::Error { message: rest },
            _ => return Err(ParseError),
        })
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;
    use std::vec::Vec;

    fn round_trip(line: Line<'_>) {
        let text = format!("{line}");
        assert_eq!(Line::parse(&text), Ok(line), "{text}");
    }

    #[test]
    fn every_line_parses_back_to_itself() {
        round_trip(Line::Callback { core: 1, name: "get_libc_fn(abort)" });
        round_trip(Line::Register { core: 0, index: 3, name: "relu", status: 0x4C52 });
        round_trip(Line::Entry { core: 7, status: 0 });
        round_trip(Line::RegisterFuncs { core: 7, status: 5 });
        round_trip(Line::Kernel { core: 2, index: 1, ptr: 0x8440_0100, name: "relu_tcm", handle: 0x4C1B_0002 });
        round_trip(Line::Stdout { core: 5, op: 9, lost: 12, offset: 512, bytes: Bytes::Hex("68690a") });
        round_trip(Line::BadRing { core: 5, op: 9 });
        round_trip(Line::Op { index: 0, core: 0, function: "f", status: OpStatus::Exit(-3), count: None, error: None });
        round_trip(Line::Op {
            index: 4,
            core: 1,
            function: "?",
            status: OpStatus::BadWords,
            count: None,
            error: Some("word 2: a second output payload (at most one output)"),
        });
        for status in [
            OpStatus::Abort,
            OpStatus::Exception(3),
            OpStatus::OverBudget,
            OpStatus::NotEntered,
            OpStatus::UnknownKernel,
        ] {
            let count = Some(Count { instructions: 10_000_000_000, exact: false });
            round_trip(Line::Op { index: 1, core: 6, function: "k", status, count, error: None });
        }
        round_trip(Line::OverBudget { core: 3, op: 0, function: "spin", instructions: 1 << 33, pc: 0x8460_1234 });
        round_trip(Line::GivenBack { core: 1, op: 3, bytes: 7_340_032, blocks: 2, kept: 0, rebuilt: false });
        round_trip(Line::GivenBack { core: 0, op: 0, bytes: 0, blocks: 0, kept: 3, rebuilt: true });
        round_trip(Line::Dump { op: 2, offset: 0, len: 262_144 });
        round_trip(Line::Done { job: 17 });
        round_trip(Line::Error { message: "core=3 op=1: another core did not finish the previous op" });
    }

    #[test]
    fn raw_bytes_print_as_the_hex_the_host_decodes() {
        let raw = [0u8, 0x7f, 0xff, 0x10];
        let text = format!("{}", Line::Stdout { core: 0, op: 0, lost: 0, offset: 0, bytes: Bytes::Raw(&raw) });
        let Ok(Line::Stdout { bytes, .. }) = Line::parse(&text) else { panic!("{text}") };
        assert_eq!(bytes.iter().collect::<Vec<u8>>(), raw);
    }

    #[test]
    fn other_text_is_refused() {
        for text in ["", "DONE", "OP x core=0 function=f status=0", "OP 1 core=0 function=f status=maybe", "hello"] {
            assert_eq!(Line::parse(text), Err(ParseError), "{text:?}");
        }
    }
}
