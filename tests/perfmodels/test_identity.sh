#!/usr/bin/env bash
# The identity of the perfmodels and the stale-class report (docs/perfmodels.md, "The identity of a
# perfmodel"), one case per CTest test:
#   ids     cmake/PerfmodelIds.cmake on a scratch copy of the sources: the same tree gives the same
#           identities (no git needed); one byte changed in a file of one family changes that family's
#           identity only (maxpool3d), a file of src/kernels/gemm changes conv1, conv3d and upconv3d only,
#           a shared file (src/kernels/common) changes all; a file the table names that is gone stops the
#           script naming it; the build's generated header lists the same codelets as the table
#   sim     `scaffold simulate` on a copy of a shipped class (no scaffold-sim needed): models under other
#           symbols are reported and refused with exit 2 before anything runs, -v lists each stale codelet
#           with the symbol this build reads; renamed to this build's symbols, the class passes the check;
#           then the models of the families whose identity one changed kernel file moves (the scratch
#           copy of `ids`) are reported stale, exactly those; --allow-stale runs (a stand-in scaffold-sim)
#           and marks every predicted figure, the STALE file, study.md and study.csv
#   run     a dmda `scaffold steps` on a class that matches this machine: the start-up report names the
#           stale codelets (-v lists them); with this build's symbols it is silent; lws says nothing
# usage: test_identity.sh ids|sim|run   (SF_SOURCE_DIR, SF_BINARY, SF_BUILD_DIR: set by CTest)
set -u
MODE=$1
SRC=${SF_SOURCE_DIR:?} BIN=${SF_BINARY:?} BUILD=${SF_BUILD_DIR:?}
T=$(mktemp -d /tmp/sf-pmid.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
err() { echo "FAIL ($MODE): $*"; fail=1; }
export HOME=$T/home XDG_CACHE_HOME=$T/cache STARPU_SILENT=1
unset STARPU_PERF_MODEL_DIR STARPU_HOSTNAME STARPU_HOME STARPU_SCHED SF_PERFMODELS_DIR
mkdir -p "$HOME"
HDR=$BUILD/generated/sf_perfmodel_ids.h
[ -f "$HDR" ] || { echo "FAIL: no generated $HDR"; exit 1; }
M=$(sed -n 's/^#define SF_PMID_NCODELETS \([0-9]*\)$/\1/p' "$HDR")

# A scratch copy of what the identities are made of, and the identities of a tree: "family id" lines.
scratch() {
  mkdir -p "$1"
  cp -r "$SRC/cmake" "$SRC/codelets" "$SRC/include" "$1/"
  mkdir -p "$1/src" && cp -r "$SRC/src/kernels" "$1/src/"
}
ids() { # tree out -> writes out.h, prints nothing; status of the script
  cmake -DSRC="$1" -DOUT="$2.h" -P "$SRC/cmake/PerfmodelIds.cmake" >"$2.log" 2>&1 || return 1
  sed -n 's/^#define SF_PMID_FAMILY_\([a-z0-9_]*\) "\([0-9a-f]*\)"$/\1 \2/p' "$2.h" >"$2"
}
changed() { join "$1" "$2" | awk '$2 != $3 {print $1}' | sort | tr '\n' ' ' | sed 's/ $//'; }
mutate() { printf '/* one more byte */\n' >>"$1"; }

# families whose identity changes when one kernel file of maxpool3d changes: B0 (unchanged copy) vs B1
family_change() {
  scratch "$T/tree"
  ids "$T/tree" "$T/b0" || { err "the identity script failed: $(cat "$T/b0.log")"; return; }
  mutate "$T/tree/src/kernels/maxpool3d/maxpool3d.c"
  ids "$T/tree" "$T/b1" || { err "the identity script failed: $(cat "$T/b1.log")"; return; }
}

case $MODE in
ids)
  family_change
  [ "$(wc -l <"$T/b0")" -ge 10 ] || err "too few families: $(cat "$T/b0")"
  ids "$T/tree" "$T/again" && cmp -s "$T/b1" "$T/again" || err "the same tree gave other identities"
  [ "$(changed "$T/b0" "$T/b1")" = maxpool3d ] || err "maxpool3d.c changed, identities changed: '$(changed "$T/b0" "$T/b1")'"
  mutate "$T/tree/src/kernels/gemm/gemm_direct.c"
  ids "$T/tree" "$T/b2" || err "script failed: $(cat "$T/b2.log")"
  [ "$(changed "$T/b1" "$T/b2")" = "conv1 conv3d upconv3d" ] ||
    err "gemm_direct.c changed, identities changed: '$(changed "$T/b1" "$T/b2")', want conv1 conv3d upconv3d"
  mutate "$T/tree/src/kernels/common/bf16.c"
  ids "$T/tree" "$T/b3" || err "script failed: $(cat "$T/b3.log")"
  [ "$(changed "$T/b2" "$T/b3" | wc -w)" = "$(wc -l <"$T/b3")" ] || err "a shared file changed, not every identity did"
  # unchanged header: not rewritten (nothing recompiles)
  touch -d '2000-01-01' "$T/b3.h"
  ids "$T/tree" "$T/b3" && [ "$(stat -c %Y "$T/b3.h")" = "$(date -d 2000-01-01 +%s)" ] ||
    err "an unchanged header was rewritten"
  rm "$T/tree/codelets/halo_plane.c"
  ids "$T/tree" "$T/b4" && err "the script ignored a file of the table that is gone"
  grep -q "codelets/halo_plane.c' matches no file" "$T/b4.log" || err "no message naming the missing file: $(cat "$T/b4.log")"
  # the build's header has the table's codelets (the hashes may differ: the tree may have changed since)
  ids "$SRC" "$T/now" || err "script failed on the source tree: $(cat "$T/now.log")"
  diff <(grep -o '^#define SF_PMFAM_[a-z0-9_]* "[a-z0-9_]*"' "$HDR") <(grep -o '^#define SF_PMFAM_[a-z0-9_]* "[a-z0-9_]*"' "$T/now.h") >"$T/d" ||
    err "the build's header lists other codelets than the table: $(cat "$T/d")"
  [ "$M" = "$(grep -c '^#define SF_PMFAM_' "$HDR")" ] || err "SF_PMID_NCODELETS $M is not the codelet count"
  ;;
