"""{{name}}'s kernels on the simulated device, checked against NumPy: `pytest tests`
(with the neuroncustomop wheel and pytest installed). The first call builds and
packages the library."""

from pathlib import Path

import numpy as np
import neuroncustomop

LIBRARY = Path(__file__).resolve().parent.parent


def test_scale_matches_numpy():
    library = neuroncustomop.load(str(LIBRARY))
    x = np.random.default_rng(1).normal(0.0, 10.0, (4, 100)).astype(np.float32)
    np.testing.assert_array_equal(library.scale(x, 0.5), x * np.float32(0.5))
