#!/usr/bin/env bash
# `scaffold benchmark` outputs (spec §7.1-7.2): the run directory holds the -c copy, config.yaml
# (which reloads), overrides.yaml, an executable restart.sh, train_stats.csv with upstream's exact
# header, checkpoints, a trace.json that parses with events on every worker, worker statistics,
# and the figures (checked when gnuplot exists). Also: the fractal library is generated first
# when missing, -v prints the network table, a log line per epoch, and upstream's "Epoch E
# completed in X seconds. ... Median of minibatch times: Z seconds. ..." line with plausible times.
source "$(dirname "$0")/lib.sh"

out=$(bench "${SMALL[@]}" -v --set "base_run_dir=$T/runs" --set epochs=2 --set checkpoint_interval=1 --set trace=1 2>&1) ||
  die "benchmark exited with $?: $out"
R=$(run_dir_of "$T/runs")
case "$(basename "$R")" in benchmark_2[0-9][0-9][0-9][01][0-9][0-3][0-9]-[0-9][0-9][0-9][0-9][0-9][0-9]) ;;
  *) die "run directory name $(basename "$R") is not benchmark_YYYYmmdd-HHMMSS" ;; esac
grep -q "generating it first" <<<"$out" || die "the missing fractal library was not generated first; output: $out"
grep -qi "total" <<<"$out" || die "-v did not print the network table"
for f in tiny.yml config.yaml overrides.yaml restart.sh train_stats.csv checkpoints/checkpoint_last.bin \
  checkpoints/checkpoint_best.bin trace.json worker_stats.json worker_stats.txt; do
  [ -s "$R/$f" ] || die "missing or empty $R/$f"
done
[ -x "$R/restart.sh" ] || die "restart.sh is not executable"
grep -q -- '--restart --run-dir "$RUN_DIR"' "$R/restart.sh" || die "restart.sh does not resume with --restart --run-dir: $(cat "$R/restart.sh")"
cmp -s "$CFG" "$R/tiny.yml" || die "tiny.yml in the run directory differs from the -c file"
"$TRAIN_TOOL" csv-check "$R/train_stats.csv" 2 || die "train_stats.csv check failed"
[ "$(head -1 "$R/train_stats.csv")" = "epoch,epoch_loss,overall_loss,val_loss_epoch,val_loss_avg,train_dice,val_dice,epoch_duration,optimizer_steps,total_optimizer_steps" ] ||
  die "header differs: $(head -1 "$R/train_stats.csv")"
[ "$(wc -l <"$R/train_stats.csv")" = 3 ] || die "expected the header and 2 rows, got $(wc -l <"$R/train_stats.csv") lines"
awk -F, 'NR > 1 && NF != 10 { exit 1 }' "$R/train_stats.csv" || die "a row does not have 10 columns"
cfg=$("$TRAIN_TOOL" config-get "$R/config.yaml" epochs trace n_instances_used_per_fractal problem_scale) ||
  die "config.yaml does not reload: $cfg"
grep -qx "epochs=2" <<<"$cfg" && grep -qx "trace=1" <<<"$cfg" && grep -qx "n_instances_used_per_fractal=15" <<<"$cfg" &&
  grep -qx "problem_scale=4" <<<"$cfg" || die "config.yaml values differ: $cfg"
grep -q "epochs: 2" "$R/overrides.yaml" || die "overrides.yaml lacks the override epochs: 2: $(cat "$R/overrides.yaml")"
"$TRAIN_TOOL" trace-check "$R/trace.json" 2 || die "trace.json check failed"
grep -q '"busy_pct"' "$R/worker_stats.json" || die "worker_stats.json has no busy_pct"
info=$("$TRAIN_TOOL" ckpt-info "$R/checkpoints/checkpoint_last.bin") || die "checkpoint_last does not verify"
grep -qx "epoch=2" <<<"$info" || die "checkpoint_last is not at epoch 2: $info"
[ "$(grep -c '^epoch [0-9]* | train_loss=' <<<"$out")" = 2 ] || die "expected 2 epoch log lines; output: $out"
# upstream's completion line (spec §7.3): 11 full batches an epoch, so at least 6 steps take >= the
# median Z and 6 Z <= X (the epoch's duration); the total train time grows by at least X an epoch.
done_re='^Epoch [0-9]+ completed in [0-9.]+ seconds\. Total train time so far: [0-9.]+ seconds\. '
done_re+='Median of minibatch times: [0-9.]+ seconds\. Optimizer steps this epoch: 11\. Total optimizer steps: (11|22)\.$'
done_lines=$(grep -E "$done_re" <<<"$out")
[ "$(wc -l <<<"$done_lines")" = 2 ] || die "expected 2 'Epoch E completed ...' lines with 11 steps each; output: $out"
awk '{ x = $5 + 0; y = $12 + 0; z = $18 + 0; if (!(z > 0 && 6 * z <= x && y >= tot + x - 0.01)) { print; exit 1 }
       tot = y }' <<<"$done_lines" ||
  die "implausible times in: $done_lines (want 0 < 6 x median <= epoch time <= total time)"
med=$(sed -n 's/^Median of epoch minibatch time medians: \([0-9.]*\) seconds\.$/\1/p' <<<"$out")
awk -v m="${med:-x}" '{ z[NR] = $18 + 0 }
  END { lo = z[1] < z[2] ? z[1] : z[2]; hi = z[1] + z[2] - lo; exit !(m >= lo - 1e-6 && m <= hi + 1e-6) }' <<<"$done_lines" ||
  die "final 'Median of epoch minibatch time medians' ($med) is not between the epochs' medians: $done_lines"
grep -q "^Benchmark run at scale 4 complete. Completed in .* seconds, 2 epochs, 22 optimizer steps.$" <<<"$out" ||
  die "final line missing; output: $out"
grep -q "^summary: not converged | time to solution" <<<"$out" || die "summary line missing; output: $out"
if command -v gnuplot >/dev/null; then
  for f in train_loss val_dice val_loss; do
    [ "$(head -c 4 "$R/figures/$f.png" | od -An -tx1 | tr -d ' ')" = "89504e47" ] || die "figures/$f.png is not a PNG"
  done
else
  echo "SKIPPED figure check: gnuplot not found in PATH (the run must warn instead)"
  grep -q "figures skipped" <<<"$out" || die "no warning about the skipped figures"
fi

# local_batch_size 2: 11 samples -> 5 full batches and a ragged one; epoch_loss sums every sample
bench "${SMALL[@]}" --set "base_run_dir=$T/b2" --set epochs=1 --set local_batch_size=2 >"$T/b2.log" 2>&1 ||
  die "batch-2 run failed: $(cat "$T/b2.log")"
row=$(sed -n 2p "$(run_dir_of "$T/b2")/train_stats.csv")
awk -F, '{ d = $2 / 11 - $3; exit !($9 == 6 && $10 == 6 && d < 1e-12 && d > -1e-12) }' <<<"$row" ||
  die "batch 2: expected 6 optimizer steps and overall_loss = epoch_loss / 11 samples; row: $row"
# the ragged 6th batch is not timed (as upstream); the 5 full ones are
b2_re='^Epoch 1 completed in [0-9.]+ seconds\. Total train time so far: [0-9.]+ seconds\. '
b2_re+='Median of minibatch times: [0-9.]*[1-9][0-9.]* seconds\. Optimizer steps this epoch: 6\. Total optimizer steps: 6\.$'
grep -Eq "$b2_re" "$T/b2.log" ||
  die "batch 2: no 'Epoch 1 completed ...' line with a median and 6 steps: $(grep Epoch "$T/b2.log")"
echo "PASS"
