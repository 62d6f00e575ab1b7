#!/usr/bin/env bash
# Interrupting `scaffold generate_fractals` (kill -9 once some instance files exist) and rerunning
# gives exactly the bytes of an uninterrupted run; a truncated .npy and a stale .tmp- file left in
# the library are cleaned up, the .npy regenerated.
set -u
BIN=${SF_BINARY:?SF_BINARY is not set}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
cat > "$T/cfg.yml" <<YML
problem_scale: 6
unet_bottleneck_dim: 3
n_categories: 5
datagen_batch_size: 2000
seed: 5
ncpu: 1
YML
gen() { # dir, log
  STARPU_HOME=$(mktemp -d -p "$T") "$BIN" generate_fractals -c "$T/cfg.yml" --set fract_base_dir="$1" > "$2" 2>&1
}

gen "$T/ref" "$T/ref.log" || { echo "FAIL: reference run:"; cat "$T/ref.log"; exit 1; }
total=$(find "$T/ref" -name '*.npy' | wc -l)
[ "$total" -eq 725 ] || { echo "FAIL: reference run made $total instance files, want 725"; fail=1; }

# interrupted run
STARPU_HOME=$(mktemp -d -p "$T") "$BIN" generate_fractals -c "$T/cfg.yml" --set fract_base_dir="$T/int" > "$T/int1.log" 2>&1 &
pid=$!
n=0
for _ in $(seq 1 3000); do
  n=$(find "$T/int" -name '*.npy' 2>/dev/null | wc -l)
  [ "$n" -ge 10 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.005
done
if kill -9 $pid 2>/dev/null; then
  wait $pid 2>/dev/null
  n=$(find "$T/int" -name '*.npy' | wc -l)
  echo "killed generate_fractals (pid $pid) with $n of $total instance files written"
  if [ "$n" -ge "$total" ]; then echo "FAIL: the run had finished its files before the kill; nothing was interrupted"; fail=1; fi
else
  wait $pid
  echo "FAIL: generate_fractals ended (status $?) before it could be interrupted ($n files); cannot test resume"
  cat "$T/int1.log"
  exit 1
fi

# damage the partial library further: a truncated instance and a stale temporary file
victim=$(find "$T/int" -name '*.npy' | sort | head -1)
size=$(stat -c %s "$victim")
truncate -s $((size / 2)) "$victim"
echo junk > "$(dirname "$victim")/.tmp-$(basename "$victim")-424242"

gen "$T/int" "$T/int2.log" || { echo "FAIL: resumed run:"; cat "$T/int2.log"; exit 1; }
grep 'fractal instances' "$T/int2.log"
grep -q 'incomplete removed' "$T/int2.log" && ! grep -q ' 0 incomplete removed' "$T/int2.log" ||
  { echo "FAIL: the truncated $victim was not reported removed"; fail=1; }
if find "$T/int" -name '.tmp-*' | grep -q .; then echo "FAIL: stale temporary files remain:"; find "$T/int" -name '.tmp-*'; fail=1; fi
if diff -r "$T/ref" "$T/int" > "$T/diff.txt"; then
  echo "ok   resumed library is byte-identical to the uninterrupted one ($(find "$T/ref" -type f | wc -l) files)"
else
  echo "FAIL: resumed library differs from the uninterrupted one:"; head "$T/diff.txt"; fail=1
fi
[ $fail -eq 0 ] && echo "all resume checks passed"
exit $fail
