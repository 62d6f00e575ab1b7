#!/usr/bin/env bash
# The memory plan against the measured peak RSS: `scaffold benchmark` at problem_scale $MEMPLAN_PS
# (default 5) with the default U-Net shape (base 64, bottleneck 3, local_batch_size 1, Adam) on a
# small dataset, 2 CPU workers, $MEMPLAN_STEPS training samples (default 2) with one warm-up step,
# under /usr/bin/time -v. The plan's total (printed before any work) must be within 15 % of the
# maximum resident set size. CTest runs ps 5; docs/config.md (max_memory_gib) gives the ps 6 figures:
#   MEMPLAN_PS=6 SF_BINARY=$PWD/build/scaffold SF_SOURCE_DIR=$PWD TRAIN_TOOL=$PWD/build/tests/train/train_tool \
#     bash tests/train/test_memory_plan_rss.sh
source "$(dirname "$0")/lib.sh"
PS=${MEMPLAN_PS:-5}
STEPS=${MEMPLAN_STEPS:-2}
read -r -a EXTRA <<<"${MEMPLAN_ARGS:-}" # e.g. MEMPLAN_ARGS="--set activation_checkpointing=1"
case "${SF_SANITIZED:-OFF}" in ON | 1 | TRUE | YES | on | true)
  echo "SKIP: sanitizer build: ASan's shadow memory, redzones and quarantine change the peak RSS, so the" \
    "plan is checked against the release build's RSS only"
  exit 77 ;;
esac
[ -x /usr/bin/time ] || { echo "SKIP: /usr/bin/time (GNU time) is not installed"; exit 77; }
/usr/bin/time -v "$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "${SMALL[@]}" --set "base_run_dir=$T/r" \
  --set problem_scale="$PS" --set unet_bottleneck_dim=3 --set unet_base_channels=64 --set group_norm_groups=8 \
  --set epochs=1 --set warmup_batches=1 --max-count "$STEPS" ${EXTRA[@]+"${EXTRA[@]}"} >"$T/log" 2>&1 ||
  die "benchmark at problem_scale $PS failed: $(tail -30 "$T/log")"
plan=$(sed -n 's/^.*  total \([0-9.]*\) MiB.*/\1/p' "$T/log" | head -1)
[ -n "$plan" ] || die "no memory plan total in the log: $(head -30 "$T/log")"
rss_kb=$(sed -n 's/^.*Maximum resident set size (kbytes): \([0-9]*\).*/\1/p' "$T/log")
[ -n "$rss_kb" ] || die "no maximum resident set size from /usr/bin/time -v"
grep -A4 "memory plan" "$T/log" | sed 's/^/  /'
awk -v p="$plan" -v r="$rss_kb" -v ps="$PS" 'BEGIN {
  rss = r / 1024; err = (p - rss) / rss * 100
  printf "problem_scale %d: plan %.1f MiB, measured peak RSS %.1f MiB, plan - measured = %+.1f %%\n", ps, p, rss, err
  if (err > 15 || err < -15) { printf "FAIL: the plan is off by %+.1f %% (allowed: 15 %%)\n", err; exit 1 }
}' || exit 1
echo "PASS"
