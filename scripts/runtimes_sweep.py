"""Granularity sweep and METG(50 %) for scripts/bench-runtimes (docs/runtimes.md, "METG").

The same U-Net training step is shrunk shape by shape (problem scale, bottleneck, channels, GroupNorm groups, depth
slabs and in-process row x column blocks, SF_HW_BLOCKS) until the mean task lasts well under a microsecond, and run on
every runtime with 1 and with 2 workers (sequential: 1), a series per runtime and worker count ("openmp/2"), the series
alternated inside each round (reversed every other round). With 1 worker a runtime's cost per task shows alone; with
all cores (Task Bench's setting) so do its parallel overheads and, on a shared machine, the other processes.

Reference (one per shape, the same for every runtime): the summed task-body time of one step, measured by the sequential
executor around every task's run function (median over the rounds): the shape's work at the kernels' own rate, with no
runtime and no idle worker. Efficiency of a run = reference / (workers x step time), the per-worker rate over the
kernels' rate. Mean task duration (the x axis) = reference / tasks per step. METG(50 %) (Task Bench): the smallest mean
task duration at which a runtime still reaches 50 % efficiency, interpolated in log(duration) between the two points
that bracket the crossing; Task Bench's own granularity (workers x wall / tasks) is twice that at the crossing.
"""
import math
import os
import statistics
import subprocess

# the task graph's block limits (include/scaffold/tensor.h: SF_MAX_SLABS blocks in all, SF_MAX_HW per row/column axis)
MAX_BLOCKS, MAX_HW = 64, 16
# PS:BOTTLENECK:BASE:GROUPS:SLABS:ROWSxCOLUMNS, from ~1 ms tasks down to the graph's finest decomposition
# (2:1:1:1:2:4x4: 1 channel, 32 blocks of 2 voxels; docs/runtimes.md, "The sequential executor's floor")
DEFAULT_SHAPES = ("6:3:8:8:1:1x1 5:3:8:8:1:1x1 5:3:8:8:4:1x1 4:3:8:8:1:1x1 4:3:8:8:4:1x1 4:3:8:8:8:1x1 4:3:4:4:2:4x4 "
                  "4:3:2:2:2:8x4 4:3:1:1:4:4x4 3:2:1:1:2:4x4 3:2:1:1:4:8x2 2:1:1:1:2:4x4 2:0:1:1:1:4x4 2:0:1:1:1:2x2")


def parse_shapes(s, die):
    out = []
    for tok in s.replace(",", " ").split():
        f = tok.split(":")
        try:
            ps, bn, base, groups, slabs = (int(x) for x in f[:5])
            rows, cols = (int(x) for x in f[5].split("x"))
        except (ValueError, IndexError):
            die("shape '%s' is not PS:BOTTLENECK:BASE:GROUPS:SLABS:ROWSxCOLUMNS (e.g. 4:3:8:8:2:4x4)" % tok)
        if len(f) != 6 or ps - bn < 1 or base % groups or min(base, groups, slabs, rows, cols) < 1:
            die("shape '%s': needs PS - BOTTLENECK >= 1, GROUPS dividing BASE, SLABS, ROWS, COLUMNS >= 1" % tok)
        why = shape_limits(ps, bn, slabs, rows, cols)
        if why:
            die("shape '%s': %s" % (tok, why))
        out.append((ps, bn, base, groups, slabs, "%dx%d" % (rows, cols)))
    if not out:
        die("no shape given")
    return out


def shape_limits(ps, bn, slabs, rows, cols):
    """why the training graph (src/train/graph_plan.c) or bench_train_step refuses a shape's block grid, or None:
    PS 2..9, BOTTLENECK <= 8; depth slabs up to the bottleneck edge 2^BOTTLENECK; rows and columns (SF_HW_BLOCKS) up
    to the bottleneck edge, or a power of two up to the input edge 2^PS and MAX_HW; all blocks at most MAX_BLOCKS"""
    coarse, edge = 1 << min(bn, 30), 1 << min(ps, 30)
    if not 2 <= ps <= 9 or bn > 8:
        return "bench_train_step takes PS 2..9 and BOTTLENECK 0..8"
    if slabs > min(coarse, MAX_BLOCKS):
        return "%d depth slabs; at most %d (the bottleneck edge is %d planes)" % (slabs, min(coarse, MAX_BLOCKS), coarse)
    for n, axis in ((rows, "rows"), (cols, "columns")):
        if n > min(edge, MAX_HW) or (n > coarse and n & (n - 1)):
            return "%d %s blocks; expected 1..%d or a power of two up to %d (bottleneck edge %d, input edge %d)" % (
                n, axis, coarse, min(edge, MAX_HW), coarse, edge)
    if slabs * rows * cols > MAX_BLOCKS:
        return "%d x %d x %d = %d blocks; the task graph takes at most %d" % (slabs, rows, cols, slabs * rows * cols,
                                                                            MAX_BLOCKS)
    return None


