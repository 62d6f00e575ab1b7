# Helpers for the harness script tests: a scratch directory, failure reporting, and result files
# made by `scaffold run` with the fake benchmark (tests/harness/fake_bench.c).
set -u
: "${SF_BINARY:?SF_BINARY must point to the scaffold executable}"
: "${SF_FAKE_BENCH:?SF_FAKE_BENCH must point to the sf_fake_bench executable}"
SCAFFOLD=$SF_BINARY
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-harness-XXXXXX")
trap 'rm -rf "$T"' EXIT
FAILS=0
CHECKS=0

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
check() { # check DESCRIPTION COMMAND...
  local what=$1; shift
  CHECKS=$((CHECKS + 1))
  if ! "$@"; then fail "$what"; fi
}
contains() { grep -qF -- "$2" "$1" || { echo "  '$1' lacks: $2" >&2; echo "  --- $1 ---" >&2; sed 's/^/  | /' "$1" >&2; return 1; }; }
lacks() { ! grep -qF -- "$2" "$1" || { echo "  '$1' unexpectedly holds: $2" >&2; return 1; }; }
finish() {
  echo "$CHECKS checks, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}

# fake_run OUT NAME JOB_ID EXTRA_JSON [fake_bench args...]: one result through `scaffold run`.
fake_run() {
  local out=$1 name=$2 job=$3 extra=$4; shift 4
  SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" run -o "$out" --experiment-name "$name" --job-id "$job" \
    --extra "$extra" -- "$@" > /dev/null
}
