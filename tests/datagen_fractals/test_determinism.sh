#!/usr/bin/env bash
# `scaffold generate_fractals` output is byte-identical whatever the worker count and scheduler:
# 1 worker + eager (config keys), 2 workers + dmda (config keys), and 2 workers + default
# scheduler chosen through StarPU's own environment variables. Also: an unknown scheduler is a
# usage error (status 2) naming the value and listing valid ones, "heft" is accepted, and an
# unwritable fract_base_dir fails with status 1 and a message.
set -u
BIN=${SF_BINARY:?SF_BINARY is not set}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
cat > "$T/cfg.yml" <<YML
problem_scale: 5
unet_bottleneck_dim: 3
n_categories: 2
seed: 99
datagen_batch_size: 200
YML

run() { # name, then extra args; env passes through
  local name=$1; shift
  STARPU_HOME=$(mktemp -d -p "$T") "$BIN" generate_fractals -c "$T/cfg.yml" --set fract_base_dir="$T/$name" "$@" \
    > "$T/$name.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: run $name exited $rc:"; cat "$T/$name.log"; fail=1; fi
}

run w1_eager --set ncpu=1 --set scheduler=eager
run w2_dmda --set ncpu=2 --set scheduler=dmda
STARPU_NCPU=2 STARPU_SCHED=lws run w2_env
grep -q 'scheduler eager, 1 workers' "$T/w1_eager.log" || { echo "FAIL: w1_eager did not run 1 eager worker:"; head -3 "$T/w1_eager.log"; fail=1; }
grep -q 'scheduler dmda, 2 workers' "$T/w2_dmda.log" || { echo "FAIL: w2_dmda did not run 2 dmda workers:"; head -3 "$T/w2_dmda.log"; fail=1; }
grep -q 'scheduler lws, 2 workers' "$T/w2_env.log" || { echo "FAIL: STARPU_NCPU/STARPU_SCHED not honoured:"; head -3 "$T/w2_env.log"; fail=1; }

n=$(find "$T/w1_eager" -name '*.npy' | wc -l)
[ "$n" -eq 290 ] || { echo "FAIL: $n instance files, want 2*145 = 290"; fail=1; }
for other in w2_dmda w2_env; do
  (cd "$T/w1_eager" && find . -type f | sort) > "$T/a.lst"
  (cd "$T/$other" && find . -type f | sort) > "$T/b.lst"
  if ! cmp -s "$T/a.lst" "$T/b.lst"; then echo "FAIL: file lists differ (w1_eager vs $other):"; diff "$T/a.lst" "$T/b.lst" | head; fail=1; continue; fi
  nd=0
  while read -r f; do
    if ! cmp -s "$T/w1_eager/$f" "$T/$other/$f"; then
      [ $nd -lt 3 ] && echo "FAIL: $f differs between w1_eager and $other: $(cmp "$T/w1_eager/$f" "$T/$other/$f" 2>&1)"
      nd=$((nd + 1))
    fi
  done < "$T/a.lst"
  [ $nd -eq 0 ] && echo "ok   $(wc -l < "$T/a.lst") files byte-identical: w1_eager vs $other" || { echo "FAIL: $nd files differ (w1_eager vs $other)"; fail=1; }
done

# scheduler names
STARPU_HOME=$(mktemp -d -p "$T") "$BIN" generate_fractals -c "$T/cfg.yml" --set fract_base_dir="$T/bad" --set scheduler=fastest > "$T/bad.log" 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q "fastest" "$T/bad.log" || ! grep -q "dmda" "$T/bad.log"; then
  echo "FAIL: unknown scheduler: status $rc (want 2), message:"; cat "$T/bad.log"; fail=1
else echo "ok   unknown scheduler rejected: $(grep -m1 error "$T/bad.log")"; fi
run heft --set scheduler=heft --set n_categories=1
grep -q 'scheduler modular-heft' "$T/heft.log" || { echo "FAIL: heft alias:"; head -3 "$T/heft.log"; fail=1; }

# unwritable fract_base_dir
mkdir -p "$T/ro" && touch "$T/ro/file"
STARPU_HOME=$(mktemp -d -p "$T") "$BIN" generate_fractals -c "$T/cfg.yml" --set fract_base_dir="$T/ro/file/sub" > "$T/ro.log" 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q "cannot create directory" "$T/ro.log"; then
  echo "FAIL: unwritable fract_base_dir: status $rc (want 1), message:"; cat "$T/ro.log"; fail=1
else echo "ok   unwritable dir: $(grep -m1 error "$T/ro.log")"; fi
[ $fail -eq 0 ] && echo "all determinism checks passed"
exit $fail
