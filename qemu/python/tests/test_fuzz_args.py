"""Random arguments through the whole conversion, Python half and native half: each is
taken, or refused with a TypeError, ValueError or OverflowError whose message is one
sentence (never a crash, never a Rust ``Debug`` print). No kernel runs: the native
half converts the arguments for ``output_of`` and answers before the device would."""

import numpy as np

from neuroncustomop import _args

# Shapes of Rust values' Debug prints, which an author should never be shown.
DEBUG_SHAPES = ("RankTooLarge", "Some(", "None", "{ ", "Error {", "ParseIntError", "kind:")

DTYPES = ["float32", "float16", "int32", "int8", "int64", "int16", "uint8", "float64", "bool", "complex64", "uint32"]


def _pick(rng: np.random.Generator, options: list):
    """One of ``options``, as it is (``rng.choice`` would make an array of them)."""
    return options[int(rng.integers(len(options)))]


def _random_value(rng: np.random.Generator):
    """One argument of a random kind: arrays of random dtype, rank (0 to 10), size
    (including empty and 65,536-wide), layout and byte order; Python and NumPy scalars
    of every kind, in and out of range; and things that are neither."""
    kind = rng.integers(0, 6)
    if kind == 0:
        rank = int(rng.integers(0, 11))
        shape = tuple(int(d) for d in rng.choice([0, 1, 2, 3, 65_536], size=rank, p=[0.1, 0.4, 0.3, 0.19, 0.01]))
        if np.prod(shape, dtype=np.int64) > 1 << 16:
            shape = tuple(min(d, 3) for d in shape)
        dtype = np.dtype(_pick(rng, DTYPES))
        if rng.integers(0, 4) == 0:
            dtype = dtype.newbyteorder(">")
        array = np.zeros(shape, dtype=dtype)
        if array.ndim >= 2 and rng.integers(0, 2):
            array = array.swapaxes(0, 1)
        return array
    if kind == 1:
        return _pick(rng, [0, -1, 2**31 - 1, 2**31, -(2**31) - 1, 2**63, -(2**80)])
    if kind == 2:
        return _pick(rng, [0.0, -1.5, np.inf, -np.inf, np.nan, 1e300])
    if kind == 3:
        return _pick(rng, [np.int32, np.int64, np.float32, np.float64, np.int8, np.uint64, np.float16])(1)
    if kind == 4:
        return _pick(rng, [True, False, np.bool_(True)])
    return _pick(rng, ["x", None, [1.0, 2.0], [[1, 2], [3]], b"\x00", object()])


def _sentence(error: BaseException) -> None:
    message = str(error)
    assert message.strip() and "\n" not in message, repr(message)
    assert not any(shape in message for shape in DEBUG_SHAPES), message


def test_random_arguments_are_taken_or_refused_in_a_sentence(relu):
    rng = np.random.default_rng(22)
    taken = refused = 0
    for _ in range(600):
        values = [_random_value(rng) for _ in range(int(rng.integers(1, 4)))]
        try:
            arguments = [_args.argument(value, index) for index, value in enumerate(values)]
            relu._native.resolve_output("relu", arguments, None, None, None)
            taken += 1
        except (TypeError, ValueError, OverflowError) as error:
            _sentence(error)
            refused += 1
    # Both paths ran: the cases reach the native half, and the refusals. (Fewer are
    # taken: the native half takes a call only with a tensor to give the output its
    # form; seed 22 takes 42 of 600.)
    assert taken > 20 and refused > 50, (taken, refused)
