"""Trains the MLP of model.py as the AWS sample's train.py does, with its device and
data swapped: the CPU (each ReLU runs on the simulated device), and generated images
and labels instead of the MNIST download.

    python build.py && python train.py
"""

import time

import torch
from torch.utils.data import DataLoader, TensorDataset

from model import MLP

EPOCHS = 2
BATCH_SIZE = 32
SAMPLES = 128


def dataset(samples=SAMPLES, seed=1):
    """Images in [0, 1) and labels 0..9, the same for a given seed."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.rand(samples, 1, 28, 28, generator=generator)
    labels = torch.randint(0, 10, (samples,), generator=generator)
    return TensorDataset(images, labels)


def train(model, epochs=EPOCHS, device="cpu"):
    """Trains ``model`` with SGD on :func:`dataset`; returns each step's loss."""
    loader = DataLoader(dataset(), batch_size=BATCH_SIZE)
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.NLLLoss()
    losses = []
    model.train()
    for _ in range(epochs):
        for train_x, train_label in loader:
            optimizer.zero_grad()
            train_x = train_x.view(train_x.size(0), -1).to(device)
            output = model(train_x)
            loss = loss_fn(output, train_label.to(device))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def main():
    torch.manual_seed(0)
    start = time.time()
    losses = train(MLP())
    print(f"{len(losses)} steps in {time.time() - start:.1f} s")
    print(f"Final loss is {losses[-1]:0.4f}")


if __name__ == "__main__":
    main()
