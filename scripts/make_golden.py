#!/usr/bin/python3
"""Writes the PyTorch golden fixtures used by the C tests (tests/model/*), in tests/golden/.

Run with the interpreter that has torch 1.13 and numpy:   /usr/bin/python3 scripts/make_golden.py [OUTDIR]
`--check` regenerates into a temporary directory and compares with tests/golden/ (names, dtypes and
shapes exactly, values to 1e-6 relative, which absorbs last-bit differences between CPUs); it exits 1
if a committed fixture is stale (the CTest model_golden_uptodate).
The model, loss and metrics are scripts/torch_unet.py (shared with scripts/torch_reference.py).
Output is deterministic (fixed seeds, one thread, float64 maths). Files written:
  ops.bin        per-op fixtures: conv3d, conv1, convtranspose, groupnorm (+relu), maxpool, loss,
                 hard Dice, on small odd shapes;
  unet_ps4.bin   whole U-Net (ScaFFold topology, ps 4, b 3 -> L 1, base 8, K 4, GN groups 8):
                 input, labels, class weights, parameters, logits, loss terms, every parameter
                 gradient, and one training step (clip_grad_norm_(1.0) + Adam(lr 1e-3)): the
                 updated parameters and the loss terms evaluated at them;
  unet_ps5.bin   the same at ps 5 (L 2), K 6;
  unet_ps4_b2.bin, unet_ps4_b3.bin  the ps 4 network on a batch of 2 and of 3 volumes (x (B,3,G,G,G),
                 lab (B,G,G,G), config.batch = B; no logits): upstream's batch loss - CE with one
                 weight sum pooled over the batch, soft Dice averaged over samples and classes - its
                 gradients and one step.
(tests/golden/optim_* belong to the optimizer tests and are written by another script.)

Every value is computed in float64 from float32 inputs/parameters and stored as float32, so the
fixture is the exact answer for the fp32 model up to one rounding.

File format (little-endian), read by tests/common/golden.{h,c}:
  char[8]  magic    "SFGOLDEN"
  uint32   version  1
  uint32   count    number of named tensors
  count times:
    uint32 name_len, then name_len bytes of name (ASCII, no NUL)
    uint32 dtype    0 = float32, 1 = int32, 2 = float64
    uint32 ndim     (0 for a scalar)
    int64  shape[ndim]
    data            prod(shape) elements in C order
Tensors are in PyTorch layouts (activations N,C,D,H,W; weights as torch stores them); the C side
converts (sf_param_from_torch, sf_golden_ncdhw_to_ndhwc).
"""
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_unet import GN_EPS, UNet, class_weights, f32, hard_dice, soft_loss  # scripts/torch_unet.py

MAGIC = b"SFGOLDEN"
VERSION = 1
DTYPES = {np.dtype(np.float32): 0, np.dtype(np.int32): 1, np.dtype(np.float64): 2}


class GoldenWriter:
    def __init__(self):
        self.tensors = []  # (name, np.ndarray)
        self.names = set()

    def add(self, name, value, dtype=np.float32):
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().numpy()
        arr = np.ascontiguousarray(np.asarray(value, dtype=dtype))
        assert name not in self.names, name
        self.names.add(name)
        self.tensors.append((name, arr))

    def write(self, path):
        out = bytearray()
        out += MAGIC + struct.pack("<II", VERSION, len(self.tensors))
        for name, arr in self.tensors:
            nb = name.encode("ascii")
            out += struct.pack("<I", len(nb)) + nb
            out += struct.pack("<II", DTYPES[arr.dtype], arr.ndim)
            out += struct.pack("<%dq" % arr.ndim, *arr.shape)
            out += arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(out)
        os.replace(tmp, path)
        print("wrote %s: %d tensors, %d bytes" % (path, len(self.tensors), len(out)))


