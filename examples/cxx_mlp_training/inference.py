"""Runs inference with the MLP of model.py as the AWS inference sample's inference.py
does (the same script in each of its flavours: the element accessor, the TCM accessor,
the TCM accessor on all cores), with its device and data swapped: the CPU (each ReLU
runs on the simulated device) and generated images instead of the MNIST download.

    python -m neuroncustomop build.py && python -m neuroncustomop inference.py
"""

import time

import torch
from torch.utils.data import DataLoader

from model import MLP
from train import dataset

EPOCHS = 2
WARMUP_STEPS = 1
BATCH_SIZE = 32


def model():
    """The MLP as the sample makes it: seed 0, Xavier-normal weights."""
    torch.manual_seed(0)
    net = MLP()
    for layer in (net.fc1, net.fc2, net.fc3):
        torch.nn.init.xavier_normal_(layer.weight)
    return net


def infer(net, epochs=EPOCHS):
    """Runs ``net`` in eval mode over :func:`train.dataset`'s images, ``epochs`` times;
    returns the last epoch's outputs, one row an image, and its throughput (batches a
    second, the first ``WARMUP_STEPS`` left out)."""
    loader = DataLoader(dataset(), batch_size=BATCH_SIZE)
    net.eval()
    for _ in range(epochs):
        outputs = []
        start = time.time()
        for index, (images, _) in enumerate(loader):
            outputs.append(net(images.view(images.size(0), -1)))
            if index < WARMUP_STEPS:
                start = time.time()
    throughput = (index - WARMUP_STEPS) / (time.time() - start)
    return torch.cat(outputs), throughput


def main():
    print("---------- Inference ---------------")
    outputs, throughput = infer(model())
    print(f"Inf throughput (iter/sec): {throughput}")
    print("----------End Inference ---------------")
    return outputs


if __name__ == "__main__":
    main()
