#!/usr/bin/python3
"""PyTorch reference benchmark: full ScaFFold U-Net training steps, timed, to compare side by side with
our C/StarPU implementation (docs/torch_reference.md).

  scripts/torch_reference.py --ps 5 --base 8 [--categories 5] [--bottleneck 3] [--threads 1,2]
      [--variants fp32,channels_last,bf16] [--warmup 2] [--steps 5] [--device cpu|cuda] [--amp] [--json]
      [--torch 2.15.0|2.10|system]
  python3 scripts/torch_reference.py --train-to-target [0.95] --dataset DIR [--config configs/quick.yml]
      [--device cpu|cuda] [--amp|--no-amp] [--memory-format ...] [--cudnn-benchmark on|off]
      [--max-epochs N] [--time-limit S] [--json]

One step = forward (bf16 autocast with --amp, as upstream's torch_amp), loss in fp32 (class-weighted CE
+ 1 - soft foreground Dice, scripts/torch_unet.py), backward, clip_grad_norm_(1.0), Adam(lr 1e-3,
defaults) step, zero_grad(set_to_none=True); batch 1, fixed seed, a synthetic fractal-like sample
(~1 % foreground, class weights computed from it like upstream: w0 ~ 1.01, w_fg ~ 100).
Reported per case: the median step time over --steps steps after --warmup steps, samples/s, effective
GFLOP/s = 3 x the model's forward conv flops (spec §5.4, as sf_unet_build) / median step time, and the
peak RSS of that case.

Every case (one configuration x one thread count x one variant) runs in a fresh subprocess of this script, so the
environment (OMP_WAIT_POLICY=PASSIVE for more than one thread, OMP_NUM_THREADS) is set before torch is
imported and the peak RSS does not carry over. "best" is the fastest case of a configuration.
--ps and --base also take comma lists (every combination runs). --variants runs each thread count in
each listed variant: fp32 (contiguous), channels_last (torch.channels_last_3d for model and input) and
bf16 (torch.autocast('cpu'/'cuda', dtype=torch.bfloat16) around the forward); "best" is then the fastest
case of all. Exit status: 0 when every case ran, 1 when one failed, 2 for a usage error (including
--device cuda without CUDA).

Which torch: --torch VERSION (default $SF_TORCH_VERSION, else 2.15.0, the current PyPI release) runs
under build/torch-venv-VERSION, created on first use by scripts/torch_venv.py (pip install
torch==VERSION from PyPI); the script re-executes itself with that venv's python. --torch system runs
Debian's /usr/bin/python3 and its python3-torch (1.13 on bookworm); --torch current keeps the
interpreter that runs the script (scripts/gpu-check: the python whose torch sees the GPU).

--train-to-target trains instead (scripts/torch_train.py): upstream's training loop on a dataset that
`scaffold benchmark` generated (--dataset: the dataset directory, or the dataset_dir cache root, whose
newest dataset is taken), with the model, optimizer, scheduler, batch and warm-up settings of
configs/benchmark_default.yml < --config (--ps, --base, --categories, --bottleneck, --groups, --seed
override them), until the validation hard Dice reaches the target (default: the config's target_dice)
or the epoch cap (config `epochs`, or --max-epochs) or --time-limit; precision: the config's torch_amp
on cuda (--amp/--no-amp override), fp32 on cpu. Reports the time to solution (one JSON object with
--json). Exit status: 0 when the target was reached, 1 when not (or the run failed), 2 usage/dataset.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WORKER_FLAG = "--_worker"
MAX_PS = 10  # 1024^3 voxels: far beyond any machine this runs on


# ---------------------------------------------------------------- synthetic sample (torch only: no numpy needed)
def ifs_points(g, n, torch):
    """n points of a random 3-D IFS attractor (chaos game), like ScaFFold's fractal instances."""
    nmaps = int(torch.randint(3, 6, (1,), generator=g))
    mats, offs = [], []
    for _ in range(nmaps):  # a similarity-like map: scale 0.45-0.6 x a random orthogonal matrix x a stretch
        q, _ = torch.linalg.qr(torch.rand(3, 3, generator=g, dtype=torch.float64) * 2 - 1)
        stretch = torch.diag(0.8 + 0.4 * torch.rand(3, generator=g, dtype=torch.float64))
        a = (0.45 + 0.15 * float(torch.rand(1, generator=g))) * (q @ stretch)
        mats.append(a.tolist())
        offs.append((torch.rand(3, generator=g, dtype=torch.float64) * 2 - 1).tolist())
    choice = torch.randint(0, nmaps, (n + 20,), generator=g).tolist()
    x, out = [0.0, 0.0, 0.0], []
    for t, k in enumerate(choice):
        m, o = mats[k], offs[k]
        x = [m[r][0] * x[0] + m[r][1] * x[1] + m[r][2] * x[2] + o[r] for r in range(3)]
        if t >= 20:
            out.append(x)
    return torch.tensor(out, dtype=torch.float64)