# ---------------------------------------------------------------- (a) per-op fixtures
def make_ops(path):
    g = torch.Generator().manual_seed(1234)

    def rnd(*shape, scale=1.0):
        return f32(torch.randn(*shape, generator=g, dtype=torch.float64) * scale).requires_grad_(True)

    w = GoldenWriter()
    D, H, W = 5, 6, 7

    # conv3d 3x3x3, pad 1, no bias: Cin 3 -> Cout 5
    x, wt = rnd(1, 3, D, H, W), rnd(5, 3, 3, 3, 3, scale=0.3)
    y = F.conv3d(x, wt, padding=1)
    dy = rnd(*y.shape).detach()
    y.backward(dy)
    for n, v in [("x", x), ("w", wt), ("y", y), ("dy", dy), ("dx", x.grad), ("dw", wt.grad)]:
        w.add("conv3d." + n, v)

    # conv 1x1x1 with bias (OutConv): Cin 5 -> Cout 3
    x, wt, b = rnd(1, 5, D, H, W), rnd(3, 5, 1, 1, 1, scale=0.5), rnd(3)
    y = F.conv3d(x, wt, b)
    dy = rnd(*y.shape).detach()
    y.backward(dy)
    for n, v in [("x", x), ("w", wt), ("b", b), ("y", y), ("dy", dy), ("dx", x.grad), ("dw", wt.grad),
                 ("db", b.grad)]:
        w.add("conv1." + n, v)

    # ConvTranspose3d k2 s2 with bias: Cin 5 -> Cout 3, input 3x4x5 -> output 6x8x10
    x, wt, b = rnd(1, 5, 3, 4, 5), rnd(5, 3, 2, 2, 2, scale=0.5), rnd(3)
    y = F.conv_transpose3d(x, wt, b, stride=2)
    dy = rnd(*y.shape).detach()
    y.backward(dy)
    for n, v in [("x", x), ("w", wt), ("b", b), ("y", y), ("dy", dy), ("dx", x.grad), ("dw", wt.grad),
                 ("db", b.grad)]:
        w.add("upconv." + n, v)

    # GroupNorm(3 groups, 6 channels, affine), without and with the fused ReLU
    for tag, relu in [("gn", False), ("gnrelu", True)]:
        x = f32(torch.randn(1, 6, D, H, W, generator=g, dtype=torch.float64) * 2 + 0.5).requires_grad_(True)
        gamma = f32(1 + 0.3 * torch.randn(6, generator=g, dtype=torch.float64)).requires_grad_(True)
        beta = f32(0.2 * torch.randn(6, generator=g, dtype=torch.float64)).requires_grad_(True)
        y = F.group_norm(x, 3, gamma, beta, eps=GN_EPS)
        if relu:
            y = F.relu(y)
        dy = rnd(*y.shape).detach()
        y.backward(dy)
        w.add(tag + ".groups", 3, np.int32)
        for n, v in [("x", x), ("gamma", gamma), ("beta", beta), ("y", y), ("dy", dy), ("dx", x.grad),
                     ("dgamma", gamma.grad), ("dbeta", beta.grad)]:
            w.add(tag + "." + n, v)

    # MaxPool3d 2/2: continuous values, and a case with many ties (integers): first maximum wins
    for tag, ties in [("maxpool", False), ("maxpool_ties", True)]:
        x = torch.randn(1, 3, 6, 8, 10, generator=g, dtype=torch.float64)
        if ties:
            x = torch.round(x * 0.8)
        x = f32(x).requires_grad_(True)
        y, idx = F.max_pool3d(x, 2, 2, return_indices=True)
        dy = rnd(*y.shape).detach()
        y.backward(dy)
        # torch's idx is a flat index into the input plane; ours is the offset a*4+p*2+q in the window
        Hi, Wi = x.shape[3], x.shape[4]
        di, rem = idx // (Hi * Wi), idx % (Hi * Wi)
        hi, wi = rem // Wi, rem % Wi
        win = (di % 2) * 4 + (hi % 2) * 2 + (wi % 2)
        for n, v in [("x", x), ("y", y), ("dy", dy), ("dx", x.grad)]:
            w.add(tag + "." + n, v)
        w.add(tag + ".idx", win, np.int32)

    # loss: weighted CE + (1 - soft fg Dice), K 4, class 3 absent from the labels
    K = 4
    z = rnd(1, K, D, H, W, scale=2.0)
    lab = torch.randint(0, 3, (1, D, H, W), generator=g)
    lab[torch.rand(1, D, H, W, generator=g) < 0.6] = 0
    cw = class_weights(lab, K)
    ce, dice_fg, loss = soft_loss(z, lab, cw)
    loss.backward()
    w.add("loss.z", z)
    w.add("loss.lab", lab, np.int32)
    w.add("loss.cw", cw)
    w.add("loss.values", torch.stack([ce, dice_fg, loss]), np.float64)  # ce, dice_fg, loss
    w.add("loss.dz", z.grad)

    # hard Dice, K 4: class 3 never predicted (logit -50) nor present (scores 1)
    z = f32(torch.randn(1, K, D, H, W, generator=g, dtype=torch.float64))
    z[:, 3] = -50
    lab = torch.randint(0, 3, (1, D, H, W), generator=g)
    per_class, mean_fg = hard_dice(z, lab)
    w.add("dice_hard.z", z)
    w.add("dice_hard.lab", lab, np.int32)
    w.add("dice_hard.per_class", per_class, np.float64)
    w.add("dice_hard.value", mean_fg, np.float64)
    w.write(path)