sim)
  CLS=""
  for d in "$SRC"/perfmodels/*/; do
    [ -f "$d/MATCH" ] && [ -f "$d/sampling/bus/$(basename "$d").platform.v4.xml" ] && CLS=$(basename "$d") && break
  done
  [ -n "$CLS" ] || { echo "FAIL: no shipped class with a SimGrid platform"; exit 1; }
  C=$T/$CLS
  cp -r "$SRC/perfmodels/$CLS" "$C"
  D=$C/sampling/codelets/45
  run_sim() { # name args...: output in $T/name.out / .err, status in $T/name.rc
    local name=$1
    shift
    SCAFFOLD_SIM=${FAKE_SIM:-$T/no-sim} "$BIN" simulate --class "$C" --set problem_scale=4 --set unet_base_channels=8 \
      --mix 2:0:0 --out "$T/$name.dir" "$@" >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
  }
  # 1. the class as shipped, models of older kernels: refused before anything runs
  n_old=$(ls "$D" | grep -c "\.$CLS\$")
  run_sim shipped --schedulers dmda
  [ "$(cat "$T/shipped.rc")" = 2 ] || err "shipped class: exit $(cat "$T/shipped.rc"), want 2"
  grep -q "perfmodels $CLS: [1-9][0-9]* of $M codelets were calibrated for other kernels (list with -v; families: .*); a simulation would sleep .*scaffold calibrate --class $CLS.*--allow-stale" "$T/shipped.err" ||
    err "shipped class: no stale report: $(cat "$T/shipped.err")"
  [ ! -s "$T/shipped.out" ] && [ ! -e "$T/shipped.dir" ] || err "something ran or was written for a refused class"
  run_sim verbose --schedulers dmda -v
  grep -c '^  stale: ' "$T/verbose.err" >"$T/nstale"
  [ "$(cat "$T/nstale")" = "$(sed -n 's/.*: \([0-9]*\) of [0-9]* codelets were calibrated.*/\1/p' "$T/shipped.err")" ] ||
    err "-v lists $(cat "$T/nstale") stale codelets, the summary says otherwise"
  [ $(($(grep -c '^  stale: ' "$T/verbose.err") + $(grep -c '^  not in the class: ' "$T/verbose.err"))) = "$M" ] ||
    err "-v does not list every codelet that is not current: $(cat "$T/verbose.err")"
  # 2. renamed to this build's symbols (what scaffold calibrate with this build would name them): passes
  sed -n "s/^  stale: .* the class has \(.*\)\.$CLS, this build reads \(.*\)\.$CLS\$/\1 \2/p" "$T/verbose.err" |
    while read -r old new; do mv "$D/$old.$CLS" "$D/$new.$CLS"; done
  run_sim fresh --schedulers dmda
  grep -q "calibrated for other kernels" "$T/fresh.err" && err "renamed class still reported: $(cat "$T/fresh.err")"
  grep -q "no scaffold-sim at $T/no-sim" "$T/fresh.err" || err "renamed class: did not reach the scaffold-sim check: $(cat "$T/fresh.err")"
  # 3. one kernel file changed: the class was calibrated by the changed tree's build (its identities
  #    for the families that changed); this build must report exactly those families' codelets
  family_change
  fams=$(changed "$T/b0" "$T/b1")
  [ "$fams" = maxpool3d ] || err "changing maxpool3d.c changed the identities of '$fams'"
  grep "^  stale: \|^  not in the class: " "$T/verbose.err" |
    sed -n "s/^  [a-z ]*: \([a-z0-9_]*\) (family \([a-z0-9_]*\)):.* this build reads \(.*\)\.$CLS\$/\1 \2 \3/p" >"$T/table"
  want=""
  while read -r op fam sym; do
    for f in $fams; do
      [ "$f" = "$fam" ] && [ -f "$D/$sym.$CLS" ] || continue
      newid=$(awk -v f="$f" '$1 == f {print $2}' "$T/b1")
      mv "$D/$sym.$CLS" "$D/${sym%_*}_$newid.$CLS"
      want="$want $op"
    done
  done <"$T/table"
  [ -n "$want" ] || err "the class has no maxpool3d models to make stale"
  run_sim changed --schedulers dmda -v
  [ "$(cat "$T/changed.rc")" = 2 ] || err "changed family: exit $(cat "$T/changed.rc"), want 2"
  nwant=$(echo $want | wc -w)
  grep -q "perfmodels $CLS: $nwant of $M codelets were calibrated for other kernels (list with -v; families: maxpool3d)" "$T/changed.err" ||
    err "changed family: want '$nwant of $M ... families: maxpool3d': $(grep perfmodels "$T/changed.err")"
  got=$(sed -n 's/^  stale: \([a-z0-9_]*\) .*/\1/p' "$T/changed.err" | sort | tr '\n' ' ')
  [ "$got" = "$(echo $want | tr ' ' '\n' | sort | tr '\n' ' ')" ] || err "stale codelets '$got', want '$want'"
  # 4. --allow-stale: simulated anyway (a stand-in scaffold-sim), every figure marked
  cat >"$T/fake-sim" <<EOF