def voxelize(pts, G, torch):
    """spec §4.3 (format v4): isotropic fit of the longest extent to [0, G), centred, clipped, unique."""
    pts = pts.to(torch.float32)
    mins = pts.min(dim=0).values
    vs = (float((pts.max(dim=0).values - mins).max()) + 1e-6) / G
    s = (pts - mins) / vs
    off = (G - s.max(dim=0).values) / 2
    idx = torch.floor(s + off).to(torch.int64).clamp(0, G - 1)
    return torch.unique(idx, dim=0)


def make_sample(ps, n_categories, seed, kind, torch):
    """(3,G,G,G) float32 volume and (G,G,G) int64 labels: `fractal` overlays 3 fractals of G^3/256
    points each, one colour per category (spec §4.4); `random` is uniform noise with ~1 % random labels."""
    G = 2 ** ps
    g = torch.Generator().manual_seed(seed)
    if kind == "random":
        vol = torch.rand(3, G, G, G, generator=g)
        fgm = torch.rand(G, G, G, generator=g) < 0.01
        return vol, torch.where(fgm, torch.randint(1, n_categories + 1, (G, G, G), generator=g), 0)
    colours = torch.rand(n_categories, 3, generator=g)
    vol = torch.zeros(3, G, G, G)
    lab = torch.zeros(G, G, G, dtype=torch.int64)
    for cat in torch.randint(0, n_categories, (3,), generator=g).tolist():
        idx = voxelize(ifs_points(g, max(G ** 3 // 256, 16), torch), G, torch)
        vol[:, idx[:, 0], idx[:, 1], idx[:, 2]] = colours[cat][:, None]
        lab[idx[:, 0], idx[:, 1], idx[:, 2]] = cat + 1
    return vol, lab


# ---------------------------------------------------------------- one case, in its own process
def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def rss_mib():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def worker(case):
    if case.get("mode") == "train":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from torch_train import train_worker
        return train_worker(case)
    rss_start = rss_mib()
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_unet import UNet, class_weights, soft_loss, unet_forward_flops
    rss_import = rss_mib()

    dev = case["device"]
    if dev == "cuda" and not torch.cuda.is_available():
        print("torch_reference: --device cuda, but torch %s sees no CUDA device (torch.version.cuda = %s)"
              % (torch.__version__, torch.version.cuda), file=sys.stderr)
        return 2
    if dev == "cpu" and case["amp"] and int(torch.__version__.split(".")[0]) < 2:
        print("torch_reference: bf16 autocast on cpu needs torch >= 2 (torch %s's CPU autocast does not run "
              "GroupNorm in fp32 and fails)" % torch.__version__, file=sys.stderr)
        return 2
    if case["threads"]:
        torch.set_num_threads(case["threads"])
    if dev == "cuda":
        torch.backends.cudnn.benchmark = case.get("cudnn_benchmark", True)  # upstream's default (more_determinism 0)
        if case["no_tf32"]:
            if hasattr(getattr(torch.backends.cudnn, "conv", None), "fp32_precision"):  # torch >= 2.9
                torch.backends.cudnn.conv.fp32_precision = "ieee"
                torch.backends.cuda.matmul.fp32_precision = "ieee"
            else:
                torch.backends.cudnn.allow_tf32 = False
                torch.backends.cuda.matmul.allow_tf32 = False
    mf = case["memory_format"]
    if mf == "auto":
        mf = "channels_last" if dev == "cuda" else "contiguous"  # upstream uses channels_last_3d
    fmt = torch.channels_last_3d if mf == "channels_last" else torch.contiguous_format

    ps, bn, base, ncat = case["ps"], case["bottleneck"], case["base"], case["categories"]
    K, L = ncat + 1, ps - bn
    torch.manual_seed(case["seed"])
    net = UNet(3, K, L, base, case["groups"]).to(device=dev, memory_format=fmt)
    vol, lab = make_sample(ps, ncat, case["seed"], case["input"], torch)
    lab = lab.unsqueeze(0)
    cw = class_weights(lab, K).to(torch.float32)
    fg = float((lab > 0).double().mean())
    x = vol.unsqueeze(0).to(device=dev).contiguous(memory_format=fmt)
    lab, cwd = lab.to(dev), cw.to(dev)
    params = list(net.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)  # betas (0.9, 0.999), eps 1e-8: the defaults
    amp = case["amp"]

    def sync():
        if dev == "cuda":
            torch.cuda.synchronize()

    def step():
        with torch.autocast(device_type=dev, dtype=torch.bfloat16, enabled=amp):
            z = net(x)
        ce, dice_fg, loss = soft_loss(z.float(), lab, cwd)  # loss in fp32, outside autocast
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    times, losses = [], []
    for i in range(case["warmup"] + case["steps"]):
        sync()
        t0 = time.perf_counter()
        losses.append(step())
        sync()
        times.append(time.perf_counter() - t0)
        print("  step %d/%d %s: %.4f s" % (i + 1, case["warmup"] + case["steps"],
                                           "warm-up" if i < case["warmup"] else "timed", times[-1]),
              file=sys.stderr, flush=True)
    meas = times[case["warmup"]:]
    med = statistics.median(meas)
    fwd = unet_forward_flops(ps, bn, base, K)
    losses = [float(v) for v in losses]
    if not all(v == v and abs(v) != float("inf") for v in losses):
        print("torch_reference: non-finite loss %s" % losses, file=sys.stderr)
        return 1
    res = {
        "tool": "torch_reference", "kind": "run",
        "config": "ps%d_base%d_cat%d_bn%d" % (ps, base, ncat, bn),
        "problem_scale": ps, "base_channels": base, "n_categories": ncat, "n_classes": K,
        "bottleneck": bn, "levels": L, "groups": case["groups"], "batch": 1,
        "nparams": sum(p.numel() for p in params),
        "fwd_gflop": fwd / 1e9, "step_gflop": 3 * fwd / 1e9,
        "device": dev,
        "device_name": torch.cuda.get_device_name() if dev == "cuda" else cpu_name(),
        "precision": "bf16-autocast" if amp else "fp32",
        "memory_format": mf, "variant": case.get("variant") or variant_name(amp, mf),
        "threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "warmup": case["warmup"], "steps": case["steps"],
        "median_step_s": med, "min_step_s": min(meas), "max_step_s": max(meas),
        "step_s": meas, "first_step_s": times[0],
        "samples_per_s": 1.0 / med,
        "eff_gflops": 3 * fwd / med / 1e9,
        "peak_rss_mib": rss_mib(), "rss_after_import_mib": rss_import, "rss_at_start_mib": rss_start,
        "input": case["input"], "fg_fraction": fg, "class_weights": [float(w) for w in cw],
        "loss_first": losses[0], "loss_last": losses[-1],
        "torch": torch.__version__, "torch_cuda": torch.version.cuda, "seed": case["seed"],
    }
    if dev == "cuda":
        res["peak_gpu_mem_mib"] = torch.cuda.max_memory_allocated() / 2 ** 20
        res["cudnn_benchmark"] = case.get("cudnn_benchmark", True)
        res["tf32"] = not case["no_tf32"]
    print("SFREF " + json.dumps(res), flush=True)
    return 0


# ---------------------------------------------------------------- driver
VARIANTS = ("fp32", "channels_last", "bf16")


def variant_name(amp, memory_format):
    cl = memory_format == "channels_last"
    return ("bf16_cl" if cl else "bf16") if amp else ("channels_last" if cl else "fp32")


def variant_settings(v, a):
    """(amp, memory_format) of a --variants entry; None: the --amp / --memory-format options."""
    if v is None:
        return a.amp, a.memory_format
    return v == "bf16", {"fp32": "contiguous" if a.device == "cpu" else "auto", "bf16": a.memory_format,
                         "channels_last": "channels_last"}[v]


def int_list(s, what):
    try:
        v = [int(t) for t in s.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("%s: expected comma-separated integers, got %r" % (what, s))
    if not v:
        raise argparse.ArgumentTypeError("%s: empty list" % what)
    return v


BENCH_DEFAULTS = {"ps": "5", "base": "8", "categories": 5, "bottleneck": 3, "groups": 8, "seed": 42,
                  "threads": "1,2"}
TRAIN_ONLY = ("dataset", "config", "max_epochs", "time_limit")
DEFAULT_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "benchmark_default.yml")


def parse_args(argv):
    ap = argparse.ArgumentParser(description="PyTorch reference: timed ScaFFold U-Net training steps, or "
                                             "training to a target Dice (--train-to-target).")
    ap.add_argument("--ps", help="problem_scale (edge 2^ps); comma list allowed (default 5; train: the config's)")
    ap.add_argument("--base", help="base channels c_0; comma list allowed (default 8; train: the config's)")
    ap.add_argument("--categories", type=int, help="n_categories; outputs = n + 1 (default 5; train: the config's)")
    ap.add_argument("--bottleneck", type=int, help="unet_bottleneck_dim; levels = ps - b (default 3; train: the config's)")
    ap.add_argument("--groups", type=int, help="GroupNorm groups (default 8; train: the config's group_norm_groups)")
    ap.add_argument("--threads", help="CPU thread counts, comma list (default 1,2; train: one count, default "
                                      "torch's; ignored on cuda)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (default 2)")
    ap.add_argument("--steps", type=int, default=5, help="timed steps; the median is reported (default 5)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--amp", action="store_true", help="bf16 autocast forward, as upstream's torch_amp (cpu: torch >= 2)")
    ap.add_argument("--variants", help="comma list of fp32, channels_last, bf16: each thread count runs in each "
                                       "(default: one case from --amp / --memory-format)")
    ap.add_argument("--torch", default=None, metavar="VERSION|system|current",
                    help="PyPI torch VERSION in build/torch-venv-VERSION (created on demand; default "
                         "$SF_TORCH_VERSION, else 2.15.0), 'system' (Debian's /usr/bin/python3) or 'current' "
                         "(the interpreter running this script, as it is)")
    ap.add_argument("--no-amp", action="store_true", help="train: fp32 even when the config says torch_amp: 1")
    ap.add_argument("--memory-format", choices=["auto", "contiguous", "channels_last"], default="auto",
                    help="auto: channels_last_3d on cuda (upstream), contiguous on cpu")
    ap.add_argument("--no-tf32", action="store_true", help="cuda: disable TF32 convs/matmuls (torch default: on for cuDNN convs)")
    ap.add_argument("--cudnn-benchmark", choices=["on", "off"], default="on",
                    help="cuda: torch.backends.cudnn.benchmark (default on, upstream's with more_determinism 0)")
    ap.add_argument("--input", choices=["fractal", "random"], default="fractal", help="synthetic sample kind")
    ap.add_argument("--seed", type=int, help="default 42; train: the config's seed")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per case before it is killed")
    ap.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    ap.add_argument("--train-to-target", nargs="?", const="config", metavar="DICE",
                    help="train on --dataset until the validation hard Dice reaches DICE (default: the config's "
                         "target_dice) instead of timing steps")
    ap.add_argument("--dataset", help="train: a dataset directory of `scaffold benchmark`, or its dataset_dir root")
    ap.add_argument("--config", help="train: a config file over configs/benchmark_default.yml (e.g. configs/quick.yml)")
    ap.add_argument("--max-epochs", type=int, help="train: epoch cap (default: the config's epochs; -1 = none)")
    ap.add_argument("--time-limit", type=float, help="train: stop (not converged) after this many seconds")
    a = ap.parse_args(argv)
    if a.train_to_target is not None:
        resolve_train(ap, a)
    else:
        given = ["--" + k.replace("_", "-") for k in TRAIN_ONLY if getattr(a, k) is not None]
        if a.no_amp:
            given.append("--no-amp")
        if given:
            ap.error("%s: only with --train-to-target" % ", ".join(given))
        for k, v in BENCH_DEFAULTS.items():
            if getattr(a, k) is None:
                setattr(a, k, v)
    a.threads_given = a.threads is not None  # train: unset = torch's default count (0)
    try:
        a.ps = int_list(str(a.ps), "--ps")
        a.base = int_list(str(a.base), "--base")
        a.threads = int_list(a.threads, "--threads") if a.threads is not None else [0]
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    for ps in a.ps:
        if not (a.bottleneck >= 0 and a.bottleneck < ps <= MAX_PS):
            ap.error("--ps %d with --bottleneck %d: need 0 <= bottleneck < ps <= %d (levels = ps - bottleneck >= 1)"
                     % (ps, a.bottleneck, MAX_PS))
    for b in a.base:
        if b < 1 or a.groups < 1 or b % a.groups:
            ap.error("--base %d: must be a positive multiple of --groups %d (GroupNorm)" % (b, a.groups))
    if a.categories < 1:
        ap.error("--categories %d: need at least 1" % a.categories)
    if any(t < 1 for t in a.threads) and a.threads_given:
        ap.error("--threads %s: thread counts must be >= 1" % ",".join(map(str, a.threads)))
    if a.variants is not None:
        a.variants = [v.strip() for v in a.variants.split(",") if v.strip()]
        bad = [v for v in a.variants if v not in VARIANTS]
        if bad or not a.variants:
            ap.error("--variants %s: expected a comma list of %s" % (",".join(bad) or "(empty)", ", ".join(VARIANTS)))
        if a.train_to_target is not None:
            ap.error("--variants: only for the step benchmark, not with --train-to-target")
        if a.amp:
            ap.error("--amp and --variants: list bf16 in --variants instead")
    else:
        a.variants = [None]
    if a.amp and a.no_amp:
        ap.error("--amp and --no-amp contradict each other")
    if a.steps < 1 or a.warmup < 0:
        ap.error("--steps %d --warmup %d: need steps >= 1 and warmup >= 0" % (a.steps, a.warmup))
    if a.train_to_target is not None and (len(a.ps) != 1 or len(a.base) != 1 or len(a.threads) != 1):
        ap.error("--train-to-target runs one configuration: give --ps, --base and --threads one value each")
    return a


def resolve_train(ap, a):
    """--train-to-target: the config's settings under the explicit options; the dataset directory."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_train import ConfigError, find_dataset, read_config
    if a.dataset is None:
        ap.error("--train-to-target needs --dataset DIR (a dataset `scaffold benchmark` generated)")
    try:
        cfg = read_config(DEFAULT_CONFIG, a.config)
        a.dataset = find_dataset(a.dataset)
    except ConfigError as e:
        ap.error(str(e))
    if a.train_to_target == "config":
        a.target = cfg["target_dice"]
    else:
        try:
            a.target = float(a.train_to_target)
        except ValueError:
            ap.error("--train-to-target %r: expected a Dice in (0, 1]" % a.train_to_target)
    if not 0 < a.target <= 1:
        ap.error("--train-to-target %g: expected a Dice in (0, 1]" % a.target)
    for opt, key in (("ps", "problem_scale"), ("base", "unet_base_channels"), ("categories", "n_categories"),
                     ("bottleneck", "unet_bottleneck_dim"), ("groups", "group_norm_groups"), ("seed", "seed")):
        if getattr(a, opt) is None:
            setattr(a, opt, cfg[key])
    if a.max_epochs is not None and (a.max_epochs == 0 or a.max_epochs < -1):
        ap.error("--max-epochs %d: expected N >= 1 or -1 (no cap)" % a.max_epochs)
    if a.time_limit is not None and a.time_limit <= 0:
        ap.error("--time-limit %g: expected seconds > 0" % a.time_limit)
    if a.device == "cpu" and cfg["torch_amp"] and not a.amp and not a.no_amp:
        print("torch_reference: the config's torch_amp: 1 is bf16 autocast on cuda; on cpu this runs fp32",
              file=sys.stderr)
    a.train_amp = a.device == "cuda" and not a.no_amp and (a.amp or bool(cfg["torch_amp"]))
    a.cfg = cfg


def train_case(a):
    cfg = a.cfg
    return {"mode": "train", "ps": a.ps[0], "base": a.base[0], "categories": a.categories, "bottleneck": a.bottleneck,
            "groups": a.groups, "seed": a.seed, "threads": a.threads[0] if a.device == "cpu" else 0,
            "device": a.device, "amp": a.train_amp, "memory_format": a.memory_format, "no_tf32": a.no_tf32,
            "cudnn_benchmark": a.cudnn_benchmark == "on", "dataset": a.dataset, "target": a.target,
            "epochs": a.max_epochs if a.max_epochs is not None else cfg["epochs"], "time_limit": a.time_limit,
            "batch": cfg["local_batch_size"], "optimizer": cfg["optimizer"], "lr": cfg["starting_learning_rate"],
            "min_lr": cfg["min_learning_rate"], "T_0": cfg["T_0"], "T_mult": cfg["T_mult"],
            "disable_scheduler": bool(cfg["disable_scheduler"]), "warmup_batches": cfg["warmup_batches"],
            "ce_fraction": cfg["ce_weight_sample_fraction"]}


def train_main(a):
    """--train-to-target: one run in a subprocess; the result as JSON (--json) or one summary line."""
    case = train_case(a)
    print("torch_reference: training %s to val Dice >= %g on %s (%s), epoch cap %s%s ..."
          % ("ps%d_base%d_cat%d_bn%d" % (case["ps"], case["base"], case["categories"], case["bottleneck"]),
             case["target"], a.device, "bf16 autocast" if case["amp"] else "fp32",
             case["epochs"] if case["epochs"] != -1 else "none",
             ", time limit %g s" % a.time_limit if a.time_limit else ""), file=sys.stderr, flush=True)
    res, err, rc = run_case(case, a.timeout)
    if res is None:
        print("torch_reference: FAILED: %s" % err, file=sys.stderr)
        return 2 if rc == 2 else 1
    if a.json:
        print(json.dumps(res), flush=True)
    else:
        print("torch_reference: %s after %d epoch(s) (%s): val Dice %.4f (best %.4f), time to solution %.2f s "
              "(sum of epoch times %.2f s; + %.2f s import), %.2f samples/s"
              % ("converged" if res["converged"] else "NOT converged", res["epochs"], res["stop"],
                 res["final_val_dice"], res["best_val_dice"], res["time_to_solution_s"], res["sum_epoch_s"],
                 res["import_s"], res["samples_per_s"]))
    return 0 if res["converged"] else 1


def run_case(case, timeout):
    env = dict(os.environ)
    if case["threads"]:
        env["OMP_NUM_THREADS"] = str(case["threads"])
        if case["threads"] > 1:
            env["OMP_WAIT_POLICY"] = "PASSIVE"  # else the spinning threads make 2 slower than 1
        else:
            env.pop("OMP_WAIT_POLICY", None)
    cmd = [sys.executable, os.path.abspath(__file__), WORKER_FLAG, json.dumps(case)]
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %g s" % timeout, 1
    for line in p.stdout.splitlines():
        if line.startswith("SFREF "):
            return json.loads(line[6:]), None, p.returncode
    return None, "worker exited with status %d and no result" % p.returncode, p.returncode or 1


def print_table(rows, out):
    hdr = ("config", "dev", "variant", "thr", "params", "step GF", "median s", "min s", "max s", "samples/s",
           "eff GF/s", "peak RSS MiB")
    fmt = "%-22s %-4s %-13s %5s %10s %8s %9s %8s %8s %9s %8s %12s"
    print(fmt % hdr, file=out)
    for r in rows:
        thr = ("best:%d" if r["kind"] == "best" else "%d") % r["threads"]
        print(fmt % (r["config"], r["device"], r["variant"], thr, r["nparams"], "%.2f" % r["step_gflop"],
                     "%.4f" % r["median_step_s"], "%.4f" % r["min_step_s"], "%.4f" % r["max_step_s"],
                     "%.2f" % r["samples_per_s"], "%.1f" % r["eff_gflops"], "%.0f" % r["peak_rss_mib"]),
              file=out)


def use_torch(which, argv):
    """Re-executes this script under the interpreter holding the torch asked for (--torch): a PyPI
    version's venv (scripts/torch_venv.py creates it on first use) or Debian's /usr/bin/python3."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_venv
    which = which or torch_venv.default_version()
    if which == "current":  # whatever torch this interpreter has (scripts/gpu-check picks one that sees the GPU)
        return 0
    if which == "system":
        want, here = "/usr/bin/python3", not os.path.exists(os.path.join(sys.prefix, "pyvenv.cfg")) and \
            os.path.realpath(sys.executable) == os.path.realpath("/usr/bin/python3")
    else:
        here = os.path.realpath(sys.prefix) == os.path.realpath(torch_venv.venv_dir(which)) and \
            torch_venv.is_ready(which)
        if not here:
            try:
                want = torch_venv.ensure(which)
            except torch_venv.VenvError as e:
                print("torch_reference: --torch %s: %s" % (which, e), file=sys.stderr)
                return 2 if "expected e.g." in str(e) or "not on the index" in str(e) else 1
    if here:
        return 0
    if os.environ.get("SF_TORCH_REEXEC") == which:
        print("torch_reference: --torch %s: re-executed under %s but still not in it (sys.prefix %s)"
              % (which, want, sys.prefix), file=sys.stderr)
        return 1
    os.environ["SF_TORCH_REEXEC"] = which
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(want, [want, os.path.abspath(__file__)] + argv)


def main(argv):
    if len(argv) == 2 and argv[0] == WORKER_FLAG:
        return worker(json.loads(argv[1]))
    a = parse_args(argv)
    rc = use_torch(a.torch, argv)  # returns only when this interpreter is the one asked for
    if rc:
        return rc
    if a.train_to_target is not None:
        return train_main(a)
    threads = a.threads if a.device == "cpu" else [0]  # 0: torch's default thread count (cuda)
    status, rows = 0, []
    for ps in a.ps:
        for base in a.base:
            runs = []
            for t, v in [(t, v) for v in a.variants for t in threads]:
                amp, mf = variant_settings(v, a)
                case = {"ps": ps, "base": base, "categories": a.categories, "bottleneck": a.bottleneck,
                        "groups": a.groups, "threads": t, "warmup": a.warmup, "steps": a.steps,
                        "device": a.device, "amp": amp, "memory_format": mf, "variant": v,
                        "no_tf32": a.no_tf32, "cudnn_benchmark": a.cudnn_benchmark == "on", "input": a.input,
                        "seed": a.seed}
                print("torch_reference: ps %d base %d categories %d bottleneck %d on %s%s%s, %s ..."
                      % (ps, base, a.categories, a.bottleneck, a.device, " (bf16 autocast)" if amp else "",
                         " (channels_last_3d)" if mf == "channels_last" else "",
                         "%d thread(s)" % t if t else "default threads"), file=sys.stderr, flush=True)
                res, err, rc = run_case(case, a.timeout)
                if res is None:
                    print("torch_reference: FAILED ps %d base %d threads %d: %s" % (ps, base, t, err),
                          file=sys.stderr)
                    status = 2 if rc == 2 else max(status, 1)
                    if rc == 2:
                        return 2
                    continue
                runs.append(res)
                rows.append(res)
                if a.json:
                    print(json.dumps(res), flush=True)
            if len(runs) > 1:
                best = dict(min(runs, key=lambda r: r["median_step_s"]), kind="best")
                rows.append(best)
                if a.json:
                    print(json.dumps(best), flush=True)
    if not a.json and rows:
        print_table(rows, sys.stdout)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
