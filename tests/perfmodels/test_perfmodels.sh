#!/usr/bin/env bash
# Shipped-perfmodel selection at runtime start (src/runtime/perfmodels.c), one case per CTest test:
#   match       a class whose MATCH fits this machine: StarPU runs with STARPU_PERF_MODEL_DIR = the
#               cache copy and STARPU_HOSTNAME = the class, the cache holds every shipped file, StarPU
#               predicts the shipped mean for shipped footprints; a second start does not copy again,
#               a changed shipped set is copied again; the shipped tree is never written
#   nomatch     no class fits (and one MATCH is unusable: warned, skipped): nothing set, StarPU
#               predicts nan; for dmda the start-up notice (no perfmodels for this machine class, what
#               dmda does meanwhile, how to calibrate), also with an empty SF_PERFMODELS_DIR; none for lws
#   user        STARPU_PERF_MODEL_DIR / STARPU_HOME set by the user: left alone, no cache written
#   unwritable  the cache cannot be created: a warning naming the path, the run goes on uncalibrated
# usage: test_perfmodels.sh MODE PROBE   (SF_SOURCE_DIR: the source tree, set by CTest)
set -u
MODE=$1 PROBE=$2
SRC=${SF_SOURCE_DIR:?SF_SOURCE_DIR must point at the source tree}
T=$(mktemp -d /tmp/sf-perfmodels.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
err() { echo "FAIL ($MODE): $*"; fail=1; }

# A private home and cache; none of the user's StarPU variables.
export HOME=$T/home XDG_CACHE_HOME=$T/cache STARPU_SILENT=1
unset STARPU_PERF_MODEL_DIR STARPU_HOSTNAME STARPU_HOME STARPU_SCHED STARPU_NCPU STARPU_NCPUS SF_PERFMODELS_DIR
mkdir -p "$HOME"

# A shipped directory with class "sftest": the repository's epyc-2core sampling tree, files renamed to
# the class (StarPU finds history files as <symbol>.<STARPU_HOSTNAME>).
SHIPPED=$T/shipped
ORIG=$SRC/perfmodels/epyc-2core/sampling
[ -d "$ORIG/codelets" ] || { echo "FAIL: no shipped perfmodels in $ORIG"; exit 1; }
mkdir -p "$SHIPPED/sftest/sampling"
(cd "$ORIG" && find . -type f) | while read -r f; do
  d=$SHIPPED/sftest/sampling/$(dirname "$f")
  mkdir -p "$d"
  b=$(basename "$f")
  cp "$ORIG/$f" "$d/${b//epyc-2core/sftest}"
done
HIST=$SHIPPED/sftest/sampling/codelets/45/sf_zero_v1.sftest
[ -f "$HIST" ] || { echo "FAIL: $HIST missing (shipped set lacks sf_zero_v1)"; exit 1; }

# MATCH keys that hold here: the exact model name (regex-escaped) and cpu family from /proc/cpuinfo.
model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1 | sed 's/[[:space:]]*$//')
family=$(sed -n 's/^cpu family[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1)
re=$(printf '%s' "$model" | sed 's/[][\.*^$(){}+?|/]/\\&/g')
{
  echo "# written by tests/perfmodels/test_perfmodels.sh"
  echo "model_name = ^$re\$"
  [ -n "$family" ] && echo "cpu_family = $family"
} >"$SHIPPED/sftest/MATCH"
CACHE=$XDG_CACHE_HOME/scaffold-starpu/perfmodels/sftest

probe() { # name sched [history file]: runs the probe, output in $T/<name>.out / .err
  local name=$1
  shift
  if ! "$PROBE" "$@" >"$T/$name.out" 2>"$T/$name.err"; then
    err "probe $* exited with $?"; cat "$T/$name.out" "$T/$name.err"
  fi
}
val() { sed -n "s/^$1=//p" "$T/$2.out" | head -1; }
# every EXPECTED line: expected_us equals mean_us (rel 1e-4) -> prints the count, or "bad" lines
expected_ok() {
  awk '/^EXPECTED footprint/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        n++; e = v["expected_us"]; m = v["mean_us"];
        if (e == "nan" || e == "-nan" || (e - m) > 1e-4 * m || (m - e) > 1e-4 * m) { print "bad: " $0; b++ } }
       END { if (!b) print n + 0 }' "$T/$1.out"
}
# the uncalibrated notice in $T/<name>.out: no perfmodels for this class, dmda (or $2) calibrating
# meanwhile with the first steps uninformed, StarPU's own directory, and `scaffold calibrate`
notice_ok() {
  local o=$T/$1.out s=${2:-dmda} learnt='\(holds none of our codelets yet\|already holds [0-9]* history file\)'
  [ "${3:-}" = first ] && learnt='holds none of our codelets yet: this is the first calibrating run'
  grep -q '^runtime: perfmodels: no class in .* matches this machine .*: no perfmodels exist for this machine class; the '"$s"' scheduler will calibrate from scratch$' "$o" ||
    err "$1: first notice line missing:"$'\n'"$(grep perfmodels "$o")"
  grep -q "^runtime: perfmodels: meanwhile $s calibrates while it runs: .*fewer than 10 timed samples.*first steps of each shape .* uninformed.*$XDG_CACHE_HOME/.starpu/sampling $learnt" "$o" ||
    err "$1: 'meanwhile $s calibrates ... uninformed ... sampling $learnt' line missing:"$'\n'"$(grep perfmodels "$o")"
  grep -q '^runtime: perfmodels: to calibrate this machine class: `scaffold calibrate --quick -c CONFIG` (11 calibrating dmda steps.*writes a class of your own' "$o" ||
    err "$1: the scaffold calibrate line is missing:"$'\n'"$(grep perfmodels "$o")"
}
tree_sum() { (cd "$1" && find . -type f ! -name .shipped-sha256 -print0 | sort -z | xargs -0 sha256sum); }

