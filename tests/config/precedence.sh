#!/bin/bash
# Precedence defaults < -c files (in order) < --set and upstream-style flags (in order), whatever
# the order on the command line, checked through the origins that -v prints for each key
# ("default", "FILE:LINE", "override ...", "derived"). Also: problem_scale flooring, flag
# spellings, -v listing every key once, and --help. Needs SF_BUILD_DIR and SF_SOURCE_DIR.
set -u
bin="${SF_BUILD_DIR:?SF_BUILD_DIR not set}/tests/config/config_cli"
cfg="${SF_SOURCE_DIR:?SF_SOURCE_DIR not set}/configs"
if [ ! -x "$bin" ]; then
  echo "FAIL: $bin is not built (cmake --build <build> --target config_cli)"
  exit 1
fi
n=0
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# line KEY FILE: the line of "KEY:" in FILE.
line() { grep -n "^$1:" "$2" | head -1 | cut -d: -f1; }

# check NAME KEY VALUE ORIGIN -- ARGS...: config_cli -v ARGS succeeds and prints "KEY: VALUE  # ORIGIN".
check() {
  local name=$1 key=$2 value=$3 origin=$4 out rc got
  shift 5
  n=$((n + 1))
  out=$("$bin" -v "$@" 2>/dev/null)
  rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "$name: exit status $rc; args: -v $*"
    "$bin" -v "$@" >/dev/null
    return
  fi
  got=$(grep "^$key: " <<<"$out" | sed 's/   */  /')
  if [ "$got" != "$key: $value  # $origin" ]; then
    fail "$name: expected '$key: $value  # $origin', got '$got'; args: -v $*"
    return
  fi
  echo "ok   $name: $got"
}

q="$cfg/quick.yml"
t="$cfg/tiny.yml"
qe=$(line epochs "$q")
te=$(line epochs "$t")
check default epochs -1 default -- 
check file epochs 20 "$q:$qe" -- -c "$q"
check set_beats_file epochs 7 "override --set epochs=7" -- -c "$q" --set epochs=7
check set_before_file epochs 7 "override --set epochs=7" -- --set epochs=7 -c "$q"
check later_file epochs 30 "$t:$te" -- -c "$q" -c "$t"
check later_file_partial checkpoint_interval 1 "$q:$(line checkpoint_interval "$q")" -- -c "$q" -c "$t"
check later_file_default job_name '"benchmark"' default -- -c "$q" -c "$t"
check last_override_wins epochs 9 "override --epochs 9" -- -c "$q" --set epochs=7 --epochs 9
check last_override_wins2 epochs 7 "override --set epochs=7" -- -c "$q" --epochs 9 --set epochs=7
check flag_eq problem_scale 6 "override --problem-scale=6" -- --problem-scale=6 2>/dev/null
check flag_T0 T_0 5 "override --T-0 5" -- --T-0 5
check flag_T_mult T_mult 1 "override --T-mult 1" -- --T-mult 1
check flag_list dc_num_shards "[1, 2, 1]" "override --dc-num-shards 1 2 1" -- --dc-num-shards 1 2 1
check flag_scheduler scheduler '"dmda"' "override --scheduler dmda" -- --scheduler dmda
check flag_ncpu ncpu 2 "override --ncpu 2" -- --ncpu 2
check flag_lr starting_learning_rate 0.002 "override --starting-learning-rate 2e-3" -- --starting-learning-rate 2e-3
check flag_dir fract_base_dir '"/tmp/fr"' "override --fract-base-dir /tmp/fr" -- --fract-base-dir /tmp/fr
check set_list dc_shard_dims "[4, 3, 2]" "override --set dc_shard_dims=[4,3,2]" -- --set "dc_shard_dims=[4,3,2]"
check set_quoted_string job_name '"a: b"' "override --set job_name=\"a: b\"" -- --set 'job_name="a: b"'
check set_empty_string scheduler '""' "override --set scheduler=\"\"" -- --set 'scheduler=""'
check bool_yes trace 1 "override --set trace=yes" -- --set trace=yes
check bool_False trace 0 "override --set trace=False" -- --set trace=False
check bool_true trace 1 "override --set trace=true" -- --set trace=true
check floor problem_scale 6 "override --set problem_scale=6.7" -- --set problem_scale=6.7
check floor_exact problem_scale 6 "override --set problem_scale=6.0" -- --set problem_scale=6.0
check derived_layers unet_layers 3 derived -- --set problem_scale=6
check derived_vol vol_size 64 derived -- --set problem_scale=6
check derived_points point_num 1024 derived -- --set problem_scale=6
check derived_quick unet_layers 2 derived -- -c "$q"

# Flooring warns on stderr.
n=$((n + 1))
err=$("$bin" --set problem_scale=6.7 2>&1 >/dev/null)
if grep -q "warning: .*problem_scale.*6.7.*floor = 6" <<<"$err"; then echo "ok   floor_warning: $err"
else fail "floor_warning: stderr was '$err'"; fi

# -v lists every key exactly once (as many lines as the generated docs table has rows), and -vv too.
n=$((n + 1))
keys=$("$bin" --markdown | grep -c '^| `')
for v in -v -vv; do
  lines=$("$bin" $v -c "$q" | grep -vc '^#')
  uniq=$("$bin" $v -c "$q" | grep -v '^#' | cut -d: -f1 | sort -u | wc -l)
  if [ "$lines" -ne "$keys" ] || [ "$uniq" -ne "$keys" ]; then
    fail "listing $v: $lines lines, $uniq distinct keys, expected $keys"
  else echo "ok   listing $v: $lines keys"; fi
done

# --help exits 0 and lists the shared options and the upstream-style flags.
n=$((n + 1))
help=$("$bin" --help)
rc=$?
missing=""
for o in -c --set -v --problem-scale --n-categories --fract-base-dir --base-run-dir --seed --epochs \
  --unet-bottleneck-dim --n-instances-used-per-fractal --local-batch-size --starting-learning-rate \
  --min-learning-rate --T-0 --T-mult --datagen-batch-size --scheduler --ncpu; do
  grep -q -- " $o[ ,]" <<<"$help" || missing="$missing $o"
done
if [ "$rc" -ne 0 ] || [ -n "$missing" ]; then fail "help: exit $rc, missing:$missing"
else echo "ok   help: exit 0, every option listed"; fi

echo "$n checks, $failed failed"
[ "$failed" -eq 0 ]
