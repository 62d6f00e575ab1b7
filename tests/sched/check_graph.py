#!/usr/bin/python3
"""Checks a task graph written by `export_graph` (docs/tracing.md, "Task graph export").

  check_graph.py GRAPH_DIR [--tasks N] [--starpu-dot BOUND_DOT]

graph.json must parse and be self-consistent: ids 0..n-1 in order, ntasks/nhandles equal to the
lists, every predecessor an earlier task, every handle reference valid with a known access mode and
its byte size, positive sizes, footprints as 8 hex digits; graph.dot must have one node per task and
one edge per predecessor. --tasks N: the step's task count from another source (the submission
counter, the trace). --starpu-dot: StarPU's own dependency graph of a step of the same shape
(bound.dot of `bound: 1`, tasks named by job id in submission order): both graphs must order the
same pairs of tasks (equal transitive closures). Exit 0 when every check holds, 1 otherwise, with
one line per difference."""
import json
import re
import sys

MODES = {"R", "W", "RW", "RW|COMMUTE", "W|COMMUTE", "REDUX", "SCRATCH"}
errors = []


def err(msg):
    errors.append(msg)
    if len(errors) <= 20:
        print("check_graph: " + msg)


def closure(n, preds):
    """Ancestor sets as int bitsets, tasks in topological (id) order."""
    anc = [0] * n
    for i in range(n):
        a = 0
        for p in preds[i]:
            a |= anc[p] | (1 << p)
        anc[i] = a
    return anc


def starpu_preds(path):
    ids, edges = set(), []
    for line in open(path):
        m = re.match(r'\s*"t(\d+)" -> "t(\d+)"', line)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            edges.append((a, b))
            ids.update((a, b))
            continue
        m = re.match(r'\s*"t(\d+)"\s*$', line)
        if m:
            ids.add(int(m.group(1)))
    order = {j: i for i, j in enumerate(sorted(ids))}
    preds = [[] for _ in ids]
    for a, b in edges:
        if order[a] >= order[b]:
            err("StarPU's graph has an edge t%d -> t%d against submission order" % (a, b))
            continue
        preds[order[b]].append(order[a])
    return preds


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    gdir, want, sdot = args[0], None, None
    i = 1
    while i < len(args):
        if args[i] == "--tasks":
            want = int(args[i + 1])
        elif args[i] == "--starpu-dot":
            sdot = args[i + 1]
        else:
            print("check_graph: unknown argument " + args[i])
            return 2
        i += 2
    try:
        g = json.load(open(gdir + "/graph.json"))
    except (OSError, ValueError) as e:
        err("graph.json does not parse: %s" % e)
        return 1
    tasks, handles = g.get("tasks", []), g.get("handles", [])
    n = len(tasks)
    if g.get("format") != "scaffold-task-graph" or g.get("version") != 1:
        err("format/version are %r/%r, expected scaffold-task-graph/1" % (g.get("format"), g.get("version")))
    if g.get("ntasks") != n or g.get("nhandles") != len(handles):
        err("ntasks/nhandles %r/%r differ from the lists' lengths %d/%d" % (g.get("ntasks"), g.get("nhandles"), n, len(handles)))
    if n == 0:
        err("no task recorded")
    if want is not None and want != n:
        err("graph.json has %d tasks, the step submitted %d" % (n, want))
    for k, h in enumerate(handles):
        if h.get("id") != k or not (h.get("bytes", 0) > 0) or not isinstance(h.get("home_node"), int):
            err("handle %d malformed: %r" % (k, h))
    nedges = 0
    preds = []
    for k, t in enumerate(tasks):
        if t.get("id") != k:
            err("task %d has id %r" % (k, t.get("id")))
        if not t.get("codelet", "").startswith("sf_"):
            err("task %d: codelet %r" % (k, t.get("codelet")))
        if not re.fullmatch(r"[0-9a-f]{8}", t.get("footprint", "")):
            err("task %d: footprint %r is not 8 hex digits" % (k, t.get("footprint")))
        if not (t.get("flops", -1) >= 0) or not isinstance(t.get("priority"), int):
            err("task %d: flops %r / priority %r" % (k, t.get("flops"), t.get("priority")))
        if not t.get("handles"):
            err("task %d (%s) accesses no data" % (k, t.get("codelet")))
        for a in t.get("handles", []):
            h = a.get("handle")
            if not isinstance(h, int) or not 0 <= h < len(handles):
                err("task %d: handle %r out of range" % (k, h))
            elif a.get("bytes") != handles[h]["bytes"]:
                err("task %d: handle %d bytes %r, the handle table says %r" % (k, h, a.get("bytes"), handles[h]["bytes"]))
            if a.get("mode") not in MODES:
                err("task %d: mode %r" % (k, a.get("mode")))
        p = t.get("predecessors", [])
        if any(not isinstance(x, int) or not 0 <= x < k for x in p):
            err("task %d: predecessors %r must be earlier tasks" % (k, p))
            p = [x for x in p if isinstance(x, int) and 0 <= x < k]
        if len(set(p)) != len(p):
            err("task %d: repeated predecessors %r" % (k, p))
        nedges += len(p)
        preds.append(p)
    dot = open(gdir + "/graph.dot").read()
    nodes = len(re.findall(r"^\s*t\d+ \[label=", dot, re.M))
    edges = len(re.findall(r"^\s*t\d+ -> t\d+;", dot, re.M))
    if nodes != n or edges != nedges:
        err("graph.dot has %d nodes and %d edges, graph.json %d tasks and %d predecessors" % (nodes, edges, n, nedges))
    if sdot:
        sp = starpu_preds(sdot)
        if len(sp) != n:
            err("StarPU's graph has %d tasks, graph.json %d" % (len(sp), n))
        else:
            a, b = closure(n, preds), closure(n, sp)
            diff = [k for k in range(n) if a[k] != b[k]]
            for k in diff[:5]:
                only_ours = [x for x in range(k) if (a[k] >> x) & 1 and not (b[k] >> x) & 1]
                only_starpu = [x for x in range(k) if (b[k] >> x) & 1 and not (a[k] >> x) & 1]
                err("task %d (%s): ordered after %s only in graph.json, after %s only in StarPU's graph"
                    % (k, tasks[k]["codelet"], only_ours[:6], only_starpu[:6]))
            if diff:
                err("%d of %d tasks have different ancestor sets" % (len(diff), n))
            else:
                print("check_graph: the dependencies equal StarPU's (%d tasks, same transitive closure)" % n)
    if errors:
        print("check_graph: %d problem(s)" % len(errors))
        return 1
    print("check_graph: %d tasks, %d handles, %d predecessor edges: OK" % (n, len(handles), nedges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
