#!/usr/bin/env python3
"""Reads the `Running:` lines of `scaffold jobs PROFILE --dry-run` on stdin and prints one line per run
that is not sized by time: a --max-count (a sample count sized for one machine is too short on a
faster one), no --max-time, or fewer than MIN_SLICES rate slices of --sample-duration in its
--max-time. A --datagen-only run is one timed phase: it needs --sample-duration <= 0.05 s, so that
0.15 s of generation already gives the 3 slices the steady rate needs. A <suite>.convergence run
trains to its target Dice (no limit: its length is what it measures). Prints nothing when all fit."""
import re
import sys

MIN_SLICES = 6  # twice the 3 slices mean(rates[-20:-2]) needs, so that no run is borderline


def opt(args, name):
    return float(args[args.index(name) + 1]) if name in args else None


bad = []
for line in sys.stdin:
    if not line.startswith("Running:"):
        continue
    name = re.search(r"--experiment-name (\S+)", line).group(1)
    args = line.split(" -- ", 1)[1].split()
    sd = opt(args, "--sample-duration") or 0.5
    mt = opt(args, "--max-time")
    if "--max-count" in args:
        bad.append(f"{name}: sized by --max-count {opt(args, '--max-count'):g} (a sample count), not by time")
    elif "--datagen-only" in args:
        if sd > 0.05:
            bad.append(f"{name}: --datagen-only with --sample-duration {sd:g} (want <= 0.05)")
    elif mt is None and not name.endswith(".convergence"):
        bad.append(f"{name}: no --max-time")
    elif mt is None:
        pass  # trains to its target Dice: its length is the time to solution (~80 s on 2 cores)
    elif mt / sd < MIN_SLICES:
        bad.append(f"{name}: --max-time {mt:g} / --sample-duration {sd:g} = {mt / sd:g} slices (< {MIN_SLICES})")
print("; ".join(bad), end="")
