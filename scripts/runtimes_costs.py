"""Per-task cost breakdown for scripts/bench-runtimes (docs/runtimes.md, "Cost per task").

One small-task shape (runtimes_sweep's shape syntax) on every runtime and, for StarPU, every scheduler asked for, with 1
and 2 workers (sequential: 1), the configurations alternated inside each round. Every figure is in us per task, the
median over the rounds:
  - kernel: the task bodies (host executors: timed around each run function; StarPU: its executing time, traced);
  - submit: the application thread inside sf_submit (bench_train_step's submit_s_per_step): for StarPU the task
    creation, implicit dependency detection and the push of tasks ready at once; for OpenMP the hand-off to the
    submitter thread; for the sequential executor its submission path (the task body subtracted);
  - create + deps: the OpenMP submitter thread creating the `omp task depend(...)` (libgomp's dependency tracking);
  - push, pop (scheduling), data acquire, data release: StarPU's own per-task stages (its task profiling, summed over
    the workers by the trace, scaffold/trace.h);
  - rest: worker time in none of the above ((workers x step - the listed worker-side stages) / tasks): for StarPU the
    termination path (notifying dependent tasks, sequential consistency), polling and idle time (StarPU's own
    sleeping-time counter also runs between the steps, while the trace is written, so it is not subtracted; a push
    made by the application thread is counted here as well as in submit); for OpenMP everything libgomp
    does on its workers (scheduling, dependency release, idle); for the sequential executor the graph code around the
    submissions.
StarPU's rows run traced (the trace enables its task profiling), which adds its own cost to each task. Each run has a
fresh STARPU_HOME (bench_train_step), so dmda/dmdas calibrate their performance models during the warm-up step.
"""
import json
import os
import shutil
import statistics
import tempfile

import runtimes_sweep as sw

DEFAULT_SHAPE = "4:3:4:4:2:4x4"
COLS = ("kernel", "submit", "create + deps", "push", "pop", "data acquire", "data release", "rest")


def configs(rts, scheds):
    out = []
    for rt in rts:
        if rt == "starpu":
            out += [(rt, s, n) for s in scheds for n in (1, 2)]
        else:
            out += [(rt, rt, n) for n in ((1,) if rt == "sequential" else (1, 2))]
    return out


def traced_stages(trace_dir, steps):
    with open(os.path.join(trace_dir, "worker_stats.json")) as f:
        ws = json.load(f)["workers"]
    tot = lambda k: sum(w.get(k, 0.0) for w in ws) / steps
    return {"kernel": tot("busy_s"), "push": tot("starpu_push_s"), "pop": tot("starpu_pop_s"),
            "data acquire": tot("starpu_acquire_s"), "data release": tot("starpu_release_s")}


def one(runner, shape, rt, sched, n):
    """a run's stages in seconds per step, its tasks per step and its step time"""
    args, env = sw.shape_args(shape)
    args = ["--runtime", rt, "--ncpu", str(n)] + args
    tdir = None
    if rt == "starpu":
        tdir = tempfile.mkdtemp(prefix="sf-costs-")
        args += ["--sched", sched, "--trace", tdir]
    try:
        d = runner(args, env)
        steps, step = d["steps"], d["median_step_s"]
        st = dict.fromkeys(COLS, float("nan"))
        if tdir:
            st.update(traced_stages(tdir, steps))
            st["submit"] = d["submit_s_per_step"]
            worker = sum(st[k] for k in ("kernel", "push", "pop", "data acquire", "data release"))
        else:
            st["kernel"] = d["kernel_s_per_step"]
            st["submit"] = d["submit_s_per_step"] - (st["kernel"] if rt == "sequential" else 0)
            if rt == "openmp":
                st["create + deps"] = d["spawn_s_per_step"]
            worker = st["kernel"] + (st["submit"] if rt == "sequential" else 0)
        st["rest"] = n * statistics.mean(d["step_s"]) - worker
        return st, d["tasks_per_step"], step
    finally:
        if tdir:
            shutil.rmtree(tdir, ignore_errors=True)


def table(runner, shape, rts, scheds, rounds, out):
    cfgs = configs(rts, scheds)
    res = {c: [] for c in cfgs}
    for r in range(rounds):
        for c in (cfgs if r % 2 == 0 else list(reversed(cfgs))):
            res[c].append(one(runner, shape, *c))
    out("| runtime | scheduler | workers | tasks/step | step ms | " + " | ".join(COLS) + " |")
    out("|---|---|---:|---:|---:|" + "---:|" * len(COLS))
    for c in cfgs:
        ntask = res[c][0][1]
        step = statistics.median(x[2] for x in res[c])
        cells = []
        for k in COLS:
            v = [x[0][k] / x[1] * 1e6 for x in res[c]]
            cells.append("-" if any(y != y for y in v) else "%.2f" % statistics.median(v))
        out("| %s | %s | %d | %d | %.2f | %s |" % (c[0], c[1] if c[0] == "starpu" else "-", c[2], ntask, step * 1e3,
                                                 " | ".join(cells)))
    return res