case $MODE in
match)
  export SF_PERFMODELS_DIR=$SHIPPED
  before=$(tree_sum "$SHIPPED")
  probe first dmda "$HIST"
  [ "$(val PERF_MODEL_DIR first)" = "$CACHE" ] || err "STARPU_PERF_MODEL_DIR is '$(val PERF_MODEL_DIR first)', want $CACHE"
  [ "$(val HOSTNAME first)" = sftest ] || err "STARPU_HOSTNAME is '$(val HOSTNAME first)', want sftest"
  grep -q "^runtime: perfmodels: sftest (shipped, cache $CACHE, copied now)" "$T/first.out" ||
    err "no 'runtime: perfmodels: sftest (shipped, cache $CACHE, copied now)' line:"$'\n'"$(cat "$T/first.out")"
  [ -f "$CACHE/.shipped-sha256" ] || err "$CACHE/.shipped-sha256 missing"
  # every shipped file is in the cache (StarPU may have added or updated some at shutdown)
  (cd "$SHIPPED/sftest/sampling" && find . -type f) | while read -r f; do
    [ -f "$CACHE/$f" ] || echo "missing $f"
  done >"$T/missing"
  [ -s "$T/missing" ] && err "cache copy lacks $(wc -l <"$T/missing") shipped file(s): $(head -3 "$T/missing" | tr '\n' ' ')"
  n=$(expected_ok first)
  case $n in
  bad*) err "StarPU's expected length differs from the shipped mean:"$'\n'"$n" ;;
  0) err "no footprint of $HIST checked:"$'\n'"$(grep EXPECTED "$T/first.out")" ;;
  *) echo "StarPU predicts the shipped mean for $n footprint(s) of sf_zero_v1" ;;
  esac
  # second start: the cache is current, nothing copied; StarPU's own updates to it are kept
  echo "# marker kept across starts" >>"$CACHE/codelets/45/sf_zero_v1.sftest.keep"
  probe second dmda "$HIST"
  grep -q "^runtime: perfmodels: sftest (shipped, cache $CACHE)$" "$T/second.out" ||
    err "second start: want 'runtime: perfmodels: sftest (shipped, cache $CACHE)', got: $(grep perfmodels "$T/second.out")"
  [ -f "$CACHE/codelets/45/sf_zero_v1.sftest.keep" ] || err "second start replaced an up-to-date cache"
  n=$(expected_ok second)
  case $n in bad* | 0) err "second start: shipped means not predicted: $n" ;; esac
  # a changed shipped set is copied again (and replaces the stale copy as a whole)
  echo "# recalibrated" >>"$SHIPPED/sftest/sampling/bus/sftest.config"
  before=$(tree_sum "$SHIPPED")
  probe third dmda
  grep -q "^runtime: perfmodels: sftest (shipped, cache $CACHE, copied now)" "$T/third.out" ||
    err "changed shipped set not copied again: $(grep perfmodels "$T/third.out")"
  [ -f "$CACHE/codelets/45/sf_zero_v1.sftest.keep" ] && err "stale cache file survived the re-copy"
  tail -1 "$CACHE/bus/sftest.config" | grep -q recalibrated || err "cache bus/sftest.config is not the new shipped one"
  [ "$(tree_sum "$SHIPPED")" = "$before" ] || err "the shipped tree was modified"
  ls -a "$XDG_CACHE_HOME/scaffold-starpu/perfmodels" | grep -q '^\.tmp-\|^\.old-' && err "temporary copies left behind"
  # lws: same set, no note
  probe lws lws
  [ "$(val PERF_MODEL_DIR lws)" = "$CACHE" ] || err "lws: STARPU_PERF_MODEL_DIR '$(val PERF_MODEL_DIR lws)'"
  grep -q '^runtime: perfmodels' "$T/lws.out" && err "lws printed a perfmodels line"
  ;;
