//! What a call passes: its arguments, in the order the kernel pulls them, and the
//! output's dtype and shape, with the one rule that completes what a call leaves out
//! ([`Library::resolve_output`]).

use super::{CallError, Library};
use crate::array::{Array, dtype_name};
use neuroncustomop::wrapper_api::Dtype;

/// One argument of a kernel, in the order the kernel pulls them.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A tensor of any ABI dtype.
    Tensor(Array),
    /// A C `int` scalar (`customop_next_int`, `args.int()`).
    Int(i32),
    /// A C `long long` scalar (`customop_next_long_long`, `args.long_long()`).
    LongLong(i64),
    /// A C `float` scalar (`customop_next_float`, `args.float()`).
    Float(f32),
}

impl From<Array> for Arg {
    fn from(array: Array) -> Self {
        Arg::Tensor(array)
    }
}

impl Arg {
    /// What it is, for messages: `tensor float32 [2, 3]`, `int`, `long long`, `float`.
    pub fn describe(&self) -> String {
        match self {
            Arg::Tensor(array) => format!("tensor {} {:?}", dtype_name(array.dtype()), array.shape()),
            Arg::Int(_) => "int".into(),
            Arg::LongLong(_) => "long long".into(),
            Arg::Float(_) => "float".into(),
        }
    }
}

/// The output tensor's shape and dtype.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// As given.
    Shape {
        /// Its dtype.
        dtype: Dtype,
        /// Its shape.
        shape: Vec<usize>,
    },
    /// The same shape and dtype as input `k` (counting every argument from 0), which
    /// must be a tensor.
    Like(usize),
}

/// What a call says of its output: its shape, its dtype, both or neither;
/// [`Library::resolve_output`] completes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartialOutput {
    /// Its shape, if the call gives it.
    pub shape: Option<Vec<usize>>,
    /// Its dtype, if the call gives it.
    pub dtype: Option<Dtype>,
}

impl PartialOutput {
    /// Fills what it lacks from `output` (a dtype and shape of lower precedence).
    fn fill(&mut self, output: Option<(Dtype, Vec<usize>)>) {
        if let Some((dtype, shape)) = output {
            self.dtype.get_or_insert(dtype);
            self.shape.get_or_insert(shape);
        }
    }

    /// Its dtype and shape, if both are known.
    fn complete(&self) -> Option<(Dtype, Vec<usize>)> {
        Some((self.dtype?, self.shape.clone()?))
    }
}

/// What is wrong with `args` for a C++ op whose parameters are `params` (its shape
/// function's signature), and how to pass each argument instead, in the terms of
/// both front ends (`ncop run --arg`, a Python call); `None` when they fit.
fn misfit(kernel: &str, params: &[neuroncustomop_package::cxx::ArgKind], args: &[Arg]) -> Option<String> {
    use neuroncustomop_package::cxx::ArgKind;
    let passed = |arg: &Arg| match arg {
        Arg::Tensor(_) => "a tensor",
        Arg::Int(_) => "an int",
        Arg::LongLong(_) => "a long long",
        Arg::Float(_) => "a float",
    };
    let how = |kind: ArgKind| match kind {
        ArgKind::Tensor => "a tensor (ncop run: --arg x.npy or gen:DTYPE:SHAPE; Python: an array)",
        ArgKind::Int => "an int (ncop run: --arg int:V; Python: an int)",
        ArgKind::Long => "a long long (ncop run: --arg longlong:V; Python: np.int64(V))",
        ArgKind::Float | ArgKind::Double => "a float (ncop run: --arg float:V; Python: a float)",
    };
    let signature = params.iter().map(|kind| kind.name()).collect::<Vec<_>>().join(", ");
    if params.len() != args.len() {
        return Some(format!(
            "op {kernel} takes {} argument(s) ({signature}), the call passes {}",
            params.len(),
            args.len()
        ));
    }
    let fits = |kind: ArgKind, arg: &Arg| {
        matches!(
            (kind, arg),
            (ArgKind::Tensor, Arg::Tensor(_))
                | (ArgKind::Int, Arg::Int(_))
                | (ArgKind::Long, Arg::LongLong(_))
                | (ArgKind::Float | ArgKind::Double, Arg::Float(_))
        )
    };
    let (index, (kind, arg)) = params.iter().zip(args).enumerate().find(|(_, (kind, arg))| !fits(**kind, arg))?;
    Some(format!(
        "op {kernel}: argument {index} is {}, but its parameter there is a {} ({signature}): pass {}",
        passed(arg),
        kind.name(),
        how(*kind)
    ))
}

/// The most arguments a kernel takes (the runtime's pull stream).
pub(super) const MAX_ARGS: usize = 10;