def shape_name(sh):
    ps, bn, base, groups, slabs, hw = sh
    return "ps%d/bn%d/b%d/g%d s%d %s" % (ps, bn, base, groups, slabs, hw)


def shape_args(sh):
    """bench_train_step arguments and environment of a shape"""
    ps, bn, base, groups, slabs, hw = sh
    warm, steps = (1, 2) if ps >= 6 else (1, 3) if ps == 5 else (2, 10)
    args = ["--ps", str(ps), "--bottleneck", str(bn), "--base", str(base), "--groups", str(groups), "--slabs",
            str(slabs), "--warmup", str(warm), "--steps", str(steps)]
    return args, {"SF_HW_BLOCKS": hw}


def series_of(rts, nworkers):
    """"runtime/workers" for every runtime and worker count (the sequential executor has 1)"""
    return ["%s/%d" % (rt, n) for rt in rts for n in nworkers if not (rt == "sequential" and n != 1)] + \
        (["sequential/1"] if "sequential" in rts and 1 not in nworkers else [])


def workers(series):
    return int(series.split("/")[1])


def measure(runner, shapes, series, rounds):
    """{shape: {series: [record per round]}}, the series alternated within each round (ABBA over rounds)"""
    res = {sh: {se: [] for se in series} for sh in shapes}
    for r in range(rounds):
        order = series if r % 2 == 0 else list(reversed(series))
        for sh in shapes:
            args, env = shape_args(sh)
            for se in order:
                rt, n = se.split("/")
                res[sh][se].append(runner(["--runtime", rt, "--ncpu", n] + args, env))
    return res


def reference_s(recs):
    """the shape's reference: the sequential executor's summed kernel seconds per step (median over rounds); the
    openmp runs' when the sequential executor is not swept"""
    for se in ("sequential/1", "openmp/1", "openmp/2"):
        ks = [d["kernel_s_per_step"] for d in recs.get(se, []) if d["kernel_s_per_step"] > 0]
        if ks:
            return statistics.median(ks)
    return float("nan")


def points(res, series, rounds):
    """rows (shape, rt, tasks, mean task us, [step s per round], [efficiency per round]); a run's step time is the mean
    of its timed steps, as its kernel sum is"""
    rows = []
    for sh, recs in res.items():
        ref = reference_s(recs)
        for rt in series:
            ds = recs[rt]
            steps = [statistics.mean(d["step_s"]) for d in ds]
            effs = [ref / (workers(rt) * s) for s in steps]
            ntask = ds[0]["tasks_per_step"]
            rows.append((sh, rt, ntask, ref / ntask * 1e6, steps, effs))
    return rows


def metg(curve, level=0.5):
    """curve: [(mean task us, efficiency)]. Returns (metg_us, hi_point, lo_point, note): the crossing interpolated in
    log(duration) between the smallest-duration point at >= level (hi) and the next smaller point (lo). metg_us is
    None when the sweep does not bracket the crossing (note says on which side it lies)."""
    pts = sorted((x, e) for x, e in curve if x == x and e == e)
    if not pts:
        return None, None, None, "no point"
    ok = [i for i, (_, e) in enumerate(pts) if e >= level]
    if not ok:
        return None, None, pts[-1], "above the sweep: even %.3g us tasks stay below %d %%" % (pts[-1][0], level * 100)
    i = ok[0]
    if i == 0:
        est = extrapolate(pts[0], level)
        return None, pts[0], None, "below the sweep: %.3g us tasks still reach %.0f %%%s" % (
            pts[0][0], pts[0][1] * 100, "; %.2g us extrapolated (constant cost per task, not measured)" % est
            if est else "")
    lo, hi = pts[i - 1], pts[i]
    t = (level - lo[1]) / (hi[1] - lo[1])
    return math.exp(math.log(lo[0]) + t * (math.log(hi[0]) - math.log(lo[0]))), hi, lo, ""


