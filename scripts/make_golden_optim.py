#!/usr/bin/python3
"""Writes the small PyTorch fixtures of the element-wise kernel tests (tests/kernels_elem/).

Run with the interpreter that has torch 1.13 and numpy:   /usr/bin/python3 scripts/make_golden_optim.py
The output is deterministic (fixed seeds, one thread) and committed, so the tests never need torch.
Files written (a few KB each):
  tests/golden/optim_adam.bin  clip_grad_norm_(max_norm) + torch.optim.Adam(foreach=False) for 20 steps
                               on two parameter tensors, once with clipping (coef < 1) and once without
                               (coef > 1, clamped to 1), the lr changed every step by
                               CosineAnnealingWarmRestarts; plus that scheduler's lr over 75 epochs
                               (T_0 10, T_mult 2, eta_max 1e-3, eta_min 1e-4).
  tests/golden/optim_sgd_rmsprop.bin  the same 20 clipped / unclipped steps with upstream's other two
                               optimizers (spec §6.4): torch.optim.SGD(lr) (momentum 0) and
                               torch.optim.RMSprop(lr, foreach=True) (alpha 0.99, eps 1e-8).
  tests/golden/optim_elem.bin  the loss of spec §6.1-6.3 (value and dL/dz), GroupNorm (+ReLU) forward and
                               backward (torch.nn.GroupNorm), MaxPool3d(2, 2) forward (values and argmax)
                               and backward, computed by torch in float32 as upstream does.

Activations are stored in the kernels' layout, NDHWC (batch 1 dropped); argmax indices as a*4+p*2+q.

File format (little-endian; the same container as scripts/make_golden.py):
  char[8]  magic    "SFGOLDEN"
  uint32   version  1
  uint32   count    number of named tensors
  count times:
    uint32 name_len, then name_len bytes of name (ASCII, no NUL)
    uint32 dtype    0 = float32, 1 = int32, 2 = float64
    uint32 ndim     (0 for a scalar)
    int64  shape[ndim]
    data            prod(shape) elements in C order
"""
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

MAGIC = b"SFGOLDEN"
VERSION = 1
DTYPES = {np.dtype(np.float32): 0, np.dtype(np.int32): 1, np.dtype(np.float64): 2}
DICE_EPS = 1e-6
GN_EPS = 1e-5


class Writer:
    def __init__(self):
        self.tensors = []

    def add(self, name, value, dtype=np.float32):
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().numpy()
        assert name not in [n for n, _ in self.tensors], name
        self.tensors.append((name, np.ascontiguousarray(np.asarray(value, dtype=dtype))))

    def write(self, path):
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(MAGIC + struct.pack("<II", VERSION, len(self.tensors)))
            for name, arr in self.tensors:
                nb = name.encode("ascii")
                f.write(struct.pack("<I", len(nb)) + nb)
                f.write(struct.pack("<II", DTYPES[arr.dtype], arr.ndim))
                f.write(struct.pack("<%dq" % arr.ndim, *arr.shape))
                f.write(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
        os.replace(tmp, path)
        print("wrote %s (%d tensors, %d bytes)" % (path, len(self.tensors), os.path.getsize(path)))


def to_ndhwc(t):  # (1,C,D,H,W) -> (D,H,W,C)
    return t.detach()[0].permute(1, 2, 3, 0).contiguous()


# ---- optimizer ------------------------------------------------------------------------------------
def adam_case(w, tag, sizes, grad_scale, seed, steps=20, lr=1e-3, max_norm=1.0):
    gen = torch.Generator().manual_seed(seed)
    n = sum(sizes)
    w0 = (torch.rand(n, generator=gen) * 2 - 1) * 1e-2  # small weights: the updates dominate
    grads = torch.randn(steps, n, generator=gen) * grad_scale
    params = [torch.nn.Parameter(p.clone()) for p in torch.split(w0, sizes)]
    opt = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999), eps=1e-8, foreach=False)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=1e-4)
    lrs, norms, coefs, ws = [], [], [], []
    for s in range(steps):
        for p, g in zip(params, torch.split(grads[s], sizes)):
            p.grad = g.clone()
        lrs.append(opt.param_groups[0]["lr"])
        total = torch.nn.utils.clip_grad_norm_(params, max_norm)
        coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)  # the value clip_grad_norm_ multiplied by
        norms.append(float(total))
        coefs.append(float(coef))
        opt.step()
        sched.step()
        ws.append(torch.cat([p.detach().clone() for p in params]))
    state = [opt.state[p] for p in params]
    w.add(tag + "_sizes", sizes, np.int32)
    w.add(tag + "_hyper", [0.9, 0.999, 1e-8, max_norm, steps], np.float64)
    w.add(tag + "_w0", w0)
    w.add(tag + "_grads", grads)
    w.add(tag + "_lr", lrs, np.float64)
    w.add(tag + "_norm", norms)
    w.add(tag + "_coef", coefs)
    w.add(tag + "_w", torch.stack(ws))
    w.add(tag + "_m", torch.cat([s["exp_avg"] for s in state]))
    w.add(tag + "_v", torch.cat([s["exp_avg_sq"] for s in state]))
    print("  %s: clip coefs %.4g .. %.4g" % (tag, min(coefs), max(coefs)))