impl Library {
    /// The output `kernel` makes of `args`, as the library's own shape function says:
    /// a C++ library on the AWS torch API registers one per op (`NEURON_LIBRARY`), run
    /// here on the host, so its calls need no output shape. `None` for a Rust or C
    /// library, which has none.
    ///
    /// # Errors
    /// [`CallError::ShapeFunction`]: the shape function failed or gave an output the
    /// device cannot hold.
    pub fn output_of(&self, kernel: &str, args: &[Arg]) -> Result<Option<Output>, CallError> {
        let Some(driver) = &self.shape_driver else { return Ok(None) };
        use neuroncustomop_package::cxx::{ArgKind, ShapeArg};
        // A `double` parameter takes the float the kernel ABI carries, widened (as the
        // device entry does), and the shape driver wants it named a double.
        let kinds = self.registration().and_then(Result::ok).and_then(|r| r.ops.iter().find(|op| op.name == kernel));
        if let Some(message) = kinds.and_then(|op| misfit(kernel, &op.args, args)) {
            return Err(CallError::ShapeFunction { kernel: kernel.into(), message });
        }
        let takes_double = |index: usize| kinds.is_some_and(|op| op.args.get(index) == Some(&ArgKind::Double));
        let shape_args: Vec<ShapeArg> = args
            .iter()
            .enumerate()
            .map(|(index, arg)| match arg {
                Arg::Tensor(array) => {
                    ShapeArg::Tensor(array.dtype(), array.shape().iter().map(|&d| d as u32).collect())
                }
                Arg::Int(v) => ShapeArg::Int(*v),
                Arg::LongLong(v) => ShapeArg::Long(*v),
                Arg::Float(v) if takes_double(index) => ShapeArg::Double(f64::from(*v)),
                Arg::Float(v) => ShapeArg::Float(*v),
            })
            .collect();
        let shaped = neuroncustomop_package::cxx::output_shape(driver, kernel, &shape_args)
            .map_err(|message| CallError::ShapeFunction { kernel: kernel.into(), message })?;
        Ok(Some(Output::Shape { dtype: shaped.dtype, shape: shaped.shape.iter().map(|&d| usize::from(d)).collect() }))
    }

    /// The output's dtype and shape for a call of `kernel` with `args`: each from the
    /// first that gives it, in this order (the one rule, for `ncop run` and Python):
    /// 1. `given`, the call's own;
    /// 2. `shape_fn`, what a shape function the caller holds said (the Python package's
    ///    `shape_fns`);
    /// 3. the library's own shape function ([`Library::output_of`], a C++ library's);
    /// 4. the first tensor argument.
    ///
    /// Each is asked only while something is still missing.
    ///
    /// # Errors
    /// [`CallError::ShapeFunction`]; [`CallError::NoOutputForm`] when the output is
    /// still incomplete and no argument is a tensor.
    pub fn resolve_output(
        &self,
        kernel: &str,
        args: &[Arg],
        given: PartialOutput,
        shape_fn: Option<(Dtype, Vec<usize>)>,
    ) -> Result<(Dtype, Vec<usize>), CallError> {
        let mut spec = given;
        spec.fill(shape_fn);
        if spec.complete().is_none()
            && let Some(Output::Shape { dtype, shape }) = self.output_of(kernel, args)?
        {
            spec.fill(Some((dtype, shape)));
        }
        if let Some(complete) = spec.complete() {
            return Ok(complete);
        }
        let (dtype, shape) = args
            .iter()
            .find_map(|arg| match arg {
                Arg::Tensor(array) => Some((array.dtype(), array.shape().to_vec())),
                _ => None,
            })
            .ok_or_else(|| CallError::NoOutputForm { kernel: kernel.into() })?;
        Ok((spec.dtype.unwrap_or(dtype), spec.shape.unwrap_or(shape)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neuroncustomop_package::cxx::ArgKind;

    /// `affine(const Tensor&, int64_t, double)` of `examples/cxx_scalars`.
    const AFFINE: [ArgKind; 3] = [ArgKind::Tensor, ArgKind::Long, ArgKind::Double];

    fn tensor() -> Arg {
        Arg::Tensor(Array::from_slice(vec![4], &[0.0f32; 4]).unwrap())
    }

    #[test]
    fn a_scalar_of_the_wrong_kind_is_named_with_how_to_pass_it_on_both_front_ends() {
        let message = misfit("affine", &AFFINE, &[tensor(), Arg::LongLong(1), Arg::Int(2)]).unwrap();
        assert_eq!(
            message,
            "op affine: argument 2 is an int, but its parameter there is a double (tensor, long, double): pass a \
             float (ncop run: --arg float:V; Python: a float)"
        );
        let message = misfit("affine", &AFFINE, &[tensor(), Arg::Int(1), Arg::Float(2.0)]).unwrap();
        assert!(message.ends_with("pass a long long (ncop run: --arg longlong:V; Python: np.int64(V))"), "{message}");
    }

    #[test]
    fn a_call_with_too_few_arguments_says_the_signature_and_a_fitting_call_passes() {
        assert_eq!(
            misfit("affine", &AFFINE, &[tensor()]).unwrap(),
            "op affine takes 3 argument(s) (tensor, long, double), the call passes 1"
        );
        assert_eq!(misfit("affine", &AFFINE, &[tensor(), Arg::LongLong(1), Arg::Float(0.5)]), None);
    }
}