# ---------------------------------------------------------------- (b, c) whole U-Net + one step
def make_volume(G, K, ncls, g):
    """Sparse coloured boxes like the real data (one colour per class), on faint uniform noise so
    that no two voxels tie exactly (keeps the max-pool argmax stable between fp32 and fp64)."""
    lab = torch.zeros(G, G, G, dtype=torch.int64)
    x = 0.05 * torch.rand(3, G, G, G, generator=g, dtype=torch.float64)
    colours = 0.3 + 0.7 * torch.rand(K, 3, generator=g, dtype=torch.float64)
    for k in range(1, ncls + 1):
        for _ in range(2):
            size = torch.randint(2, max(3, G // 4), (3,), generator=g)
            lo = [int(torch.randint(0, G - int(s) + 1, (1,), generator=g)) for s in size]
            sl = tuple(slice(lo[a], lo[a] + int(size[a])) for a in range(3))
            lab[sl] = k
            x[(slice(None),) + sl] = colours[k].view(3, 1, 1, 1) + 0.05 * torch.rand(
                3, *[int(s) for s in size], generator=g, dtype=torch.float64)
    return f32(x).unsqueeze(0), lab.unsqueeze(0)


def make_unet(path, ps, bottleneck, base, K, groups, ncls, seed, batch=1):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 1)
    L = ps - bottleneck
    G = 2 ** ps
    net = UNet(3, K, L, base, groups)  # default init in float32, then promoted exactly
    net = net.double()
    vols = [make_volume(G, K, ncls, g) for _ in range(batch)]
    x = torch.cat([v[0] for v in vols])
    lab = torch.cat([v[1] for v in vols])
    cw = class_weights(lab, K)

    w = GoldenWriter()
    config = [("problem_scale", ps), ("bottleneck", bottleneck), ("base_channels", base), ("n_classes", K),
              ("groups", groups)] + ([("batch", batch)] if batch > 1 else [])
    for n, v in config:
        w.add("config." + n, v, np.int32)
    w.add("x", x)
    w.add("lab", lab, np.int32)
    w.add("cw", cw)
    params = list(net.named_parameters())
    w.add("nparams", len(params), np.int32)
    for n, p in params:
        w.add("param." + n, p)

    z = net(x)
    ce, dice_fg, loss = soft_loss(z, lab, cw)  # a batch: CE pooled over it, Dice averaged over it
    loss.backward()
    if batch == 1:  # (the batch fixtures skip the logits, which no test of a batch reads)
        w.add("logits", z)
    w.add("loss", torch.stack([ce, dice_fg, loss]), np.float64)
    for n, p in params:
        w.add("grad." + n, p.grad)

    # (c) one training step: clip_grad_norm_(max_norm 1.0), then Adam(lr 1e-3, defaults)
    lr, max_norm = 1e-3, 1.0
    total_norm = nn.utils.clip_grad_norm_(net.parameters(), max_norm)
    opt = torch.optim.Adam(net.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8)
    opt.step()
    w.add("step.lr", lr, np.float64)
    w.add("step.max_norm", max_norm, np.float64)
    w.add("step.total_norm", total_norm, np.float64)
    for n, p in params:
        w.add("step.param." + n, p)
    with torch.no_grad():
        ce2, dice2, loss2 = soft_loss(net(x), lab, cw)
    w.add("step.loss", torch.stack([ce2, dice2, loss2]), np.float64)
    print("ps %d batch %d: L %d, %d params, loss %.6f (ce %.6f dice_fg %.6f), grad norm %.4f, loss after step %.6f"
          % (ps, batch, L, sum(p.numel() for _, p in params), loss.item(), ce.item(), dice_fg.item(),
             float(total_norm), loss2.item()))
    w.write(path)


def read_golden(path):
    with open(path, "rb") as f:
        buf = f.read()
    assert buf[:8] == MAGIC, path
    version, count = struct.unpack_from("<II", buf, 8)
    assert version == VERSION, path
    off, out = 16, {}
    inv = {v: k for k, v in DTYPES.items()}
    for _ in range(count):
        (nlen,) = struct.unpack_from("<I", buf, off)
        name = buf[off + 4:off + 4 + nlen].decode("ascii")
        off += 4 + nlen
        dtype, ndim = struct.unpack_from("<II", buf, off)
        shape = struct.unpack_from("<%dq" % ndim, buf, off + 8)
        off += 8 + 8 * ndim
        dt = inv[dtype].newbyteorder("<")
        n = int(np.prod(shape)) if ndim else 1
        out[name] = np.frombuffer(buf, dt, n, off).reshape(shape)
        off += n * dt.itemsize
    return out


def check(committed, fresh):
    """Compares the fixtures in `fresh` with the committed ones; returns the number of mismatches."""
    bad = 0
    for f in sorted(os.listdir(fresh)):
        old = os.path.join(committed, f)
        a = read_golden(old) if os.path.exists(old) else {}
        b = read_golden(os.path.join(fresh, f))
        problems = []
        if list(a) != list(b):
            problems.append("tensor names/order differ")
        for name in b:
            if name not in a:
                continue
            x, y = a[name], b[name]
            if x.dtype != y.dtype or x.shape != y.shape:
                problems.append("%s: %s%s vs %s%s" % (name, x.dtype, x.shape, y.dtype, y.shape))
                continue
            scale = max(float(np.abs(y.astype(np.float64)).max()) if y.size else 0.0, 1e-30)
            err = float(np.abs(x.astype(np.float64) - y.astype(np.float64)).max()) / scale if y.size else 0.0
            if err > 1e-6:
                problems.append("%s: max relative difference %.2e" % (name, err))
        if problems:
            bad += 1
            print("FAIL tests/golden/%s is stale: %s" % (f, "; ".join(problems[:5])))
            print("---> HINT: re-run `/usr/bin/python3 scripts/make_golden.py` and commit tests/golden/%s" % f)
        else:
            print("ok   tests/golden/%s is up to date (%d tensors)" % (f, len(b)))
    return bad


def main():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            write_all(tmp)
            sys.exit(1 if check(os.path.abspath(root), tmp) else 0)
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else root)
    os.makedirs(out, exist_ok=True)
    write_all(out)


def write_all(out):
    make_ops(os.path.join(out, "ops.bin"))
    make_unet(os.path.join(out, "unet_ps4.bin"), ps=4, bottleneck=3, base=8, K=4, groups=8, ncls=2, seed=42)
    make_unet(os.path.join(out, "unet_ps5.bin"), ps=5, bottleneck=3, base=8, K=6, groups=8, ncls=3, seed=7)
    make_unet(os.path.join(out, "unet_ps4_b2.bin"), ps=4, bottleneck=3, base=8, K=4, groups=8, ncls=2, seed=11,
              batch=2)
    make_unet(os.path.join(out, "unet_ps4_b3.bin"), ps=4, bottleneck=3, base=8, K=4, groups=8, ncls=2, seed=13,
              batch=3)


if __name__ == "__main__":
    main()
