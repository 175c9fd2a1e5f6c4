//! The reference for the pull stream (`wrapper_api::Invocation`): the state machine of
//! docs/abi/descriptors.md §3, which status each call gets in each phase (idle, a
//! hand-off pending, set up) and what a successful call resolves to (the host address
//! and byte range of a descriptor's data, through the fake [`platform`]'s windows),
//! plus a Rust kernel's rule that its output never overlaps an input it pulled. Also
//! what the loader's result descriptor holds, the last and the invocation status, and
//! the `begin_op` / `end_op` calls.
//!
//! Each method is one call of the runtime: the harness makes the call, asks the model
//! for the same one, and compares. Whether a descriptor is well formed is the
//! [`descriptor`](super::descriptor) model's business, checked on its own: this model
//! asks `ArgTensor::validate`.

use std::vec;
use std::vec::Vec;

use super::platform;
use crate::translate::RangeError;
use crate::wrapper_api::{ArgTensor, ArgType, KernelError, MAX_ARGS, ScalarKind, Status};

/// Where the invocation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No hand-off since the last cleanup (or ever).
    Idle,
    /// Handed off, not set up.
    Pending,
    /// Set up: pulls, the output and returns are allowed.
    Active,
}

/// A translated host range, half-open; empty for empty tensors and scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Range {
    /// The first byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Range {
    /// Whether the two ranges share a byte.
    pub fn overlaps(self, other: Range) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// A call's success: the descriptor it handed out or read, the host address of its
/// data (0 when empty) and the data's range.
#[derive(Debug, Clone, Copy)]
pub struct Resolved {
    /// The descriptor (for a pull, the setup's copy of the argument).
    pub desc: ArgTensor,
    /// The host address of the data.
    pub data: usize,
    /// The data's host bytes.
    pub range: Range,
}

/// The `begin_op` / `end_op` calls: `first_call` of each `begin_op`, and how many
/// `end_op`s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpCalls {
    /// `first_call` of each `begin_op`, in order.
    pub begin: Vec<bool>,
    /// `end_op` calls.
    pub end: usize,
}

impl OpCalls {
    /// The calls this thread's fake platform has seen.
    pub fn seen() -> OpCalls {
        platform::with(|fake| OpCalls {
            begin: fake.begin_ops.iter().map(|&(first_call, _)| first_call).collect(),
            end: fake.end_ops,
        })
    }
}

/// The reference state machine of one `Invocation`.
pub struct Model {
    /// Where the invocation is.
    pub phase: Phase,
    /// The hand-off's descriptors.
    args: Vec<ArgTensor>,
    /// Why setup refuses the hand-off, if it does.
    block_error: Option<Status>,
    /// Whether the hand-off has a result descriptor.
    pub has_output: bool,
    /// What the loader's result descriptor holds now (None: there is none).
    pub result: Option<ArgTensor>,
    /// The copies taken at setup.
    parsed: Vec<ArgTensor>,
    dst: ArgTensor,
    next: usize,
    /// The data of each argument pulled so far (empty for scalars: they are copied).
    input_ranges: Vec<Range>,
    dst_taken: bool,
    dst_range: Range,
    /// Whether any setup has succeeded (the first runs the one-time set-up).
    initialized: bool,
    /// The last call's status.
    pub last: Status,
    /// The invocation's status: its first error, or OK.
    pub invocation: Status,
    /// The platform calls the invocation must have made.
    pub op_calls: OpCalls,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            phase: Phase::Idle,
            args: Vec::new(),
            block_error: None,
            has_output: false,
            result: None,
            parsed: Vec::new(),
            dst: ArgTensor::ZEROED,
            next: 0,
            input_ranges: Vec::new(),
            dst_taken: false,
            dst_range: Range::default(),
            initialized: false,
            last: Status::OK,
            invocation: Status::OK,
            op_calls: OpCalls::default(),
        }
    }
}

impl Model {
    fn record(&mut self, status: Status) -> Status {
        self.last = status;
        if self.invocation.is_ok() {
            self.invocation = status;
        }
        status
    }

    fn record_result(&mut self, result: Result<Resolved, Status>) -> Result<Resolved, Status> {
        self.record(result.map_or_else(|e| e, |_| Status::OK));
        result
    }

