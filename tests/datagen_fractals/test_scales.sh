#!/usr/bin/env bash
# Two problem scales in one fract_base_dir: configs/tiny.yml (np16) then configs/quick.yml (np128)
# in one directory, quick then tiny in another. Both orders succeed, and each point count's library
# (classes and instances) is byte-identical to the one a fresh directory gets: the classes are kept
# per point count, so none searched at np16 is reused at np128 (where it could run away). An older
# version's classes directly in 3DIFS_param/, with instances made from them, are ignored with a
# warning and the instances regenerated from this point count's classes.
set -u
BIN=${SF_BINARY:?SF_BINARY is not set}
SRC=${SF_SOURCE_DIR:?SF_SOURCE_DIR is not set}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export STARPU_HOME="$T/starpu" STARPU_SILENT=1
fail() {
  echo "FAIL: $*"
  exit 1
}
gen() { # config, directory, log
  (cd "$2" && "$BIN" generate_fractals -c "$SRC/configs/$1.yml" --set ncpu=1 >"$3" 2>&1) ||
    fail "generate_fractals -c configs/$1.yml in $2: $(cat "$3")"
}
LIB=fractals/var0.15/seed42
mkdir -p "$T/tq" "$T/qt" "$T/q" "$T/t" "$T/old"
gen tiny "$T/tq" "$T/tq1.log"
gen quick "$T/tq" "$T/tq2.log"
echo "ok: tiny then quick in one directory"
gen quick "$T/qt" "$T/qt1.log"
gen tiny "$T/qt" "$T/qt2.log"
echo "ok: quick then tiny in one directory"
gen quick "$T/q" "$T/q.log"
gen tiny "$T/t" "$T/t.log"
for np in 16 128; do
  ref=$T/q
  [ $np = 16 ] && ref=$T/t
  for d in "$T/tq" "$T/qt"; do
    for part in 3DIFS_param/np$np instances/np$np; do
      diff -r "$ref/$LIB/$part" "$d/$LIB/$part" >/dev/null ||
        fail "$d/$LIB/$part differs from the library a fresh directory gets ($ref/$LIB/$part)"
    done
  done
done
echo "ok: both orders give each point count the library of a fresh directory"

# an older version's layout: tiny's classes shared in 3DIFS_param/, quick's instances made from them
mkdir -p "$T/old/$LIB/3DIFS_param" "$T/old/$LIB/instances/np128/000000"
cp "$T/t/$LIB/3DIFS_param/np16/"*.csv "$T/old/$LIB/3DIFS_param/"
cp "$T/t/$LIB/instances/np16/000000/000000_0000.npy" "$T/old/$LIB/instances/np128/000000/000000_0000.npy"
gen quick "$T/old" "$T/old.log"
grep -q "3 fractal class file(s) directly in $LIB/3DIFS_param come from an older version" "$T/old.log" ||
  fail "no warning about the older version's classes: $(cat "$T/old.log")"
grep -q "so the instances in $LIB/instances/np128 were made from other classes: removing them" "$T/old.log" ||
  fail "the instances made from other classes were not removed: $(cat "$T/old.log")"
for part in 3DIFS_param/np128 instances/np128; do
  diff -r "$T/q/$LIB/$part" "$T/old/$LIB/$part" >/dev/null || fail "$T/old/$LIB/$part differs from a fresh library"
done
echo "ok: an older version's shared classes are ignored, the instances made from them regenerated"
