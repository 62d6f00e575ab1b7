#!/bin/sh
# Interrupting dataset generation: a run killed with SIGKILL partway through (volumes already in
# its staging directory, nothing published) leaves no reusable dataset; the rerun publishes a
# dataset whose files are byte-identical to an uninterrupted run's (meta.yaml aside, which holds
# the creation time). Usage: test_dataset_interrupt.sh DATASET_TOOL
set -eu
TOOL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sf-dsint-XXXXXX")
export STARPU_HOME="$tmp/starpu" STARPU_SILENT=1
mkdir -p "$STARPU_HOME"
fail() { echo "FAIL: $*"; echo "kept $tmp for inspection"; exit 1; }
common="--set fract_base_dir=$tmp/fractals --set problem_scale=5 --set n_categories=5 --set ncpu=1 --set scheduler=eager"

# shellcheck disable=SC2086
"$TOOL" $common --set dataset_dir="$tmp/ref" --fractals > "$tmp/ref.log" 2>&1 || { cat "$tmp/ref.log"; fail "reference run"; }
grep '^DATASET' "$tmp/ref.log"

# shellcheck disable=SC2086
"$TOOL" $common --set dataset_dir="$tmp/int" > "$tmp/int1.log" 2>&1 &
pid=$!
n=0
i=0
while [ $i -lt 3000 ]; do
  n=$(find "$tmp/int" -path '*/.tmp_*/masks/*' -name '*_mask.npy' 2>/dev/null | wc -l)
  [ "$n" -ge 5 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.01
  i=$((i + 1))
done
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
published=$(find "$tmp/int" -mindepth 2 -maxdepth 2 -type d ! -name '.tmp_*' | wc -l)
staged=$(find "$tmp/int" -path '*/.tmp_*/masks/*' -name '*_mask.npy' | wc -l)
[ "$published" -eq 0 ] || fail "the run finished before it could be killed (published $published, $n masks seen)"
[ "$staged" -ge 5 ] && [ "$staged" -lt 240 ] || fail "expected a partial staging directory, found $staged of 240 masks"
echo "killed partway: $staged of 240 volumes in the staging directory"

# shellcheck disable=SC2086
"$TOOL" $common --set dataset_dir="$tmp/int" > "$tmp/int2.log" 2>&1 || { cat "$tmp/int2.log"; fail "rerun"; }
grep '^DATASET' "$tmp/int2.log"
grep -q 'generated=1' "$tmp/int2.log" || fail "the rerun reused the interrupted staging directory"
ref=$(sed -n 's/^DATASET dir=\([^ ]*\) .*/\1/p' "$tmp/ref.log")
new=$(sed -n 's/^DATASET dir=\([^ ]*\) .*/\1/p' "$tmp/int2.log")
case "$new" in */.tmp_*) fail "published directory is a staging directory: $new" ;; esac
nfiles=$(find "$new" -type f | wc -l)
[ "$nfiles" -ge 485 ] || fail "rerun has only $nfiles files"
diff -r -x meta.yaml -x .heartbeat "$ref" "$new" > "$tmp/diff.txt" 2>&1 || { head "$tmp/diff.txt"; fail "rerun differs from the uninterrupted run"; }
echo "rerun after kill -9 is byte-identical to the uninterrupted run ($nfiles files)"
rm -rf "$tmp"