    /// Where `desc`'s data is: it must be well formed, and its bytes must start in a
    /// window of the fake platform and end in the same one. Empty data needs no window.
    pub fn translate(desc: &ArgTensor) -> Result<Resolved, Status> {
        let view = desc.validate().map_err(Status::from)?;
        let len = view.byte_len();
        if len == 0 {
            return Ok(Resolved { desc: *desc, data: 0, range: Range::default() });
        }
        let start = platform::with(|fake| fake.lookup(view.address(), len as usize)).map_err(|e| match e {
            RangeError::Miss => Status::TRANSLATE_MISS,
            RangeError::OutsideWindow => Status::RANGE_OUTSIDE_WINDOW,
        })? as usize;
        Ok(Resolved { desc: *desc, data: start, range: Range { start, end: start + len as usize } })
    }

    /// `set_invocation(args, count, result)`: `args` is `None` for a null array, else
    /// the descriptors it holds (at least `count` when `count` is at most
    /// [`MAX_ARGS`]); `output` is what `result` points at (`None`: null).
    pub fn hand_off(&mut self, args: Option<&[ArgTensor]>, count: u32, output: Option<ArgTensor>) -> Status {
        self.block_error = if count as usize > MAX_ARGS {
            Some(Status::TOO_MANY_ARGS)
        } else if count > 0 && args.is_none() {
            Some(Status::NULL_POINTER)
        } else {
            None
        };
        self.args = match (self.block_error, args) {
            (None, Some(args)) => args[..count as usize].to_vec(),
            _ => Vec::new(),
        };
        self.phase = Phase::Pending;
        self.has_output = output.is_some();
        self.result = output;
        self.invocation = Status::OK;
        self.record(self.block_error.unwrap_or(Status::OK))
    }

    /// `setup(first_call)`; `Invocation::run` sets up with `first_call` false.
    pub fn setup(&mut self, first_call: bool) -> Status {
        let status = match self.phase {
            Phase::Active => Status::ALREADY_SET_UP,
            Phase::Idle => Status::NO_INVOCATION,
            Phase::Pending => match self.block_error {
                Some(error) => error,
                None => {
                    self.parsed = self.args.clone();
                    self.next = 0;
                    self.input_ranges = vec![Range::default(); self.parsed.len()];
                    // The result descriptor as it is now: a return may have rewritten it.
                    self.dst = self.result.unwrap_or(ArgTensor::ZEROED);
                    self.dst_taken = false;
                    self.op_calls.begin.push(first_call || !self.initialized);
                    self.initialized = true;
                    self.phase = Phase::Active;
                    Status::OK
                }
            },
        };
        self.record(status)
    }

    /// The next argument, which must be a scalar of `wanted` (None: a tensor).
    fn peek(&self, wanted: Option<ScalarKind>) -> Result<Resolved, Status> {
        if self.phase != Phase::Active {
            return Err(Status::NOT_SET_UP);
        }
        let Some(desc) = self.parsed.get(self.next) else { return Err(Status::NO_MORE_ARGS) };
        let found = ArgType::from_raw(desc.arg_type).ok_or(Status::UNKNOWN_ARG_TYPE)?;
        match (wanted, found) {
            (None, ArgType::Tensor) => {}
            (None, _) => return Err(Status::EXPECTED_TENSOR),
            (Some(_), ArgType::Tensor) => return Err(Status::EXPECTED_SCALAR),
            (Some(kind), found) if kind.arg_type() == found => {}
            (Some(_), _) => return Err(Status::SCALAR_KIND_MISMATCH),
        }
        Model::translate(desc)
    }

    fn consume(&mut self, resolved: Result<Resolved, Status>, tensor: bool) -> Result<Resolved, Status> {
        if let Ok(resolved) = resolved {
            self.input_ranges[self.next] = if tensor { resolved.range } else { Range::default() };
            self.next += 1;
        }
        self.record_result(resolved)
    }

    /// A pull of the next argument, a scalar of `kind` (None: a tensor): the C calls
    /// `next_tensor` / `next_int` / ..., and `Args`'s scalar pulls. A scalar's value is
    /// the bytes at `data`.
    pub fn pull(&mut self, kind: Option<ScalarKind>) -> Result<Resolved, Status> {
        let resolved = self.peek(kind);
        self.consume(resolved, kind.is_none())
    }

