"""`fused=True` optimizers on 'tpu': kernels for aten::_fused_adam_,
_fused_adamw_ and _fused_sgd_ written with ordinary device ops.

The arithmetic follows PyTorch's fused CPU kernels step for step (weight decay,
lerp of the first moment, bias corrections from each parameter's step count,
amsgrad, maximize, GradScaler's grad_scale / found_inf). Step counts stay
device tensors, so nothing here synchronises with the host. The whole update
is one graph: a FusedRegion in Strict mode (one executable per step), the
step's pending graph in DeferAndFuse.
"""
from __future__ import annotations

import torch

from . import _C

_lib = None


def _unscale(grads, grad_scale, found_inf):
    if grad_scale is None:
        return grads, None
    grads = [g / grad_scale.to(g.device) for g in grads]
    return grads, found_inf


def _commit(targets, updated, found_inf):
    """Writes `updated` into `targets`, unless GradScaler found an inf."""
    for t, u in zip(targets, updated):
        if found_inf is None:
            t.copy_(u)
        else:
            t.copy_(torch.where(found_inf.to(t.device) > 0, t, u))


def _adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1, beta2,
          weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None, decoupled):
    grads, found_inf = _unscale(list(grads), grad_scale, found_inf)
    for i, p in enumerate(params):
        g = -grads[i] if maximize else grads[i]
        new_p = p
        if weight_decay != 0:
            if decoupled:
                new_p = p * (1 - lr * weight_decay)
            else:
                g = g + p * weight_decay
        m = exp_avgs[i] + (g - exp_avgs[i]) * (1 - beta1)
        v = exp_avg_sqs[i] * beta2 + g * g * (1 - beta2)
        step = state_steps[i].to(p.device, torch.float32) if state_steps[i].device != p.device \
            else state_steps[i].to(torch.float32)
        bc1 = 1 - torch.pow(beta1, step)
        bc2_sqrt = torch.sqrt(1 - torch.pow(beta2, step))
        if amsgrad:
            vmax = torch.maximum(max_exp_avg_sqs[i], v)
            denom = torch.sqrt(vmax) / bc2_sqrt + eps
        else:
            denom = torch.sqrt(v) / bc2_sqrt + eps
        new_p = new_p - (lr / bc1) * (m / denom)
        targets, updated = [p, exp_avgs[i], exp_avg_sqs[i]], [new_p.to(p.dtype), m, v]
        if amsgrad:
            targets.append(max_exp_avg_sqs[i])
            updated.append(vmax)
        _commit(targets, updated, found_inf)


def _fused_adam(*args, **kw):
    with _C._FusedRegion():
        _adam(*args, decoupled=False, **kw)


def _fused_adamw(*args, **kw):
    with _C._FusedRegion():
        _adam(*args, decoupled=True, **kw)


def _fused_sgd(*args, **kw):
    with _C._FusedRegion():
        _sgd(*args, **kw)


def _sgd(params, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening, nesterov,
         maximize, is_first_step, grad_scale=None, found_inf=None):
    grads, found_inf = _unscale(list(grads), grad_scale, found_inf)
    for i, p in enumerate(params):
        g = -grads[i] if maximize else grads[i]
        if weight_decay != 0:
            g = g + p * weight_decay
        targets, updated = [], []
        if momentum != 0:
            buf = momentum_buffer_list[i]
            new_buf = g.clone() if is_first_step else buf * momentum + g * (1 - dampening)
            targets.append(buf)
            updated.append(new_buf)
            g = g + new_buf * momentum if nesterov else new_buf
        targets.insert(0, p)
        updated.insert(0, p - lr * g)
        _commit(targets, updated, found_inf)


def install() -> None:
    """Registers the kernels for the PrivateUse1 ('tpu') dispatch key."""
    global _lib
    if _lib is not None:
        return
    lib = torch.library.Library("aten", "IMPL")
    for name, fn in (("_fused_adam_", _fused_adam), ("_fused_adamw_", _fused_adamw), ("_fused_sgd_", _fused_sgd)):
        for overload in ("", ".tensor_lr"):
            try:
                lib.impl(name + overload, fn, "PrivateUse1")
            except RuntimeError:  # overload absent in this torch version
                pass
    _lib = lib
