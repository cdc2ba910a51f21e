"""Vision building blocks against CPU, forward and backward: convolutions,
batch norm (train and eval, running stats), adaptive average pooling, and a
small CNN trained a few steps with AdamW."""
import os
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _helpers import check, check_scenario, make_tensor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import models  # noqa: E402


def leaf(shape, seed=0):
    return make_tensor(shape, torch.float32, seed=seed).requires_grad_()


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (1, 1, 1, 1), (2, 1, 1, 1), (2, 0, 2, 1), (1, 1, 1, 2), (3, 2, 1, 4),
])
def test_conv2d(stride, padding, dilation, groups):
    x = leaf((2, 4, 9, 8), 1)
    w = leaf((8, 4 // groups, 3, 3), 2)
    bias = leaf((8,), 3)
    check(lambda x, w, b: F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups),
          x, w, bias, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("stride,padding", [(1, 0), (2, 1)])
def test_conv1d(stride, padding):
    check(lambda x, w: F.conv1d(x, w, stride=stride, padding=padding), leaf((2, 3, 11), 1), leaf((5, 3, 4), 2),
          atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_and_running_stats(training):
    def scenario(device):
        torch.manual_seed(0)
        bn = nn.BatchNorm2d(3).to(device)
        bn.running_mean.fill_(0.5)
        bn.running_var.fill_(2.0)
        bn.train(training)
        x = make_tensor((4, 3, 5, 5)).to(device).requires_grad_()
        y = bn(x)
        (y * torch.arange(y.numel(), device=device).reshape(y.shape) / 100).sum().backward()
        return y, x.grad, bn.weight.grad, bn.bias.grad, bn.running_mean, bn.running_var, bn.num_batches_tracked
    check_scenario(scenario, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("out", [(1, 1), (2, 3)])
def test_adaptive_avg_pool2d(out):
    check(lambda x: F.adaptive_avg_pool2d(x, out), leaf((2, 3, 4, 6)))


def test_small_cnn_trains_like_cpu():
    def scenario(device):
        torch.manual_seed(0)
        step, _ = models.cnn_step(device, batch=4)
        return [step().item() for _ in range(3)]
    check_scenario(scenario, atol=1e-4, rtol=1e-4)
