#!/usr/bin/env python3
"""scripts/runtimes_sweep.py (scripts/bench-runtimes' granularity sweep): the one reference and the efficiency of a
run, METG(50 %) interpolated between the bracketing points (and the sides it reports when the sweep does not bracket
the crossing), the per-round spread, and the refusal of bad shapes. Runs on hand-made records, no benchmark."""
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import runtimes_sweep as sw  # noqa: E402

fails = []


def close(got, want, what, tol=1e-9):
    if got is None or abs(got - want) > tol * max(1.0, abs(want)):
        fails.append("%s: got %r, want %r (differs by %s)" % (what, got, want,
                                                           "-" if got is None else "%.3g" % (got - want)))


# crossing between 10 us (60 %) and 1 us (30 %): log-linear, 10^(2/3) us
m, hi, lo, note = sw.metg([(100, 0.9), (10, 0.6), (1, 0.3)])
close(m, 10 ** (2.0 / 3.0), "METG between (10 us, 60 %) and (1 us, 30 %)")
if hi != (10, 0.6) or lo != (1, 0.3):
    fails.append("bracket: got %r / %r, want (10, 0.6) / (1, 0.3)" % (hi, lo))
# not monotone: the smallest duration still at >= 50 % decides
m, hi, lo, _ = sw.metg([(100, 0.4), (10, 0.7), (1, 0.2)])
close(m, math.exp(math.log(1) + (0.5 - 0.2) / (0.7 - 0.2) * math.log(10)), "METG of a non-monotone curve")
# all above 50 %, all below: no METG, and the note says on which side
m, _, _, note = sw.metg([(10, 0.9), (1, 0.8)])
if m is not None or "below the sweep" not in note:
    fails.append("every point >= 50 %%: got METG %r, note '%s' (want None, 'below the sweep')" % (m, note))
# ... with the constant-cost extrapolation from the smallest point: c = 1 us x (1/0.8 - 1) = 0.25 us, crossing at c
close(sw.extrapolate((1, 0.8)), 0.25, "extrapolated crossing of (1 us, 80 %)")
if "0.25 us extrapolated" not in note or "not measured" not in note:
    fails.append("every point >= 50 %%: the note '%s' does not give the extrapolation (0.25 us, not measured)" % note)
if sw.extrapolate((1, 1.0)) is not None:
    fails.append("extrapolation from a point at 100 %% efficiency: got %r, want None" % sw.extrapolate((1, 1.0)))
m, _, _, note = sw.metg([(10, 0.4), (1, 0.1)])
if m is not None or "above the sweep" not in note:
    fails.append("every point < 50 %%: got METG %r, note '%s' (want None, 'above the sweep')" % (m, note))


def rec(step, kern, ntask=100):
    return {"step_s": [step * 0.9, step * 1.1], "kernel_s_per_step": kern, "tasks_per_step": ntask}


# the reference is the sequential executor's kernel sum (median over rounds), the same for every runtime
sh = (4, 3, 8, 8, 2, "1x1")
res = {sh: {"sequential/1": [rec(0.011, 0.010), rec(0.013, 0.012), rec(0.012, 0.011)],
            "openmp/2": [rec(0.011, 0.005), rec(0.022, 0.005), rec(0.0055, 0.005)],
            "starpu/1": [rec(0.022, -1), rec(0.011, -1), rec(0.044, -1)]}}
rows = {r[1]: r for r in sw.points(res, ["sequential/1", "openmp/2", "starpu/1"], 3)}
close(rows["openmp/2"][3], 0.011 / 100 * 1e6, "mean task us (reference / tasks)")
for k, want in enumerate((0.5, 0.25, 1.0)):
    close(rows["openmp/2"][5][k], want, "openmp/2 efficiency, round %d (0.011 s / (2 workers x step))" % k)
for k, want in enumerate((0.5, 1.0, 0.25)):
    close(rows["starpu/1"][5][k], want, "starpu/1 efficiency, round %d (0.011 s / (1 worker x step))" % k)
close(rows["sequential/1"][5][0], 1.0, "sequential efficiency, round 0")
if sw.series_of(["starpu", "sequential"], [1, 2]) != ["starpu/1", "starpu/2", "sequential/1"]:
    fails.append("series of starpu, sequential x 1, 2 workers: got %r" % sw.series_of(["starpu", "sequential"], [1, 2]))

# the table: per-round METGs give the spread
lines = []
rows2 = [(sh, "openmp/2", 100, 10.0, [0, 0], [0.6, 0.8]), (sh, "openmp/2", 100, 1.0, [0, 0], [0.3, 0.2])]
got = sw.metg_table(rows2, ["openmp/2"], 2, lines.append)
per = got["openmp/2"][1]
close(per[0], 10 ** (2.0 / 3.0), "round 0 METG")
close(per[1], 10 ** ((0.5 - 0.2) / 0.6), "round 1 METG")
if not any("1 us at" in ln and "10 us at" in ln for ln in lines):
    fails.append("METG table names no bracket:\n" + "\n".join(lines))

# bad shapes are refused with the token named
for bad, why in (("4:3:8:8:2", "five fields"), ("3:3:8:8:1:1x1", "no U-Net level"), ("4:3:4:8:1:1x1", "groups"),
                 ("4:3:8:8:1:2-2", "RxC"), ("2:1:1:1:4:4x4", "slabs beyond the bottleneck edge"),
                 ("2:1:1:1:1:3x3", "rows beyond the bottleneck edge, not a power of two"),
                 ("2:1:1:1:2:8x4", "rows beyond the input edge"), ("3:2:1:1:4:8x4", "128 blocks"),
                 ("10:3:1:1:1:1x1", "problem scale beyond bench_train_step's")):
    msgs = []

    def die(msg):
        msgs.append(msg)
        raise SystemExit(2)
    try:
        sw.parse_shapes(bad, die)
        fails.append("shape '%s' (%s) accepted" % (bad, why))
    except SystemExit:
        if not msgs or bad not in msgs[0]:
            fails.append("shape '%s' (%s): the message does not name it: %r" % (bad, why, msgs))

# every default shape is a legal run of the graph (the limits above)
for sh in sw.parse_shapes(sw.DEFAULT_SHAPES, lambda msg: fails.append("default shape refused: " + msg)):
    pass

for f in fails:
    print("FAIL: " + f)
print("%d check(s) failed" % len(fails) if fails else "runtimes_metg: all checks passed")
sys.exit(1 if fails else 0)
