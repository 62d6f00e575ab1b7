#!/usr/bin/env bash
# SIGINT to mpirun during a 2-rank run (Open MPI passes the interruption on to every rank): the
# ranks agree to stop at the same step boundary, rank 0 writes a verified checkpoint_last and the
# partial epoch's row, the job exits non-zero with the interruption named, and restart.sh-style
# resume in a 2-rank run ends where an uninterrupted 2-rank run ends (same CSV rows, parameters
# within 1e-5).
source "${0%/*}/lib.sh" || { echo "FAIL: cannot load ${0%/*}/lib.sh" >&2; exit 1; }
t0=$(date +%s)
E=(--set epochs=20 --set checkpoint_interval=1 "${SMALL[@]}") # ~0.15 s per epoch: the signal lands mid-run

out=$(benchn 2 "${E[@]}" --set base_run_dir="$T/ref" 2>&1) || die "uninterrupted 2-rank run exited with $?: $out"
REF=$(run_dir_of "$T/ref")

# mpirun itself must be the signalled process ($!), not a subshell or timeout
"$MPIRUN" "${MPIFLAGS[@]}" -np 2 "$T/rank.sh" "$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "${E[@]}" \
  --set base_run_dir="$T/cut" >"$T/cut.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do
  f=$(find "$T/cut" -name train_stats.csv 2>/dev/null | head -1)
  [ -n "$f" ] && [ "$(wc -l <"$f")" -ge 2 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.05
done
sleep 0.3
kill -INT $pid 2>/dev/null || die "the run ended before the signal: $(cat "$T/cut.log")"
for _ in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
kill -0 $pid 2>/dev/null && { kill -KILL $pid; die "mpirun still running 60 s after SIGINT: $(tail -20 "$T/cut.log")"; }
wait $pid
st=$?
echo "mpirun exit status after SIGINT: $st"
[ $st != 0 ] || die "SIGINT: mpirun exited 0 (did the run finish before the signal?): $(cat "$T/cut.log")"
grep -q "interrupted by SIG\(INT\|TERM\) in epoch" "$T/cut.log" || die "no interruption message: $(cat "$T/cut.log")"
R=$(run_dir_of "$T/cut")
st=$("$MPI_TOOL" ckpt-state "$R/checkpoints/checkpoint_last.bin") || die "the checkpoint after SIGINT does not verify"
grep -E "^(epoch|partial_epoch|partial_steps)=" <<<"$st"
ps=$(sed -n 's/^partial_steps=//p' <<<"$st")
last=$(tail -1 "$R/train_stats.csv")
IFS=, read -r _ _ _ vle vla _ vd _ <<<"$last"
if [ "${ps:-0}" -gt 0 ]; then
  [ "$vle,$vla,$vd" = "nan,nan,nan" ] || die "stopped after $ps steps of an epoch, but the last CSV row is not a partial row: $last"
  echo "partial row: $last"
else
  echo "note: the signal landed between epochs (no partial row)"
fi

out=$(benchn 2 "${E[@]}" --run-dir "$R" 2>&1) || die "2-rank resume exited with $?: $out"
"$TRAIN_TOOL" csv-cmp "$R/train_stats.csv" "$REF/train_stats.csv" || die "resumed CSV differs from the uninterrupted run"
"$MPI_TOOL" ckpt-close "$R/checkpoints/checkpoint_last.bin" "$REF/checkpoints/checkpoint_last.bin" 1e-5 ||
  die "resumed parameters differ from the uninterrupted run"
echo "PASS in $(($(date +%s) - t0)) s"