#!/bin/sh
ls "\$STARPU_PERF_MODEL_DIR/codelets/45" >"$T/fake-ls"
echo "predicted step time: median 0.100000 s (min 0.1, max 0.1 over 2 timed steps after 1 warm-up)"
echo "predicted throughput: 10.00 samples/s"
echo 'SFSTEPS {"simulated": true, "median_step_s": 0.1, "samples_per_s": 10, "tasks_per_step": 100, "transfer_bytes": 0, "workers": [{"kind": "CPU", "busy_share": 0.5, "tasks": 200}]}'
EOF
  chmod +x "$T/fake-sim"
  FAKE_SIM=$T/fake-sim run_sim refused --schedulers dmda
  [ "$(cat "$T/refused.rc")" = 2 ] || err "stale class ran without --allow-stale"
  FAKE_SIM=$T/fake-sim run_sim one --schedulers dmda --allow-stale
  [ "$(cat "$T/one.rc")" = 0 ] || err "--allow-stale: exit $(cat "$T/one.rc"): $(cat "$T/one.err")"
  grep -q "warning: simulate: perfmodels $CLS: $nwant of $M codelets .*--allow-stale: every predicted figure is marked stale" "$T/one.err" ||
    err "--allow-stale: no warning: $(cat "$T/one.err")"
  [ "$(grep -c '^predicted .*\[STALE perfmodels' "$T/one.out")" = 2 ] || err "predicted lines not marked: $(cat "$T/one.out")"
  grep -q "STALE (--allow-stale): perfmodels $CLS: $nwant of" "$T/one.dir/STALE" 2>/dev/null || err "no STALE file in the output"
  # the run's private copy read the old models under this build's symbols; the class itself is untouched
  for op in $want; do
    sym=$(awk -v o="$op" '$1 == o {print $3}' "$T/table")
    grep -qx "$sym.$CLS" "$T/fake-ls" || err "--allow-stale: the run's models lack $sym.$CLS"
    [ -f "$D/$sym.$CLS" ] && err "--allow-stale renamed a model of the class itself ($sym.$CLS)"
  done
  FAKE_SIM=$T/fake-sim run_sim study --schedulers lws,dmda --allow-stale
  [ "$(cat "$T/study.rc")" = 0 ] || err "--allow-stale study: exit $(cat "$T/study.rc"): $(cat "$T/study.err")"
  grep -q '^\*\*STALE perfmodels\*\*' "$T/study.dir/study.md" || err "study.md does not say stale: $(cat "$T/study.dir/study.md")"
  [ "$(grep -c '^| [a-z]* | 10 (stale) |$' "$T/study.dir/study.md")" = 2 ] || err "study.md cells not marked: $(cat "$T/study.dir/study.md")"
  [ "$(awk -F, 'NR > 1 && $NF == 1' "$T/study.dir/study.csv" | wc -l)" = 2 ] && head -1 "$T/study.dir/study.csv" | grep -q ',stale$' ||
    err "study.csv rows not marked stale: $(cat "$T/study.dir/study.csv")"
  # the same output folder, class current again: the marker goes
  while read -r op fam sym; do
    for f in $fams; do
      [ "$f" = "$fam" ] && mv "$D/${sym%_*}_$(awk -v f="$f" '$1 == f {print $2}' "$T/b1").$CLS" "$D/$sym.$CLS" 2>/dev/null
    done
  done <"$T/table"
  FAKE_SIM=$T/fake-sim run_sim one --schedulers dmda
  [ "$(cat "$T/one.rc")" = 0 ] || err "current class: exit $(cat "$T/one.rc"): $(cat "$T/one.err")"
  [ -e "$T/one.dir/STALE" ] && err "STALE left in the output of a current class"
  grep -q 'STALE' "$T/one.out" && err "a current class's figures are marked stale"
  ;;
