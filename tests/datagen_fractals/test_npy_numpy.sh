#!/usr/bin/env bash
# NumPy interoperability of the .npy writer/reader: NumPy loads our files with the right dtype, shape
# and values, our headers are byte-identical to np.save's, and we read np.save's files.
# Skips (77) when /usr/bin/python3 has no numpy.
set -u
TOOL=$1
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "SKIPPED: $PY cannot import numpy, so NumPy interoperability cannot be checked"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$TOOL" write "$T" || { echo "FAIL: npy_tool write"; exit 1; }
"$PY" - "$T" <<'PYEOF' || exit 1
import sys, numpy as np
d = sys.argv[1]
specs = {
    "f32": (np.float32, (1024, 3), lambda i: (i * 0.25 - 3.0).astype(np.float32)),
    "f64": (np.float64, (5,), lambda i: 1.0 / (i + 1)),
    "u16": (np.uint16, (4, 5, 6), lambda i: (i * 7 % 65536).astype(np.uint16)),
    "i64": (np.int64, (), lambda i: (i * 1000000000000 - 5).astype(np.int64)),
    "u8": (np.uint8, (7,), lambda i: (i * 3 % 256).astype(np.uint8)),
}
bad = 0
for tag, (dt, shape, f) in specs.items():
    n = int(np.prod(shape)) if shape else 1
    want = f(np.arange(n, dtype=np.int64)).astype(dt).reshape(shape)
    got = np.load(f"{d}/ours_{tag}.npy")
    if got.dtype != np.dtype(dt) or got.shape != shape or not np.array_equal(got, want):
        print(f"FAIL ours_{tag}.npy: numpy sees dtype {got.dtype} shape {got.shape}, want {np.dtype(dt)} {shape}; "
              f"values equal: {got.shape == shape and np.array_equal(got, want)}")
        bad = 1
        continue
    np.save(f"{d}/numpy_{tag}.npy", want)
    ours = open(f"{d}/ours_{tag}.npy", "rb").read()
    theirs = open(f"{d}/numpy_{tag}.npy", "rb").read()
    if ours != theirs:
        i = next((k for k in range(min(len(ours), len(theirs))) if ours[k] != theirs[k]), min(len(ours), len(theirs)))
        print(f"FAIL ours_{tag}.npy differs from np.save's bytes at offset {i} (sizes {len(ours)} vs {len(theirs)}): "
              f"ours {ours[:i + 20][-40:]!r} numpy {theirs[:i + 20][-40:]!r}")
        bad = 1
    else:
        print(f"ok   numpy loads ours_{tag}.npy ({np.dtype(dt)}, {shape}); bytes identical to np.save")
sys.exit(bad)
PYEOF
"$TOOL" check "$T" || { echo "FAIL: npy_tool check"; exit 1; }
echo "all NumPy interoperability checks passed"
