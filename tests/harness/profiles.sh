#!/usr/bin/env bash
# The shipped profiles and weights: configs/profiles/{standard,smoke,runtimes,runtimes-sweep,schedulers}.yml load,
# their config files exist, the setup check comes first, CUDA tests are skipped without CUDA, every
# group the standard suite can produce (scaling.<k> included) has a weight in
# configs/weights/standard.yml, and every run is sized by time (--max-time) so that it records enough
# rate slices for the steady rate on any machine, however fast.
. "$(dirname "$0")/lib.sh"
W=$SF_SOURCE_DIR/configs/weights/standard.yml

for p in standard smoke runtimes runtimes-sweep schedulers; do
  SF_HAVE_CUDA=1 "$SCAFFOLD" jobs "$p" -o "$T/out" --dry-run > "$T/$p.txt" 2> "$T/$p.err"; rc=$?
  check "$p: dry run exits 0 (got $rc; $(cat "$T/$p.err"))" test "$rc" -eq 0
  check "$p: every config file exists" lacks "$T/$p.txt" "not found"
done
FIRST=$(grep -m1 '^Running:' "$T/standard.txt" | sed -E 's/.*--experiment-name ([^ ]+) .*/\1/')
check "standard: the setup check runs first (got $FIRST)" test "$FIRST" = standard.setup
for t in datagen convergence scaling cuda_cpu_only cuda_gpu_only cuda_mixed; do
  check "standard: has $t" grep -q -- "--experiment-name standard.$t " "$T/standard.txt"
done
for s in eager lws dmda dmdas; do
  for ps in 5 6; do
    check "standard: train_ps${ps}_$s uses scheduler $s at problem_scale $ps with --max-time" \
      grep -qE -- "--experiment-name standard.train_ps${ps}_$s .*--set problem_scale=$ps .*--set scheduler=$s .*--max-time [0-9]+" "$T/standard.txt"
  done
done
SF_HAVE_CUDA=0 "$SCAFFOLD" jobs standard -o "$T/out" --dry-run > "$T/nocuda.txt" 2>&1
check "standard without CUDA: the CUDA tests are skipped with a reason" \
  test "$(grep -c 'requires CUDA workers' "$T/nocuda.txt")" -eq 3

# Every group of the plan has a weight (progression run k -> standard.scaling.<k>), and the
# weights name only groups the suite can produce (scaling up to 4 = Debian's STARPU_MAXCPUS).
grep '^Running:' "$T/standard.txt" | sed -E 's/.*--experiment-name ([^ ]+) --job-id [0-9]+\.([0-9]+) --extra (.*) -- .*/\1 \2 \3/' |
  while read -r name dev extra; do
    case "$extra" in *'"type":"progression"'*) name="$name.$((dev + 1))" ;; esac
    echo "$name"
  done | sort -u > "$T/groups"
while read -r g; do
  check "weight for $g" grep -q "^$g: {weight: [0-9]" "$W"
done < "$T/groups"
for k in 1 2 3 4; do check "weight for standard.scaling.$k" grep -q "^standard.scaling.$k: {weight: 2}" "$W"; done
check "setup check weight 4" grep -q '^standard.setup: {weight: 4}' "$W"
N=$(grep -c '^standard\.' "$W")
check "19 weighted groups (got $N)" test "$N" -eq 19

# runtimes: one test per task runtime (docs/runtimes.md), each weighted.
for rt in starpu openmp sequential; do
  check "runtimes: $rt runs with --set runtime=$rt" grep -qE -- "--experiment-name runtimes.$rt .*--set runtime=$rt" "$T/runtimes.txt"
  check "runtimes: weight for runtimes.$rt" grep -q "^runtimes.$rt: {weight: [0-9]" "$SF_SOURCE_DIR/configs/weights/runtimes.yml"
done

# runtimes-sweep: six shapes x (StarPU, OpenMP with 1 and 2 workers, sequential), every shape with its sequential
# run (the granularity report's reference) and one slab count for all its runtimes (the same graph).
for sh in ps5s4 ps4s1 ps4s8 ps4b2s8 ps3b2s4 ps3b1s4; do
  for se in "starpu1 starpu 1" "starpu2 starpu 2" "openmp1 openmp 1" "openmp2 openmp 2" "sequential1 sequential 1"; do
    set -- $se
    check "runtimes-sweep: $sh-$1 on $2 with $3 workers" \
      grep -qE -- "--experiment-name runtimes-sweep.$sh-$1 .*--set slabs=[0-9]+ --set runtime=$2 --set ncpu=$3 " "$T/runtimes-sweep.txt"
  done
done

# Sized by time: every run of every shipped profile stops by --max-time S with S / sample-duration >= 6
# (twice the 3 slices the steady rate needs, so that a run is never borderline), and none by a
# --max-count (a sample count sized for one machine is too short on a faster one); the datagen test
# is one timed phase whose --sample-duration gives it >= 3 slices from 0.15 s of generation on.
for p in standard smoke runtimes runtimes-sweep schedulers; do
  python3 "$(dirname "$0")/profile_sizing.py" < "$T/$p.txt" > "$T/$p.sizing" 2>&1
  check "$p: every run sized by --max-time, enough slices: $(cat "$T/$p.sizing")" test ! -s "$T/$p.sizing"
done
check "standard: the setup check trains to its time limit (target_dice 1)" \
  grep -qE -- "--experiment-name standard.setup .*--set target_dice=1 .*--max-time 10" "$T/standard.txt"
check "smoke: 3 s of steps per run" grep -qE -- "--experiment-name smoke.setup .*--set target_dice=1 --max-time 3$" "$T/smoke.txt"

# The weights file loads by suite name in report.
fake_run "$T/res" standard.setup 0.0 '{}' --max-time 2
"$SCAFFOLD" report "$T/res" --weights standard > "$T/r.txt" 2> "$T/r.err"; rc=$?
check "report --weights standard exits 0 (got $rc; $(cat "$T/r.err"))" test "$rc" -eq 0
check "report lists the weighted rows" grep -qE "^standard.cuda_mixed +8.00 +nan" "$T/r.txt"
finish
