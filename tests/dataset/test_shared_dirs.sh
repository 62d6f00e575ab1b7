#!/usr/bin/env bash
# Runs that share fract_base_dir and dataset_dir (array jobs, several benchmarks started at once):
#  1. 10 times, 3 `scaffold benchmark -c configs/tiny.yml --max-count 2` started at once in a fresh
#     directory: all succeed and exactly one dataset directory exists (one process generates the
#     library and the dataset under a lock, the others wait and reuse them);
#  2. a generator killed with SIGKILL while it holds a lock (mid-library, then mid-dataset), with two
#     more runs waiting behind it: both succeed, one dataset directory, no staging directory left.
set -u
BIN=${SF_BINARY:?SF_BINARY is not set}
SRC=${SF_SOURCE_DIR:?SF_SOURCE_DIR is not set}
T=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
export STARPU_SILENT=1
fail() {
  echo "FAIL: $*"
  exit 1
}
bench() { # directory, log, extra --set arguments...: one benchmark run in the background
  local d=$1 log=$2
  shift 2
  mkdir -p "$d/starpu.$(basename "$log")"
  STARPU_HOME="$d/starpu.$(basename "$log")" "$BIN" benchmark -c "$SRC/configs/tiny.yml" --max-count 2 \
    --set ncpu=1 --set n_instances_used_per_fractal=12 --set fract_base_dir="$d/fractals" \
    --set dataset_dir="$d/datasets" --set base_run_dir="$d/runs" "$@" >"$log" 2>&1 &
}
# the dataset directories (published, and staging) under the one config_id directory of $1
datasets() { find "$1/datasets" -mindepth 2 -maxdepth 2 -type d ! -name '.tmp_*' | wc -l; }
staging() { find "$1/datasets" -mindepth 2 -maxdepth 2 -type d -name '.tmp_*' | wc -l; }

# ---- 1. three at once, 10 times --------------------------------------------------------------
waited=0
for round in $(seq 1 10); do
  d=$T/c$round
  mkdir -p "$d"
  for k in 1 2 3; do bench "$d" "$d/$k.log"; done
  for p in $(jobs -p); do
    wait "$p" || fail "round $round: a run failed (status $?): $(cat "$d"/*.log)"
  done
  [ "$(datasets "$d")" = 1 ] || fail "round $round: $(datasets "$d") dataset directories: $(ls -a "$d"/datasets/*)"
  [ "$(staging "$d")" = 0 ] || fail "round $round: staging directories left: $(ls -a "$d"/datasets/*)"
  n=$(grep -l "waiting for another process" "$d"/*.log | wc -l)
  waited=$((waited + n))
  rm -rf "$d"
done
echo "ok: 10 rounds of 3 concurrent runs, each with one dataset ($waited run(s) waited for a lock)"

# ---- 2. the lock holder killed mid-generation ------------------------------------------------
# wait_for DIR FIND-ARGS...: until find DIR FIND-ARGS lists something (at most 20 s); 0 if it did
wait_for() {
  local dir=$1
  shift
  for _ in $(seq 1 4000); do
    [ -n "$(find "$dir" "$@" 2>/dev/null | head -1)" ] && return 0
    kill -0 "$holder" 2>/dev/null || return 1
    sleep 0.005
  done
  return 1
}
killed_case() { # name, directory, extra --set arguments...; the holder's stage is found by $stage
  local name=$1 d=$2
  shift 2
  mkdir -p "$d"
  bench "$d" "$d/holder.log" "$@"
  holder=$!
  "$stage" "$d" || {
    wait "$holder"
    echo "note: $name: the holder (status $?) finished before it could be killed; retrying"
    return 1
  }
  bench "$d" "$d/w1.log" "$@"
  local w1=$!
  bench "$d" "$d/w2.log" "$@"
  local w2=$!
  # both are started and waiting on the lock (or past it) before the holder dies
  for _ in $(seq 1 2000); do
    [ "$(grep -l "waiting for another process" "$d/w1.log" "$d/w2.log" 2>/dev/null | wc -l)" = 2 ] && break
    sleep 0.005
  done
  kill -9 "$holder"
  wait "$holder" 2>/dev/null
  wait "$w1" || fail "$name: a run waiting behind the killed holder failed: $(cat "$d/w1.log")"
  wait "$w2" || fail "$name: a run waiting behind the killed holder failed: $(cat "$d/w2.log")"
  [ "$(datasets "$d")" = 1 ] || fail "$name: $(datasets "$d") dataset directories: $(ls -a "$d"/datasets/*)"
  [ "$(staging "$d")" = 0 ] || fail "$name: staging directories left: $(ls -a "$d"/datasets/*)"
  grep -q "waiting for another process" "$d/w1.log" "$d/w2.log" || fail "$name: no run waited for the lock"
  echo "ok: $name: killed with SIGKILL, the two runs waiting behind it succeeded with one dataset"
  return 0
}
# mid-library: some instance files written (problem_scale 6 and 12 classes make the library last)
lib_stage() { wait_for "$1/fractals" -name '*.npy'; }
# mid-dataset: the staging directory holds some volumes
ds_stage() { wait_for "$1/datasets" -path '*/.tmp_*/*.npy'; }
for try in 1 2 3; do
  stage=lib_stage
  killed_case "library generator" "$T/kl$try" --set problem_scale=6 --set n_categories=12 && break
  [ "$try" = 3 ] && fail "the library generator finished before it could be killed, 3 times"
done
for try in 1 2 3; do
  stage=ds_stage
  killed_case "dataset generator" "$T/kd$try" --set problem_scale=6 --set n_categories=4 \
    --set n_instances_used_per_fractal=145 && break
  [ "$try" = 3 ] && fail "the dataset generator finished before it could be killed, 3 times"
done
grep -q "left by process [0-9]*, which no longer runs" "$T"/kd*/w*.log ||
  fail "the killed dataset generator's staging directory was not reported removed"
exit 0
