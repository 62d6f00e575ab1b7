#!/usr/bin/env python3
"""Turns a src/kernels/cuda/<op>.cu file into C++ for the CPU emulation (tests/gpu/emu): each kernel launch
`k<<<grid, block[, shmem[, stream]]>>>(args);` becomes `sf_emu_launch(dim3(grid), dim3(block), shmem,
[&]() { k(args); });`. Everything else is kept; a #line directive keeps compiler messages pointing at
the .cu file. Usage: cu2cpp.py IN.cu OUT.cpp"""
import re
import sys


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return parts


LAUNCH = re.compile(r"([A-Za-z_]\w*(?:<[^<>;]*>)?)\s*<<<(.*?)>>>\s*\((.*?)\)\s*;", re.S)


def repl(m):
    cfg = split_top(m.group(2))
    if len(cfg) < 2 or len(cfg) > 4:
        sys.exit("cu2cpp: cannot parse launch configuration <<<%s>>>" % m.group(2))
    shm = cfg[2] if len(cfg) > 2 else "0"
    return "sf_emu_launch(dim3(%s), dim3(%s), (size_t)(%s), [&]() { %s(%s); });" % (
        cfg[0], cfg[1], shm, m.group(1), m.group(3))


def main():
    src, dst = sys.argv[1], sys.argv[2]
    text = open(src).read()
    out, n = LAUNCH.subn(repl, text)
    if "<<<" in out:
        sys.exit("cu2cpp: %s: a kernel launch was not rewritten" % src)
    with open(dst, "w") as f:
        f.write('#line 1 "%s"\n' % src)
        f.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
