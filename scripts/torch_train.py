"""Train-to-target mode of scripts/torch_reference.py (docs/torch_reference.md): PyTorch trains the
ScaFFold U-Net on a dataset `scaffold benchmark` generated, with upstream's semantics (spec §6), until the
validation hard Dice reaches the target, and reports the time to solution. The same data as our run, so
the two times to solution can be compared side by side on one machine.

Driver side (no torch needed): read_config (our flat YAML configs: benchmark_default.yml < -c file) and
find_dataset. Worker side (in the subprocess torch_reference.py starts): train_worker(case).

Semantics (spec §6.1-6.6, §6.10): samples are volumes/<split>/<id>_shard000000.npy (3,G,G,G) float32 and
masks/<split>/<id>_shard000000_mask.npy (G,G,G) uint16, ids sorted as strings; CE class weights from
ceil(fraction x n_train) training masks at torch.linspace(0, n_train-1, count).long(); each epoch a
training order torch.randperm(n_train) from a generator seeded with the epoch number, batches of
local_batch_size (the last one ragged); a step = forward (bf16 autocast with amp), loss in fp32 =
weighted CE + 1 - soft foreground Dice, backward, clip_grad_norm_(1.0), optimizer step, zero_grad;
validation = mean over the validation samples of the hard foreground Dice (forward under autocast too);
CosineAnnealingWarmRestarts(T_0, T_mult, eta_min = min_learning_rate) stepped once per epoch after
validation; stop when val Dice >= target (that epoch counted) or at the epoch cap. warmup_batches steps
(and as many validation batches) run first and are rolled back (model, optimizer, scheduler), untimed.
"""
import ast
import glob
import math
import os
import struct
import sys
import time

# ---------------------------------------------------------------- config (driver side)
CONFIG_KEYS = {  # key -> type; everything train-to-target reads from a config
    "problem_scale": int, "unet_bottleneck_dim": int, "unet_base_channels": int, "n_categories": int,
    "group_norm_groups": int, "seed": int, "target_dice": float, "epochs": int, "local_batch_size": int,
    "optimizer": str, "starting_learning_rate": float, "min_learning_rate": float, "T_0": int, "T_mult": int,
    "disable_scheduler": int, "torch_amp": int, "warmup_batches": int, "ce_weight_sample_fraction": float,
}


class ConfigError(Exception):
    pass


def read_flat_yaml(path):
    """Our config files: one `key: value  # comment` per line, scalars or [a, b] lists, no nesting.
    Returns {key: raw value string}; raises ConfigError naming the file and line otherwise."""
    out = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ConfigError("%s: cannot read: %s" % (path, e.strerror))
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if line[0].isspace() or ":" not in s:
            raise ConfigError("%s:%d: expected a top-level 'key: value' line, got %r" % (path, n, line))
        key, val = s.split(":", 1)
        val = val.strip()
        if val.startswith('"') or val.startswith("'"):
            q = val[0]
            end = val.find(q, 1)
            if end < 0:
                raise ConfigError("%s:%d: unterminated string %r" % (path, n, val))
            val = val[1:end]
        else:
            val = val.split("#", 1)[0].strip()
        out[key.strip()] = val
    return out


def convert(key, raw, where):
    typ = CONFIG_KEYS[key]
    try:
        if typ is int:
            return int(raw)
        if typ is float:
            v = float(raw)
            if not math.isfinite(v):
                raise ValueError
            return v
        return raw
    except ValueError:
        raise ConfigError("%s: key %s: expected %s, got %r" % (where, key, "an integer" if typ is int else "a number", raw))


def read_config(defaults_path, path=None):
    """The train-to-target settings: defaults_path (benchmark_default.yml), then path over it."""
    cfg = {}
    for p in [defaults_path] + ([path] if path else []):
        for k, raw in read_flat_yaml(p).items():
            if k in CONFIG_KEYS:
                cfg[k] = convert(k, raw, p)
    missing = [k for k in CONFIG_KEYS if k not in cfg]
    if missing:
        raise ConfigError("%s: keys missing: %s" % (defaults_path, ", ".join(missing)))
    for k in ("local_batch_size", "T_0", "T_mult", "group_norm_groups", "n_categories"):
        if cfg[k] < 1:
            raise ConfigError("key %s: expected >= 1, got %d" % (k, cfg[k]))
    if not 0 < cfg["ce_weight_sample_fraction"] <= 1:
        raise ConfigError("key ce_weight_sample_fraction: expected a fraction in (0, 1], got %g"
                          % cfg["ce_weight_sample_fraction"])
    return cfg