def extrapolate(pt, level=0.5):
    """where a curve that stays above level at its smallest point (d us, efficiency e) would cross it if every task
    cost a constant c more than its body (efficiency = d / (d + c), so c = d (1/e - 1)): d' = c level / (1 - level);
    None when e >= 1 (no cost to extrapolate from)"""
    d, e = pt
    if not 0 < e < 1:
        return None
    return d * (1 / e - 1) * level / (1 - level)


def metg_table(rows, series, rounds, out):
    out("| runtime/workers | METG(50 %), us (median curve) | per round: min - max, us | bracket: above 50 % | below 50 % |")
    out("|---|---:|---:|---|---|")
    result = {}
    for rt in series:
        mine = [r for r in rows if r[1] == rt]
        m, hi, lo, note = metg([(r[3], statistics.median(r[5])) for r in mine])
        per = [metg([(r[3], r[5][k]) for r in mine])[0] for k in range(rounds)]
        got = [x for x in per if x is not None]
        spread = "%.3g - %.3g (%d of %d rounds bracketed)" % (min(got), max(got), len(got), rounds) if got else "-"
        fmt = lambda p: "%.3g us at %.0f %%" % (p[0], p[1] * 100) if p else "-"
        out("| %s | %s | %s | %s | %s |" % (rt, "%.3g" % m if m is not None else note, spread, fmt(hi), fmt(lo)))
        result[rt] = (m, per)
    return result


def sweep_table(rows, out):
    out("| shape | runtime/workers | workers | tasks/step | mean task us | step ms (median of runs) | efficiency (median) | "
        "efficiency min - max |")
    out("|---|---|---:|---:|---:|---:|---:|---:|")
    for sh, rt, ntask, mtask, steps, effs in rows:
        out("| %s | %s | %d | %d | %.3g | %.3f | %.0f %% | %.0f - %.0f %% |" % (
            shape_name(sh), rt, workers(rt), ntask, mtask, statistics.median(steps) * 1e3,
            statistics.median(effs) * 100, min(effs) * 100, max(effs) * 100))


def cpu_name():
    name, fam, model = "unknown CPU", "?", "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k, v = k.strip(), v.strip()
                if k == "model name" and name == "unknown CPU":
                    name = v
                elif k == "cpu family" and fam == "?":
                    fam = v
                elif k == "model" and model == "?":
                    model = v
    except OSError:
        pass
    return "%s, family %s, model %s, %d CPUs" % (name, fam, model, os.cpu_count() or 0)


def figure(rows, series, png, title):
    """efficiency against mean task duration (log x), one curve per runtime, with the rounds' min - max as error
    bars; writes PNG.dat and PNG.gp next to the PNG and runs gnuplot. Returns an error message or None."""
    base = os.path.splitext(png)[0]
    dat, gp = base + ".dat", base + ".gp"
    with open(dat, "w") as f:
        for rt in series:
            f.write("# %s: mean task us, efficiency %% (median, min, max)\n" % rt)
            for _, r, _, x, _, effs in sorted((r for r in rows if r[1] == rt), key=lambda r: r[3]):
                f.write("%.6g %.3f %.3f %.3f\n" % (x, statistics.median(effs) * 100, min(effs) * 100, max(effs) * 100))
            f.write("\n\n")
    colour = {"starpu": "#9400d3", "openmp": "#009e73", "sequential": "#56b4e9"}
    plots = ", ".join("'%s' index %d using 1:2:3:4 with yerrorlines lw 2 pt 7 dt %d lc rgb '%s' title '%s'" % (
        dat, i, 1 if workers(rt) > 1 or rt.startswith("sequential") else 2, colour.get(rt.split("/")[0], "black"),
        rt.replace("/", ", ") + (" worker" if workers(rt) == 1 else " workers")) for i, rt in enumerate(series))
    with open(gp, "w") as f:
        f.write("set terminal pngcairo size 900,560 font ',10'\nset output '%s'\n" % png)
        f.write("set title \"%s\" noenhanced\n" % title.replace('"', "'"))
        f.write("set logscale x\nset xlabel 'mean task duration (us, log scale)'\nset ylabel 'efficiency (%)'\n")
        f.write("set yrange [0:*]\nset grid\nset key top left\n")
        f.write("set arrow from graph 0, first 50 to graph 1, first 50 nohead dt 2 lc rgb 'gray40'\n")
        f.write("plot %s\n" % plots)
    r = subprocess.run(["gnuplot", gp], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return None if r.returncode == 0 else "gnuplot failed: %s" % r.stderr.strip()[-500:]
