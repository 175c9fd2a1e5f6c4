#!/usr/bin/env bash
# Runs the AWS custom-op training sample's own files on the simulated device: build.py,
# my_ops.py, model.py, relu.cpp and shape.cpp of aws-neuron-samples'
# torch-neuronx/training/customop_mlp/neuron/, with only their vendor import changed,
# trained by this folder's train.py (the sample's, on the CPU with generated data).
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
# The vendor import and nothing else: `import torch_neuronx` goes, and custom_op is
# neuroncustomop.
sed -i -e '/^import torch_neuronx$/d' \
    -e 's/^from torch_neuronx\.xla_impl import custom_op$/import neuroncustomop as custom_op/' \
    "$work/build.py" "$work/my_ops.py"
if grep -n torch_neuronx "$work"/*.py; then
    echo "run-aws-sample.sh: the sample imports torch_neuronx in a way this script does not know" >&2
    exit 1
fi
cd "$work"
"$python" build.py
"$python" train.py
