#!/usr/bin/env bash
# perfmodels_merge: scripts/merge-perfmodels (docs/scaling.md "3D shards ([2,2,2]): per-rank calibration")
# pools a footprint's samples from several ranks' folders exactly (n, sum, sum2 add; mean = sum / n), keeps
# footprints only one rank has, adds only what the class lacks with --new-only, and refuses a folder that
# is not a sampling folder and a footprint recorded with two data sizes, naming the file. No StarPU needed.
set -uo pipefail
SRC=${SF_SOURCE_DIR:?}
M="$SRC/scripts/merge-perfmodels"
T=$(mktemp -d /tmp/sf-merge-pm.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
model() { # folder, then history lines "hash size mean sum sum2 n"
  local d=$1/codelets/45
  shift
  mkdir -p "$d"
  {
    printf '# Performance Model Version\n45\n# number of combinations\n1\n# number of types devices\n1\n'
    printf '# device type\n0\n# device id\n0\n# number of cores\n1\n# number of implementations\n1\n'
    printf '# number of entries\n%d\n' $#
    printf '0.000000e+00\t0.000000e+00\t0.000000e+00\t0.000000e+00\tnan\tnan\t0\t0\t0\n'
    printf 'nan\tnan\tnan\n# not multiple-regression-base\n0\n'
    for e in "$@"; do
      read -r h s mean sum sum2 n <<<"$e"
      printf '%s\t%s\t0.000000e+00\t%s\t0.000000e+00\t%s\t%s\t%s\n' "$h" "$s" "$mean" "$sum" "$sum2" "$n"
    done
  } >"$d/sf_test_v1.cls"
}
entry() { awk -v h="$2" '$1 == h {print $4, $6, $8}' "$1/codelets/45/sf_test_v1.cls"; }
model "$T/r0" "aaaaaaaa 100 2.0 20.0 40.0 10" "bbbbbbbb 200 5.0 5.0 25.0 1"
model "$T/r1" "aaaaaaaa 100 4.0 40.0 160.0 10" "cccccccc 300 7.0 70.0 490.0 10"
"$M" "$T/class" "$T/r0" "$T/r1" >/dev/null || fail "merge failed"
[ "$(entry "$T/class" aaaaaaaa)" = "3.000000e+00 6.000000e+01 20" ] || fail "pooled entry: $(entry "$T/class" aaaaaaaa)"
[ "$(entry "$T/class" bbbbbbbb)" = "5.000000e+00 5.000000e+00 1" ] || fail "rank 0's own entry: $(entry "$T/class" bbbbbbbb)"
[ "$(entry "$T/class" cccccccc)" = "7.000000e+00 7.000000e+01 10" ] || fail "rank 1's own entry: $(entry "$T/class" cccccccc)"
model "$T/r2" "aaaaaaaa 100 9.0 90.0 810.0 10" "dddddddd 400 1.0 10.0 10.0 10"
"$M" --new-only "$T/class" "$T/r2" >/dev/null || fail "--new-only merge failed"
[ "$(entry "$T/class" aaaaaaaa)" = "3.000000e+00 6.000000e+01 20" ] || fail "--new-only changed an entry: $(entry "$T/class" aaaaaaaa)"
[ "$(entry "$T/class" dddddddd)" = "1.000000e+00 1.000000e+01 10" ] || fail "--new-only did not add: $(entry "$T/class" dddddddd)"
model "$T/bad" "aaaaaaaa 999 1.0 10.0 10.0 10"
out=$("$M" "$T/class" "$T/bad" 2>&1) && fail "two data sizes for one footprint were accepted"
grep -q "sf_test_v1.cls.*footprint aaaaaaaa.*100 and 999" <<<"$out" || fail "unclear error: $out"
out=$("$M" "$T/class" "$T/nowhere" 2>&1) && fail "a folder without codelets/45 was accepted"
grep -q "nowhere: no codelets/45" <<<"$out" || fail "unclear error: $out"
echo "perfmodels_merge: pooled, kept, --new-only and both refusals as documented"
