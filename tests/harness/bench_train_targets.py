#!/usr/bin/env python3
"""scripts/bench-train's CPU performance target table: each target compares the right pair of step times (fp32 targets
only the peer's fp32 modes, the 'best' targets our faster precision against any peer mode) and says met or missed
against its goal. Runs on hand-made rows, no benchmark."""
import importlib.machinery
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
loader = importlib.machinery.SourceFileLoader("bench_train", os.path.join(ROOT, "scripts", "bench-train"))
spec = importlib.util.spec_from_loader("bench_train", loader)
bt = importlib.util.module_from_spec(spec)
loader.exec_module(bt)

fails = []


def check(cond, msg):
    if not cond:
        fails.append(msg)


def row(ps, base, o2, ob, modes):
    best = min(modes, key=modes.get)
    return {"ps": ps, "base": base, "o2": o2, "ob": ob,
            "peers": [{"label": "T", "modes": modes, "best": best, "step": modes[best]}]}


modes = {"fp32 1t": 0.60, "channels_last 2t": 0.50, "bf16 1t": 0.08, "bf16 2t": 0.10}
rows = [row(5, 8, 0.040, 0.020, modes),                                   # best: bf16 0.020 vs 0.08 -> 4.00x met
        row(5, 16, 0.040, None, modes),                                   # no bf16 run: fp32 0.040 -> 2.00x missed
        row(5, 64, 0.40, 0.26, {"fp32 2t": 0.60, "bf16 1t": 0.50}),       # fp32 1.50x met; bf16 1.92x missed;
        ]                                                                 # bf16_self 1.54x missed
lines = []
bt.target_table(rows, [{"label": "T"}], lambda s="": lines.append(s))
text = "\n".join(lines)
print(text)


def line_of(cfg, what):
    hit = [ln for ln in lines if ln.startswith("| %s | %s |" % (cfg, what))]
    check(len(hit) == 1, "expected one line for %s / %s, got %d" % (cfg, what, len(hit)))
    return hit[0] if hit else ""


ln = line_of("ps 5 b8", "ours (fp32 or bf16) / T best mode")
check("**4.00×**" in ln and ln.endswith("| met |") and "ours bf16" in ln, "ps 5 b8 best: want 4.00x met (bf16): " + ln)
ln = line_of("ps 5 b16", "ours (fp32 or bf16) / T best mode")
check("**2.00×**" in ln and "**missed**" in ln and "ours fp32" in ln, "ps 5 b16 best: want 2.00x missed (fp32): " + ln)
ln = line_of("ps 5 b64", "ours fp32 / T best fp32 mode")
check("**1.50×**" in ln and ln.endswith("| met |") and "fp32 2t" in ln, "ps 5 b64 fp32: want 1.50x vs fp32 2t: " + ln)
ln = line_of("ps 5 b64", "ours bf16 / T best mode")
check("**1.92×**" in ln and "**missed**" in ln, "ps 5 b64 bf16: want 1.92x missed: " + ln)
ln = line_of("ps 5 b64", "ours bf16 / ours fp32")
check("**1.54×**" in ln and "**missed**" in ln, "ps 5 b64 bf16_self: want 1.54x missed: " + ln)
check(not any(ln.startswith("| ps 4 b8") or ln.startswith("| ps 6 b64") for ln in lines),
      "configurations that did not run must not be listed")

lines = []
bt.target_table([row(5, 64, 0.40, None, modes)], [{"label": "T"}], lambda s="": lines.append(s))
for what in ("ours bf16 / T best mode", "ours bf16 / ours fp32"):
    ln = line_of("ps 5 b64", what)
    check("not measured" in ln and "met" not in ln, "ps 5 b64 without a bf16 run must say not measured: " + ln)

if fails:
    print("bench_train_targets: %d check(s) failed:\n  %s" % (len(fails), "\n  ".join(fails)), file=sys.stderr)
    sys.exit(1)
print("bench_train_targets: all checks passed")
