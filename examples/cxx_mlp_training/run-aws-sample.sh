#!/usr/bin/env bash
# Runs the AWS custom-op training sample's own files on the simulated device: build.py,
# my_ops.py, model.py, relu.cpp and shape.cpp of aws-neuron-samples'
# torch-neuronx/training/customop_mlp/neuron/, unchanged (the runner, `python -m
# neuroncustomop`, serves their `torch_neuronx.xla_impl.custom_op`), trained by this
# folder's train.py (the sample's, on the CPU with generated data).
#
#     bash examples/cxx_mlp_training/run-aws-sample.sh <aws-neuron-samples checkout> [python]
#
# The sample is under the Amazon Software License, whose use limitation (section 3.3)
# keeps it out of this MIT/Apache repository: bring your own checkout. This folder's
# files are the same flow, written here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sample="$1/torch-neuronx/training/customop_mlp/neuron"
python="${2:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$sample"/{build.py,my_ops.py,model.py,relu.cpp,shape.cpp} "$work"
cp "$here/train.py" "$work"
cd "$work"
"$python" -m neuroncustomop build.py
"$python" -m neuroncustomop train.py
