"""The custom ReLU as an autograd function over torch.ops.my_ops (librelu.so, which
build.py makes), as the AWS sample's my_ops.py."""

import torch

import neuroncustomop as custom_op

custom_op.load_library("librelu.so")


class Relu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return torch.ops.my_ops.relu_forward(input)

    @staticmethod
    def backward(ctx, grad):
        (input,) = ctx.saved_tensors
        return torch.ops.my_ops.relu_backward(grad, input)