nomatch)
  export SF_PERFMODELS_DIR=$SHIPPED
  echo "cores = 100000" >>"$SHIPPED/sftest/MATCH"
  mkdir -p "$SHIPPED/abad/sampling" && printf 'model_name = .\nbogus = 1\n' >"$SHIPPED/abad/MATCH" # unusable MATCH
  probe dmda dmda "$HIST"
  grep -q "^scaffold: warning: perfmodels: $SHIPPED/abad/MATCH line 2: unknown key 'bogus'" "$T/dmda.err" ||
    err "no warning for the unusable MATCH: $(cat "$T/dmda.err")"
  # a back-reference (exponential matching in glibc) is refused before regcomp, and the class ignored
  mkdir -p "$SHIPPED/aslow/sampling" && printf 'model_name = ^(.*)(.*)\\2\\1$\n' >"$SHIPPED/aslow/MATCH"
  probe slow dmda "$HIST"
  grep -q "^scaffold: warning: perfmodels: $SHIPPED/aslow/MATCH line 1: model_name .* holds a back-reference" \
    "$T/slow.err" || err "no warning for a back-reference in MATCH: $(cat "$T/slow.err")"
  [ "$(val HOSTNAME slow)" = "(unset)" ] || err "a class with a back-reference matched: '$(val HOSTNAME slow)'"
  rm -rf "$SHIPPED/aslow"
  [ "$(val PERF_MODEL_DIR dmda)" = "(unset)" ] || err "STARPU_PERF_MODEL_DIR set to '$(val PERF_MODEL_DIR dmda)'"
  [ "$(val HOSTNAME dmda)" = "(unset)" ] || err "STARPU_HOSTNAME set to '$(val HOSTNAME dmda)'"
  [ "$(grep -c '^runtime: perfmodels: no class in' "$T/dmda.out")" = 1 ] ||
    err "want one 'runtime: perfmodels: no class in' line, got:"$'\n'"$(cat "$T/dmda.out")"
  grep -q 'sftest: cores [0-9]*, not 100000.*calibrate from scratch' "$T/dmda.out" ||
    err "the info line does not say why sftest did not match: $(grep perfmodels "$T/dmda.out")"
  grep -q '^EXPECTED footprint=.* expected_us=-\?nan ' "$T/dmda.out" ||
    err "uncalibrated StarPU predicted a length: $(grep EXPECTED "$T/dmda.out" | head -2)"
  notice_ok dmda dmda first
  [ -e "$XDG_CACHE_HOME/scaffold-starpu" ] && err "a cache was created without a matching class"
  # an empty shipped directory: no class at all, the same notice
  mkdir -p "$T/empty"
  SF_PERFMODELS_DIR=$T/empty probe empty dmdas
  grep -q "^runtime: perfmodels: no class in .* or $T/empty matches this machine .*: no perfmodels exist for this machine class; the dmdas scheduler" \
    "$T/empty.out" || err "empty SF_PERFMODELS_DIR: no notice:"$'\n'"$(cat "$T/empty.out")"
  notice_ok empty dmdas
  rm -rf "$SHIPPED/abad" # (its warning is printed for every scheduler)
  probe lws lws
  grep -q '^runtime: perfmodels\|warning: perfmodels' "$T/lws.out" "$T/lws.err" &&
    err "lws printed a perfmodels note: $(grep '^runtime: perfmodels\|warning: perfmodels' "$T/lws.out" "$T/lws.err")"
  ;;
