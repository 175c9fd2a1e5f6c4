#!/usr/bin/env bash
# Runs the AWS custom-op inference sample's own files on the simulated device, each of
# its three flavours (neuron: the element accessor; neuron-tcm: the TCM accessor;
# neuron-multicore: the TCM accessor on all 8 cores): build.py, my_ops.py, model.py,
# relu.cpp and shape.cpp of aws-neuron-samples'
# torch-neuronx/inference/customop_mlp/<flavour>/, unchanged (the runner, `python -m
# neuroncustomop`, serves their `torch_neuronx.xla_impl.custom_op`), run by this
# folder's inference.py (the sample's loop on the CPU with generated images: the
# sample's own needs an XLA device and downloads MNIST).
#
#     bash examples/cxx_mlp_training/run-aws-inference-sample.sh <aws-neuron-samples checkout> [python]
#
# The sample is under the Amazon Software License, whose use limitation (section 3.3)
# keeps it out of this MIT/Apache repository: bring your own checkout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
samples="$1/torch-neuronx/inference/customop_mlp"
python="${2:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for flavour in neuron neuron-tcm neuron-multicore; do
    echo "== $flavour"
    mkdir "$work/$flavour"
    cp "$samples/$flavour"/{build.py,my_ops.py,model.py,relu.cpp,shape.cpp} "$work/$flavour"
    cp "$here/inference.py" "$here/train.py" "$work/$flavour"
    (cd "$work/$flavour" && "$python" -m neuroncustomop build.py && "$python" -m neuroncustomop inference.py)
done