def find_dataset(path):
    """path is a dataset directory (volumes/ and masks/ in it) or a dataset_dir cache root
    (<config_id>/<stamp>/ below it: the newest one with a meta.yaml). Returns the directory."""
    if os.path.isdir(os.path.join(path, "volumes", "training")):
        return path
    cands = [os.path.dirname(m) for m in glob.glob(os.path.join(path, "*", "*", "meta.yaml"))
             + glob.glob(os.path.join(path, "*", "meta.yaml"))]
    cands = [c for c in cands if os.path.isdir(os.path.join(c, "volumes", "training"))]
    if not cands:
        raise ConfigError("--dataset %s: no dataset there (expected volumes/training/ in it, or "
                          "<config_id>/<stamp>/meta.yaml below it)" % path)
    return max(cands, key=lambda c: os.path.getmtime(os.path.join(c, "meta.yaml")))


# ---------------------------------------------------------------- data (worker side)
NPY_DTYPES = {"<f4": ("float32", 4), "<u2": ("int16", 2), "<i2": ("int16", 2), "|u1": ("uint8", 1),
              "<i4": ("int32", 4), "<i8": ("int64", 8)}


def read_npy(path, torch):
    """A C-order .npy file (v1-v3 header) as a torch tensor, without numpy; uint16 is read as int16
    and widened (torch 1.13 has no uint16)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError("%s: not a .npy file" % path)
    major = data[6]
    if major == 1:
        hlen, off = struct.unpack("<H", data[8:10])[0], 10
    else:
        hlen, off = struct.unpack("<I", data[8:12])[0], 12
    hdr = ast.literal_eval(data[off:off + hlen].decode("latin1"))
    descr, shape = hdr["descr"], tuple(hdr["shape"])
    if hdr.get("fortran_order") or descr not in NPY_DTYPES:
        raise ValueError("%s: unsupported .npy layout (descr %s, fortran_order %s)" % (path, descr, hdr.get("fortran_order")))
    name, size = NPY_DTYPES[descr]
    count = 1
    for d in shape:
        count *= d
    body = bytearray(data[off + hlen:off + hlen + count * size])
    if len(body) != count * size:
        raise ValueError("%s: truncated (%d of %d data bytes)" % (path, len(body), count * size))
    t = torch.frombuffer(body, dtype=getattr(torch, name)).reshape(shape)
    if descr == "<u2":
        t = t.to(torch.int32) & 0xFFFF
    return t


def load_split(ddir, split, torch):
    """(ids, volumes (N,3,G,G,G) float32, masks (N,G,G,G) int64) of one split, ids sorted as strings."""
    suffix = "_shard000000.npy"
    vdir = os.path.join(ddir, "volumes", split)
    ids = sorted(f[:-len(suffix)] for f in os.listdir(vdir) if f.endswith(suffix) and not f.startswith("."))
    if not ids:
        raise ValueError("%s: no *%s volumes" % (vdir, suffix))
    vols, masks = [], []
    for i in ids:
        vols.append(read_npy(os.path.join(vdir, i + suffix), torch))
        masks.append(read_npy(os.path.join(ddir, "masks", split, i + "_shard000000_mask.npy"), torch).to(torch.int64))
    return ids, torch.stack(vols), torch.stack(masks)


def sampled_class_weights(masks, K, fraction, torch):
    """spec §6.2: counts over ceil(fraction n) masks at linspace(0, n-1, count).long(); w0 = T/bg,
    w_fg = T/fg (all 1 when bg or fg is 0), float32."""
    n = masks.shape[0]
    count = min(max(int(math.ceil(n * fraction)), 1), n)
    idx = torch.arange(n) if count == n else torch.linspace(0, n - 1, count).long()
    counts = torch.bincount(masks[idx].flatten(), minlength=K).to(torch.float64)
    bg, fg = float(counts[0]), float(counts[1:].sum())
    w = torch.ones(K, dtype=torch.float64)
    if bg > 0 and fg > 0:
        w[:] = (bg + fg) / fg
        w[0] = (bg + fg) / bg
    return w.to(torch.float32), count


# ---------------------------------------------------------------- training (worker side)
def make_optimizer(name, params, lr, torch):
    if name == "ADAM":
        return torch.optim.Adam(params, lr=lr)
    if name == "SGD":
        return torch.optim.SGD(params, lr=lr)
    return torch.optim.RMSprop(params, lr=lr, foreach=True)  # spec §6.4: anything else


class Trainer:
    def __init__(self, case, torch, net, opt, sched, cw, fmt, amp):
        self.case, self.torch, self.net, self.opt, self.sched = case, torch, net, opt, sched
        self.cw, self.fmt, self.amp, self.dev = cw, fmt, amp, case["device"]
        from torch_unet import hard_dice, soft_loss
        self.hard_dice, self.soft_loss = hard_dice, soft_loss
        self.params = list(net.parameters())

    def batch(self, vols, masks, idx):
        """The samples idx as a (B,3,G,G,G) input in the run's memory format and (B,G,G,G) labels, on
        the device (the data stay where to_device put them)."""
        t = self.torch
        sel = t.tensor(idx, dtype=t.int64, device=vols.device)
        x, y = vols.index_select(0, sel), masks.index_select(0, sel)
        if x.device.type != self.dev:
            x, y = x.to(self.dev, non_blocking=True), y.to(self.dev, non_blocking=True)
        return x.contiguous(memory_format=self.fmt), y

    def forward(self, x):
        with self.torch.autocast(device_type=self.dev, dtype=self.torch.bfloat16, enabled=self.amp):
            return self.net(x)

    def step(self, x, y):
        z = self.forward(x)
        ce, dice_fg, loss = self.soft_loss(z.float(), y, self.cw)
        loss.backward()
        self.torch.nn.utils.clip_grad_norm_(self.params, max_norm=1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return float(loss), float(dice_fg)

    def validate(self, vols, masks, B, limit=None):
        """(mean hard foreground Dice, mean val loss) over the validation samples (the first `limit`
        batches only when given)."""
        t = self.torch
        n = vols.shape[0]
        dsum, lsum, cnt = 0.0, 0.0, 0
        with t.no_grad():
            for bi, s in enumerate(range(0, n, B)):
                if limit is not None and bi >= limit:
                    break
                idx = list(range(s, min(s + B, n)))
                x, y = self.batch(vols, masks, idx)
                z = self.forward(x).float()
                _, _, loss = self.soft_loss(z, y, self.cw)
                for b in range(len(idx)):
                    dsum += float(self.hard_dice(z[b:b + 1], y[b:b + 1])[1])
                lsum += float(loss) * len(idx)
                cnt += len(idx)
        return dsum / max(cnt, 1), lsum / max(cnt, 1)

    def sync(self):
        if self.dev == "cuda":
            self.torch.cuda.synchronize()


def to_device(tensors, dev, torch):
    """cuda: the whole dataset on the GPU when it takes under a quarter of the free memory (upstream's
    DataLoader workers overlap loading with the steps; this is the closest to free loading), else pinned
    host memory copied per batch. cpu: unchanged. Returns (tensors, where)."""
    if dev != "cuda":
        return tensors, "host"
    need = sum(t.numel() * t.element_size() for t in tensors)
    free = torch.cuda.mem_get_info()[0] if hasattr(torch.cuda, "mem_get_info") else 0
    if need < free / 4:
        return [t.to("cuda") for t in tensors], "gpu (%.0f MiB)" % (need / 2 ** 20)
    return [t.pin_memory() for t in tensors], "pinned host memory (%.0f MiB), copied per batch" % (need / 2 ** 20)


def set_tf32(enabled, torch):
    """TF32 for cuDNN convolutions and cuBLAS matmuls (torch's default: convolutions on)."""
    if hasattr(getattr(torch.backends.cudnn, "conv", None), "fp32_precision"):  # torch >= 2.9
        torch.backends.cudnn.conv.fp32_precision = "tf32" if enabled else "ieee"
        torch.backends.cuda.matmul.fp32_precision = "tf32" if enabled else "ieee"
    else:
        torch.backends.cudnn.allow_tf32 = enabled
        torch.backends.cuda.matmul.allow_tf32 = enabled


def epoch_order(n, epoch, torch):
    g = torch.Generator().manual_seed(epoch)  # DistributedSampler: seed 0 + epoch (spec §6.6)
    return torch.randperm(n, generator=g).tolist()


def warmup(tr, case, vols, masks, vvols, vmasks):
    """spec §6.10: min(warmup_batches, steps/epoch) training steps in epoch-0 order, one more for a
    ragged last batch size, min(warmup_batches, val batches) validation batches; then model, optimizer
    and scheduler are restored. Returns (seconds, steps)."""
    import copy
    nb = case["warmup_batches"]
    if nb <= 0:
        return 0.0, 0
    B, n = case["batch"], vols.shape[0]
    t0 = time.perf_counter()
    saved = (copy.deepcopy(tr.net.state_dict()), copy.deepcopy(tr.opt.state_dict()),
             copy.deepcopy(tr.sched.state_dict()) if tr.sched else None)
    order = epoch_order(n, 0, tr.torch)
    batches = [order[s:s + B] for s in range(0, n, B)]
    todo = batches[:min(nb, len(batches))]
    if n % B and len(todo) < len(batches):
        todo.append(batches[-1])
    for idx in todo:
        tr.step(*tr.batch(vols, masks, idx))
    tr.validate(vvols, vmasks, B, limit=nb)
    tr.net.load_state_dict(saved[0])
    tr.opt.load_state_dict(saved[1])
    if tr.sched:
        tr.sched.load_state_dict(saved[2])
    tr.sync()
    return time.perf_counter() - t0, len(todo)


class RunError(Exception):
    """A run that cannot go on: the message, and the exit status (2 dataset/usage, 1 diverged)."""

    def __init__(self, msg, status):
        super().__init__(msg)
        self.status = status


def setup_torch(case, torch):
    """Threads, cudnn.benchmark, TF32; returns (memory-format name, torch memory format)."""
    dev = case["device"]
    if dev == "cuda" and not torch.cuda.is_available():
        raise RunError("--device cuda, but torch %s sees no CUDA device" % torch.__version__, 2)
    if case["threads"]:
        torch.set_num_threads(case["threads"])
    if dev == "cuda":
        torch.backends.cudnn.benchmark = case["cudnn_benchmark"]
        if case["no_tf32"]:
            set_tf32(False, torch)
    mf = case["memory_format"]
    if mf == "auto":
        mf = "channels_last" if dev == "cuda" else "contiguous"
    return mf, torch.channels_last_3d if mf == "channels_last" else torch.contiguous_format


def load_data(case, torch):
    """Both splits, checked against the configuration, the class weights, and the data moved to the
    device: a dict of vols, masks, vvols, vmasks, cw, cw_samples, where."""
    ddir, ncat, G, B = case["dataset"], case["categories"], 2 ** case["ps"], case["batch"]
    try:
        _, vols, masks = load_split(ddir, "training", torch)
        _, vvols, vmasks = load_split(ddir, "validation", torch)
    except (OSError, ValueError) as e:
        raise RunError("dataset %s: %s" % (ddir, e), 2)
    if tuple(vols.shape[1:]) != (3, G, G, G) or tuple(vvols.shape[1:]) != (3, G, G, G):
        raise RunError("dataset %s holds volumes of shape %s, but problem_scale %d expects (3, %d, %d, %d)"
                       % (ddir, tuple(vols.shape[1:]), case["ps"], G, G, G), 2)
    mmax = int(max(masks.max(), vmasks.max()))
    if mmax > ncat:
        raise RunError("dataset %s has mask value %d, but n_categories is %d" % (ddir, mmax, ncat), 2)
    if B > vols.shape[0] or B > vvols.shape[0]:
        raise RunError("local_batch_size %d exceeds the training (%d) or validation (%d) sample count"
                       % (B, vols.shape[0], vvols.shape[0]), 2)
    cw, cw_samples = sampled_class_weights(masks, ncat + 1, case["ce_fraction"], torch)
    (vols, masks, vvols, vmasks), where = to_device([vols, masks, vvols, vmasks], case["device"], torch)
    return {"vols": vols, "masks": masks, "vvols": vvols, "vmasks": vmasks, "cw": cw, "cw_samples": cw_samples,
            "where": where}


def make_trainer(case, torch, cw, fmt):
    from torch_unet import UNet
    ncat = case["categories"]
    torch.manual_seed(case["seed"])
    net = UNet(3, ncat + 1, case["ps"] - case["bottleneck"], case["base"], case["groups"]).to(
        device=case["device"], memory_format=fmt)
    opt = make_optimizer(case["optimizer"], list(net.parameters()), case["lr"], torch)
    sched = None
    if not case["disable_scheduler"]:
        sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=case["T_0"], T_mult=case["T_mult"],
                                                                     eta_min=case["min_lr"])
    return Trainer(case, torch, net, opt, sched, cw.to(case["device"]), fmt, case["amp"])