user)
  export SF_PERFMODELS_DIR=$SHIPPED
  mkdir -p "$T/mine"
  STARPU_PERF_MODEL_DIR=$T/mine probe dir dmda "$HIST"
  [ "$(val PERF_MODEL_DIR dir)" = "$T/mine" ] || err "STARPU_PERF_MODEL_DIR changed to '$(val PERF_MODEL_DIR dir)'"
  [ "$(val HOSTNAME dir)" = "(unset)" ] || err "STARPU_HOSTNAME set to '$(val HOSTNAME dir)'"
  grep -q "^runtime: perfmodels: StarPU's, from STARPU_PERF_MODEL_DIR=$T/mine (set by the user" "$T/dir.out" ||
    err "no user note: $(grep perfmodels "$T/dir.out")"
  grep -q '^EXPECTED footprint=.* expected_us=-\?nan ' "$T/dir.out" || err "StarPU used a model it should not have"
  STARPU_HOME=$T/sh probe home dmda
  [ "$(val PERF_MODEL_DIR home)" = "(unset)" ] || err "STARPU_HOME set, yet STARPU_PERF_MODEL_DIR '$(val PERF_MODEL_DIR home)'"
  grep -q "STARPU_HOME=$T/sh set by the user" "$T/home.out" || err "no STARPU_HOME note: $(grep perfmodels "$T/home.out")"
  STARPU_HOSTNAME=other probe host dmda
  [ "$(val HOSTNAME host)" = other ] || err "STARPU_HOSTNAME changed to '$(val HOSTNAME host)'"
  [ -e "$XDG_CACHE_HOME/scaffold-starpu" ] && err "a cache was written although the user is in charge"
  ;;
unwritable)
  # StarPU itself needs $XDG_CACHE_HOME (its default home): only our cache directory is blocked, by a
  # regular file where $XDG_CACHE_HOME/scaffold-starpu should be (this works for root too).
  export SF_PERFMODELS_DIR=$SHIPPED
  mkdir -p "$XDG_CACHE_HOME"
  echo "not a directory" >"$XDG_CACHE_HOME/scaffold-starpu"
  probe dmda dmda "$HIST"
  grep -q "^scaffold: warning: perfmodels: cannot create the perfmodel cache $XDG_CACHE_HOME/scaffold-starpu/perfmodels: " \
    "$T/dmda.err" || err "no warning naming the cache path:"$'\n'"$(cat "$T/dmda.err")"
  [ "$(val PERF_MODEL_DIR dmda)" = "(unset)" ] || err "STARPU_PERF_MODEL_DIR set to '$(val PERF_MODEL_DIR dmda)'"
  [ "$(val HOSTNAME dmda)" = "(unset)" ] || err "STARPU_HOSTNAME set to '$(val HOSTNAME dmda)'"
  grep -q '^DESCRIBE=perfmodels: StarPU default' "$T/dmda.out" || err "describe: $(grep DESCRIBE "$T/dmda.out")"
  grep -q '^EXPECTED' "$T/dmda.out" || err "the run did not go on after the warning"
  # a cache directory that exists but cannot be written (permissions do not stop root)
  rm -f "$XDG_CACHE_HOME/scaffold-starpu"
  if [ "$(id -u)" != 0 ]; then
    mkdir -p "$XDG_CACHE_HOME/scaffold-starpu/perfmodels" && chmod 555 "$XDG_CACHE_HOME/scaffold-starpu/perfmodels"
    probe ro dmda
    grep -q "warning: perfmodels: .*$XDG_CACHE_HOME/scaffold-starpu/perfmodels" "$T/ro.err" ||
      err "read-only cache: no warning: $(cat "$T/ro.err")"
    [ "$(val PERF_MODEL_DIR ro)" = "(unset)" ] || err "read-only cache used: '$(val PERF_MODEL_DIR ro)'"
    chmod 755 "$XDG_CACHE_HOME/scaffold-starpu/perfmodels"
  else
    echo "read-only cache case skipped: running as root (permissions do not stop root)"
  fi
  ;;
*) echo "usage: test_perfmodels.sh match|nomatch|user|unwritable PROBE"; exit 2 ;;
esac
[ $fail = 0 ] && echo "perfmodels $MODE: OK"
exit $fail
