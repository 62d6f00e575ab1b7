#!/usr/bin/env bash
# Sanitizer build only. The direct convolution's register blocks are not instrumented access by access;
# they check their footprint on entry instead (src/kernels/common/sanitize_footprint.h). For every kernel set
# this CPU has, footprint_probe calls a forward and a dW block and the Winograd kernels (and the naive
# reference kernels, which check their whole tensors):
#  - with every buffer exactly as large as the block's loops touch: no report, exit 0 (the footprint is
#    not larger than what the loops touch);
#  - with one buffer (input row, weights, output; dW's input row, dy, gradient; Winograd's input,
#    output, dy and gradient) one float short: ASan's heap-buffer-overflow report in the log directory
#    and a non-zero exit (the footprint is not smaller, and the check is on); scripts/sanitizer-logs
#    then fails naming it.
set -u
: "${FOOTPRINT_PROBE:?}" "${SF_SOURCE_DIR:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-footprint-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
checks=0
run() { # set case -> rc; logs in $T/$1-$2 (on purpose: never the suite's log directory)
  mkdir -p "$T/$1-$2"
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$T/$1-$2/asan" "$FOOTPRINT_PROBE" "$1" "$2" \
    > "$T/$1-$2.out" 2>&1
}
for set in c avx2 avx512; do
  for exact in exact dw-exact; do
    run $set $exact
    rc=$?
    if [ $rc = 77 ]; then
      echo "skip $set: $(cat "$T/$set-$exact.out")"
      continue 2
    fi
    [ $rc = 0 ] || fail "$set $exact: exit $rc with exactly sized buffers (a footprint larger than the loops):" \
      "$(cat "$T/$set-$exact.out" "$T/$set-$exact"/asan.* 2>/dev/null | head -30)"
    [ -z "$(ls "$T/$set-$exact")" ] || fail "$set $exact: a report with exactly sized buffers"
    checks=$((checks + 1))
  done
  for short in short-x short-w short-y short-dx short-dy short-dw; do
    run $set $short
    rc=$?
    [ $rc != 0 ] || fail "$set $short: the block ran on a buffer one float short without a report" \
      "(a footprint smaller than the loops, or no check): $(cat "$T/$set-$short.out")"
    grep -qs "heap-buffer-overflow" "$T/$set-$short"/asan.* ||
      fail "$set $short: exit $rc but no heap-buffer-overflow report: $(cat "$T/$set-$short.out" "$T/$set-$short"/asan.* 2>/dev/null | head -30)"
    checks=$((checks + 1))
  done
  echo "ok   $set: exact buffers pass, each of 6 buffers one float short is reported"
  # the Winograd stages (conv3d_winograd_tiles.h) under this set: forward, dX and dW
  run $set wino-exact || fail "$set Winograd: exit $? with exactly sized buffers:" \
    "$(cat "$T/$set-wino-exact.out" "$T/$set-wino-exact"/asan.* 2>/dev/null | head -30)"
  [ -z "$(ls "$T/$set-wino-exact")" ] || fail "$set Winograd: a report with exactly sized buffers"
  checks=$((checks + 1))
  for short in wino-short-x wino-short-y wino-short-dy wino-short-dw; do
    run $set $short && fail "$set $short: the Winograd kernels ran on a buffer one float short without a report"
    grep -qs "heap-buffer-overflow" "$T/$set-$short"/asan.* ||
      fail "$set $short: no heap-buffer-overflow report: $(cat "$T/$set-$short.out" "$T/$set-$short"/asan.* 2>/dev/null | head -30)"
    checks=$((checks + 1))
  done
  echo "ok   $set Winograd: exact buffers pass, input, output, dy and dW one float short are reported"
done
# the reference kernels check their whole tensors (the set does not matter)
run c ref-exact || fail "reference kernels: exit $? with exactly sized tensors: $(cat "$T/c-ref-exact.out" "$T/c-ref-exact"/asan.* 2>/dev/null | head -30)"
checks=$((checks + 1))
for short in ref-short-y ref-short-dy ref-short-dw; do
  run c $short && fail "reference kernels, $short: ran on a tensor one float short without a report"
  grep -qs "heap-buffer-overflow" "$T/c-$short"/asan.* || fail "reference kernels, $short: no heap-buffer-overflow report"
  checks=$((checks + 1))
done
echo "ok   reference kernels: exact tensors pass, a short output, dy or dW is reported"
summary=$(python3 "$SF_SOURCE_DIR/scripts/sanitizer-logs" --root "$SF_SOURCE_DIR" "$T/c-short-w" 2>&1)
[ $? -ne 0 ] || fail "scripts/sanitizer-logs exited 0 on a footprint report: $summary"
grep -q "heap-buffer-overflow" <<<"$summary" || fail "scripts/sanitizer-logs does not name the error: $summary"
checks=$((checks + 1))
echo "ok   scripts/sanitizer-logs fails and names the overflow"
echo "$checks checks, 0 failed"