def train_epoch(tr, d, epoch, deadline):
    """One epoch's training steps. Returns (loss sum, soft Dice sum, samples, steps, cut by the deadline)."""
    vols, masks, B = d["vols"], d["masks"], tr.case["batch"]
    n = vols.shape[0]
    order = epoch_order(n, epoch, tr.torch)
    lsum, dsum, seen, steps = 0.0, 0.0, 0, 0
    for s in range(0, n, B):
        idx = order[s:s + B]
        loss, dice = tr.step(*tr.batch(vols, masks, idx))
        if not math.isfinite(loss):
            raise RunError("training diverged: loss %r in epoch %d" % (loss, epoch), 1)
        lsum, dsum, seen, steps = lsum + loss * len(idx), dsum + dice * len(idx), seen + len(idx), steps + 1
        if deadline and time.perf_counter() > deadline:
            return lsum, dsum, seen, steps, True
    return lsum, dsum, seen, steps, False


def run_epochs(tr, d, case, deadline):
    """spec §6.6's loop until val Dice >= target, the epoch cap or the deadline. Returns a dict."""
    r = {"epochs": 0, "steps": 0, "val_dice": 0.0, "best": 0.0, "sum_epoch": 0.0, "history": [], "stop": "converged"}
    n_train, opt = d["vols"].shape[0], tr.opt
    while r["val_dice"] < case["target"]:
        if case["epochs"] != -1 and r["epochs"] + 1 > case["epochs"]:
            r["stop"] = "epoch cap"
            break
        if deadline and time.perf_counter() > deadline:
            r["stop"] = "time limit"
            break
        epoch = r["epochs"] + 1
        t0 = time.perf_counter()
        lsum, dsum, seen, steps, cut = train_epoch(tr, d, epoch, deadline)
        r["steps"] += steps
        if cut:
            r["stop"] = "time limit (inside epoch %d, after %d of %d samples)" % (epoch, seen, n_train)
            break
        val_dice, val_loss = tr.validate(d["vvols"], d["vmasks"], case["batch"])
        if not math.isfinite(val_loss) or val_dice != val_dice:
            raise RunError("training diverged: val loss %r, val Dice %r in epoch %d" % (val_loss, val_dice, epoch), 1)
        if tr.sched:
            tr.sched.step()
        tr.sync()
        dt = time.perf_counter() - t0
        lr = opt.param_groups[0]["lr"]
        r.update(epochs=epoch, val_dice=val_dice, best=max(r["best"], val_dice), sum_epoch=r["sum_epoch"] + dt)
        r["history"].append({"epoch": epoch, "train_loss": lsum / seen, "train_dice": dsum / seen,
                             "val_loss": val_loss, "val_dice": val_dice, "lr": lr, "epoch_s": dt})
        print("epoch %d | train_loss %.6f | train_dice %.6f | val_loss %.6f | val_dice %.6f | lr %.6g | %.2f s | "
              "%.2f samples/s" % (epoch, lsum / seen, dsum / seen, val_loss, val_dice, lr, dt, seen / dt),
              file=sys.stderr, flush=True)
    return r


