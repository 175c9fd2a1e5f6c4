"""Builds librelu.so in this folder, as the AWS sample's build.py does (only the
import differs: torch_neuronx's custom_op is neuroncustomop)."""

import os

import neuroncustomop as custom_op

custom_op.load(
    name="relu",
    compute_srcs=["relu.cpp"],
    shape_srcs=["shape.cpp"],
    build_directory=os.getcwd(),
)