run)
  # a class "sftest" that matches this machine: a shipped class's models and bus files, renamed
  ORIG=$SRC/perfmodels/epyc-zen3-2core/sampling
  S=$T/shipped/sftest
  mkdir -p "$S"
  (cd "$ORIG" && find . -type f) | while read -r f; do
    mkdir -p "$S/sampling/$(dirname "$f")"
    b=$(basename "$f")
    cp "$ORIG/$f" "$S/sampling/$(dirname "$f")/${b//epyc-zen3-2core/sftest}"
  done
  model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1 | sed 's/[[:space:]]*$//')
  re=$(printf '%s' "$model" | sed 's/[][\.*^$(){}+?|/]/\\&/g')
  echo "model_name = ^$re\$" >"$S/MATCH"
  export SF_PERFMODELS_DIR=$T/shipped
  steps() { # name sched [args]
    local name=$1 sched=$2
    shift 2
    "$BIN" steps --set problem_scale=4 --set unet_base_channels=8 --set ncpu=2 --set scheduler="$sched" --steps 1 \
      --warmup 0 --out "$T/$name.dir" "$@" >"$T/$name.out" 2>&1 || err "$name: scaffold steps failed: $(tail -5 "$T/$name.out")"
  }
  steps stale dmda -v
  grep -q "^runtime: perfmodels sftest: [1-9][0-9]* of $M codelets were calibrated for other kernels (list with -v; families: .*); dmda will calibrate them during this run; \`scaffold calibrate --class sftest\` fixes this for good" "$T/stale.out" ||
    err "no stale report at start-up: $(grep perfmodels "$T/stale.out")"
  n=$(sed -n 's/^runtime: perfmodels sftest: \([0-9]*\) of.*/\1/p' "$T/stale.out")
  [ "$(grep -c '^  stale: ' "$T/stale.out")" = "$n" ] || err "-v lists $(grep -c '^  stale: ' "$T/stale.out") codelets, the report says $n"
  steps lws lws
  grep -q "calibrated for other kernels" "$T/lws.out" && err "lws printed the stale report"
  # StarPU wrote this build's models into the per-user copy at the first run's end: the next run says so
  steps again dmda
  grep -q "^runtime: perfmodels sftest: $n of $M codelets were calibrated for other kernels .*dmda will calibrate them during this run (the cache already holds this build's models of [1-9][0-9]* of them, from earlier runs here)" "$T/again.out" ||
    err "second run: the cache's models of this build are not counted: $(grep perfmodels "$T/again.out")"
  # renamed to this build's symbols in the shipped tree: silent
  sed -n 's/^  stale: .* the class has \(.*\)\.sftest, this build reads \(.*\)\.sftest$/\1 \2/p' "$T/stale.out" |
    while read -r old new; do mv "$S/sampling/codelets/45/$old.sftest" "$S/sampling/codelets/45/$new.sftest"; done
  steps fresh dmda
  grep -q "^runtime: perfmodels: sftest (shipped" "$T/fresh.out" || err "the class was not used: $(grep perfmodels "$T/fresh.out")"
  grep -q "calibrated for other kernels" "$T/fresh.out" && err "a current class was reported stale: $(grep perfmodels "$T/fresh.out")"
  ;;
*) echo "usage: test_identity.sh ids|sim|run"; exit 2 ;;
esac
[ $fail = 0 ] && echo "perfmodel identity $MODE: OK"
exit $fail
