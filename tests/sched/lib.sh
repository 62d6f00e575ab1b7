# Shared set-up of tests/sched: a private temporary directory, `die`, and `jget FILE PATH` (a JSON
# value by dotted path, via python3; "null" for null).
set -u
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-sched-XXXXXX")
trap 'rm -rf "$T"' EXIT
export STARPU_SILENT=1
unset STARPU_SCHED STARPU_NCPU STARPU_NCPUS STARPU_NOPENCL
die() {
  echo "FAIL: $*" >&2
  exit 1
}
jget() {
  python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[k]
print("null" if v is None else str(v).lower() if isinstance(v, bool) else v)' "$1" "$2"
}
# le A B: A <= B as numbers
le() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)' "$1" "$2"; }
gt0() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)' "$1"; }