def plain_case(w, kind, tag, sizes, grad_scale, seed, steps=20, lr=1e-3, max_norm=1.0):
    """SGD or RMSprop as upstream builds them (spec §6.4); same inputs as adam_case."""
    gen = torch.Generator().manual_seed(seed)
    n = sum(sizes)
    w0 = (torch.rand(n, generator=gen) * 2 - 1) * 1e-2
    grads = torch.randn(steps, n, generator=gen) * grad_scale
    params = [torch.nn.Parameter(p.clone()) for p in torch.split(w0, sizes)]
    if kind == "sgd":
        opt = torch.optim.SGD(params, lr=lr)
    else:
        opt = torch.optim.RMSprop(params, lr=lr, foreach=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=1e-4)
    lrs, coefs, ws = [], [], []
    for s in range(steps):
        for p, g in zip(params, torch.split(grads[s], sizes)):
            p.grad = g.clone()
        lrs.append(opt.param_groups[0]["lr"])
        total = torch.nn.utils.clip_grad_norm_(params, max_norm)
        coefs.append(float(torch.clamp(max_norm / (total + 1e-6), max=1.0)))
        opt.step()
        sched.step()
        ws.append(torch.cat([p.detach().clone() for p in params]))
    w.add(tag + "_sizes", sizes, np.int32)
    w.add(tag + "_hyper", [0.99, 1e-8, max_norm, steps], np.float64)  # RMSprop alpha, eps
    w.add(tag + "_w0", w0)
    w.add(tag + "_grads", grads)
    w.add(tag + "_lr", lrs, np.float64)
    w.add(tag + "_coef", coefs)
    w.add(tag + "_w", torch.stack(ws))
    if kind == "rmsprop":
        w.add(tag + "_sq", torch.cat([opt.state[p]["square_avg"] for p in params]))
    print("  %s: clip coefs %.4g .. %.4g" % (tag, min(coefs), max(coefs)))


def schedule_case(w, epochs=75, eta_max=1e-3, eta_min=1e-4, T_0=10, T_mult=2):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=eta_max)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=T_0, T_mult=T_mult, eta_min=eta_min)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(epochs):
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    w.add("sched_params", [eta_max, eta_min, T_0, T_mult, epochs], np.float64)
    w.add("sched_lr", lrs, np.float64)  # lr after k scheduler steps, k = 0..epochs


# ---- loss, GroupNorm, MaxPool ---------------------------------------------------------------------
def spec_loss(z, y, cw, K):
    """Spec §6.1-6.3: weighted CE (global weighted mean) + (1 - soft foreground Dice)."""
    logp = F.log_softmax(z.float(), dim=1)
    ce_vox = F.nll_loss(logp, y, weight=cw, reduction="none")  # w[y] * -log p_y
    ce = ce_vox.sum() / cw[y].sum()
    P = logp.exp()
    Y = F.one_hot(y, K).permute(0, 4, 1, 2, 3).float()
    dims = (2, 3, 4)
    I = 2 * (P * Y).sum(dim=dims)
    S = P.sum(dim=dims) + Y.sum(dim=dims)
    S = torch.where(S == 0, I, S)
    dice = (I + DICE_EPS) / (S + DICE_EPS)
    dice_fg = dice[:, 1:].mean()
    return ce, dice_fg, ce + (1 - dice_fg)