def result(case, torch, tr, d, r, times, mf):
    from torch_unet import unet_forward_flops
    ps, bn, base, ncat, dev = case["ps"], case["bottleneck"], case["base"], case["categories"], case["device"]
    res = {
        "tool": "torch_reference", "kind": "train", "converged": r["val_dice"] >= case["target"], "stop": r["stop"],
        "target_dice": case["target"], "epochs": r["epochs"], "optimizer_steps": r["steps"],
        "final_val_dice": r["val_dice"], "best_val_dice": r["best"], "sum_epoch_s": r["sum_epoch"],
        "samples_per_s": r["steps"] * case["batch"] / r["sum_epoch"] if r["sum_epoch"] > 0 else 0.0,
        "dataset": case["dataset"], "n_train": d["vols"].shape[0], "n_val": d["vvols"].shape[0],
        "class_weights": [float(w) for w in d["cw"]],
        "config": "ps%d_base%d_cat%d_bn%d" % (ps, base, ncat, bn), "problem_scale": ps, "base_channels": base,
        "n_categories": ncat, "bottleneck": bn, "groups": case["groups"], "batch": case["batch"],
        "nparams": sum(p.numel() for p in tr.params), "fwd_gflop": unet_forward_flops(ps, bn, base, ncat + 1) / 1e9,
        "optimizer": case["optimizer"], "lr": case["lr"], "min_lr": case["min_lr"], "T_0": case["T_0"],
        "T_mult": case["T_mult"], "scheduler": not case["disable_scheduler"], "seed": case["seed"],
        "device": dev, "device_name": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
        "precision": "bf16-autocast" if case["amp"] else "fp32", "memory_format": mf,
        "cudnn_benchmark": case["cudnn_benchmark"] if dev == "cuda" else None,
        "tf32": (not case["no_tf32"]) if dev == "cuda" else None,
        "threads": torch.get_num_threads(), "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "history": r["history"],
    }
    res.update(times)
    if dev == "cuda":
        res["peak_gpu_mem_mib"] = torch.cuda.max_memory_allocated() / 2 ** 20
    return res