    /// `Args::tensor`: [`pull`](Self::pull) of a tensor that may not overlap an output
    /// already taken.
    pub fn rust_tensor(&mut self) -> Result<Resolved, Status> {
        let resolved = self.peek(None).and_then(|resolved| {
            if self.dst_taken && resolved.range.overlaps(self.dst_range) {
                Err(Status::OUTPUT_ALIASES_INPUT)
            } else {
                Ok(resolved)
            }
        });
        self.consume(resolved, true)
    }

    /// How many arguments have been pulled since setup: the last one pulled is the
    /// hand-off's argument `pulled() - 1`.
    pub fn pulled(&self) -> usize {
        self.next
    }

    /// How many arguments are left to pull (`Args::remaining`, set up).
    pub fn remaining(&self) -> usize {
        self.parsed.len() - self.next
    }

    fn peek_dst(&self) -> Result<Resolved, Status> {
        if self.phase != Phase::Active {
            return Err(Status::NOT_SET_UP);
        }
        if self.dst_taken {
            return Err(Status::DST_ALREADY_TAKEN);
        }
        if !self.has_output {
            return Err(Status::NO_OUTPUT);
        }
        let view = self.dst.validate().map_err(Status::from)?;
        if view.arg_type() != ArgType::Tensor {
            return Err(Status::EXPECTED_TENSOR);
        }
        Model::translate(&self.dst)
    }

    fn take_dst(&mut self, resolved: Result<Resolved, Status>) -> Result<Resolved, Status> {
        if let Ok(resolved) = resolved {
            self.dst_taken = true;
            self.dst_range = resolved.range;
        }
        self.record_result(resolved)
    }

    /// `dst_tensor` (C's `get_dst_tensor`): the output, once per setup.
    pub fn dst(&mut self) -> Result<Resolved, Status> {
        let resolved = self.peek_dst();
        self.take_dst(resolved)
    }

    /// `Args::output`: [`dst`](Self::dst), which may not overlap a tensor already pulled.
    pub fn rust_output(&mut self) -> Result<Resolved, Status> {
        let pulled = &self.input_ranges[..self.next];
        let resolved = self.peek_dst().and_then(|resolved| {
            if pulled.iter().any(|r| r.overlaps(resolved.range)) {
                Err(Status::OUTPUT_ALIASES_INPUT)
            } else {
                Ok(resolved)
            }
        });
        self.take_dst(resolved)
    }

    /// `return_tensor(desc)`: a well-formed tensor is written to the result descriptor.
    pub fn return_tensor(&mut self, desc: &ArgTensor) -> Status {
        let status = if self.phase != Phase::Active {
            Status::NOT_SET_UP
        } else if !self.has_output {
            Status::NO_OUTPUT
        } else {
            match desc.validate() {
                Err(error) => error.into(),
                Ok(view) if view.arg_type() != ArgType::Tensor => Status::EXPECTED_TENSOR,
                Ok(_) => {
                    self.result = Some(*desc);
                    Status::OK
                }
            }
        };
        self.record(status)
    }

    /// `tensor_data(desc)`: where any descriptor's data is, once set up.
    pub fn tensor_data(&mut self, desc: &ArgTensor) -> Result<Resolved, Status> {
        let resolved = if self.phase == Phase::Active { Model::translate(desc) } else { Err(Status::NOT_SET_UP) };
        self.record_result(resolved)
    }

    /// `cleanup()`: ends a set-up invocation (one `end_op`); returns the invocation's
    /// status.
    pub fn cleanup(&mut self) -> Status {
        if self.phase == Phase::Active {
            self.op_calls.end += 1;
            self.phase = Phase::Idle;
            self.record(Status::OK);
        } else {
            self.record(Status::NOT_SET_UP);
        }
        self.invocation
    }

    /// What `Invocation::run` returns, after its [`setup`](Self::setup) (`false`) and
    /// the kernel's pulls: `kernel` is `None` when that setup failed (the kernel must
    /// not run), else the kernel's result (its output's descriptor, returned, or its
    /// error), after which `run` cleans up.
    pub fn end_run(&mut self, kernel: Option<Result<ArgTensor, KernelError>>) -> Status {
        match kernel {
            None => self.invocation,
            Some(outcome) => {
                match outcome {
                    Ok(output) => self.return_tensor(&output),
                    Err(error) => self.record(error.into()),
                };
                self.cleanup()
            }
        }
    }
}