def loss_case(w, gen, D=3, H=4, W=5, K=4):
    z = (torch.randn(1, K, D, H, W, generator=gen) * 2).requires_grad_(True)
    # mostly background, class 3 absent (its Dice still has S > 0 through sum P)
    u = torch.rand(1, D, H, W, generator=gen)
    y = torch.where(u < 0.6, 0, torch.where(u < 0.8, 1, 2)).long()
    counts = torch.bincount(y.flatten(), minlength=K).double()
    bg, fg = counts[0], counts[1:].sum()
    cw = torch.tensor([float((bg + fg) / bg)] + [float((bg + fg) / fg)] * (K - 1), dtype=torch.float32)
    ce, dice_fg, loss = spec_loss(z, y, cw, K)
    loss.backward()
    w.add("loss_shape", [D, H, W, K], np.int32)
    w.add("loss_z", to_ndhwc(z))
    w.add("loss_lab", y[0], np.int32)
    w.add("loss_cw", cw)
    w.add("loss_out", [float(ce), float(dice_fg), float(loss)], np.float64)
    w.add("loss_dz", to_ndhwc(z.grad))


def groupnorm_case(w, gen, D=2, H=3, W=3, C=8, G=4):
    x = (torch.randn(1, C, D, H, W, generator=gen) * 1.5 + 0.5)
    gamma = 1 + 0.3 * torch.randn(C, generator=gen)
    beta = 0.2 * torch.randn(C, generator=gen)
    dy = torch.randn(1, C, D, H, W, generator=gen)
    w.add("gn_shape", [D, H, W, C, G], np.int32)
    w.add("gn_x", to_ndhwc(x))
    w.add("gn_gamma", gamma)
    w.add("gn_beta", beta)
    w.add("gn_dy", to_ndhwc(dy))
    for tag, relu in (("gn", False), ("gnr", True)):
        gn = torch.nn.GroupNorm(G, C, eps=GN_EPS, affine=True)
        with torch.no_grad():
            gn.weight.copy_(gamma)
            gn.bias.copy_(beta)
        xi = x.clone().requires_grad_(True)
        out = gn(xi)
        if relu:
            out = torch.relu(out)
        out.backward(dy)
        w.add(tag + "_y", to_ndhwc(out))
        w.add(tag + "_dx", to_ndhwc(xi.grad))
        w.add(tag + "_dgamma", gn.weight.grad)
        w.add(tag + "_dbeta", gn.bias.grad)


def maxpool_case(w, gen, nd=2, H=2, W=3, C=3):
    # small integers give many ties (first maximum wins); one NaN window checks NaN propagation
    x = torch.randint(-3, 4, (1, C, 2 * nd, 2 * H, 2 * W), generator=gen).float()
    x[0, 1, 0, 1, 1] = float("nan")
    xi = x.clone().requires_grad_(True)
    y, idx = F.max_pool3d(xi, 2, 2, return_indices=True)
    dy = torch.randn(y.shape, generator=gen)
    y.backward(dy)
    # flat index d*(2H*2W) + h*2W + w -> a*4 + p*2 + q inside the window
    d, rem = idx // (4 * H * W), idx % (4 * H * W)
    h, ww = rem // (2 * W), rem % (2 * W)
    local = (d % 2) * 4 + (h % 2) * 2 + (ww % 2)
    w.add("mp_shape", [nd, H, W, C], np.int32)
    w.add("mp_x", to_ndhwc(x))
    w.add("mp_y", to_ndhwc(y))
    w.add("mp_idx", to_ndhwc(local), np.int32)
    w.add("mp_dy", to_ndhwc(dy))
    w.add("mp_dx", to_ndhwc(xi.grad))


def main():
    torch.set_num_threads(1)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "golden")
    os.makedirs(out, exist_ok=True)

    w = Writer()
    adam_case(w, "clip", [11, 6], grad_scale=0.8, seed=1)     # norm ~3.3: coef < 1
    adam_case(w, "noclip", [11, 6], grad_scale=0.05, seed=2)  # norm ~0.2: coef > 1, clamped to 1
    schedule_case(w)
    w.write(os.path.join(out, "optim_adam.bin"))

    w = Writer()
    for kind in ("sgd", "rmsprop"):
        plain_case(w, kind, kind + "_clip", [11, 6], grad_scale=0.8, seed=3)
        plain_case(w, kind, kind + "_noclip", [11, 6], grad_scale=0.05, seed=4)
    w.write(os.path.join(out, "optim_sgd_rmsprop.bin"))

    gen = torch.Generator().manual_seed(1234)
    w = Writer()
    loss_case(w, gen)
    groupnorm_case(w, gen)
    maxpool_case(w, gen)
    w.write(os.path.join(out, "optim_elem.bin"))


if __name__ == "__main__":
    main()
