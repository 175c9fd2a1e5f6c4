"""A 3-layer MLP for 28x28 images in 10 classes, with the custom ReLU between its
layers (as the AWS sample's model.py)."""

import torch
import torch.nn as nn

import my_ops


class MLP(nn.Module):
    def __init__(self, input_size=28 * 28, output_size=10, layers=(120, 84)):
        super().__init__()
        self.fc1 = nn.Linear(input_size, layers[0])
        self.fc2 = nn.Linear(layers[0], layers[1])
        self.fc3 = nn.Linear(layers[1], output_size)

    def forward(self, x):
        r1 = my_ops.Relu.apply(self.fc1(x))
        r2 = my_ops.Relu.apply(self.fc2(r1))
        return torch.log_softmax(self.fc3(r2), dim=1)