def train_worker(case):
    """One train-to-target run (case from torch_reference.py); prints 'SFREF <json>'. Exit 0 when it ran
    (converged or not), 1 when training diverged, 2 for a dataset or device problem."""
    import json
    t_proc = time.perf_counter()
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    t_import = time.perf_counter() - t_proc
    deadline = t_proc + case["time_limit"] if case["time_limit"] else None
    try:
        mf, fmt = setup_torch(case, torch)
        t_start = time.perf_counter()
        d = load_data(case, torch)
        load_s = time.perf_counter() - t_start
        tr = make_trainer(case, torch, d["cw"], fmt)
        warm_s, warm_steps = warmup(tr, case, d["vols"], d["masks"], d["vvols"], d["vmasks"])
        print("torch_reference: dataset %s: %d training, %d validation volumes of %d^3; class weights %.5g / %.5g "
              "(%d masks), data in %s; %s, %s, cudnn.benchmark %s; load %.2f s, warm-up %.2f s (%d steps)"
              % (case["dataset"], d["vols"].shape[0], d["vvols"].shape[0], 2 ** case["ps"], float(d["cw"][0]),
                 float(d["cw"][1]), d["cw_samples"], d["where"], "bf16 autocast" if case["amp"] else "fp32", mf,
                 case["cudnn_benchmark"] if case["device"] == "cuda" else "-", load_s, warm_s, warm_steps),
              file=sys.stderr, flush=True)
        r = run_epochs(tr, d, case, deadline)
    except RunError as e:
        print("torch_reference: %s" % e, file=sys.stderr)
        return e.status
    now = time.perf_counter()
    times = {"time_to_solution_s": now - t_start, "time_to_solution_incl_import_s": now - t_proc,
             "import_s": t_import, "load_s": load_s, "warmup_s": warm_s, "warmup_steps": warm_steps}
    print("SFREF " + json.dumps(result(case, torch, tr, d, r, times, mf)), flush=True)
    return 0
