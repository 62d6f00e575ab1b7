#!/usr/bin/env bash
# scripts/check-file-graph refuses (exit 1, naming the files and a symbol) a loop between two files and
# a kernel variant that calls its family's entry, and accepts the same family without that call.
# The objects are compiled from scratch sources into a build-like tree under a temporary directory.
set -u
CC=$1 CHECK=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-file-graph-XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
obj() { # obj REL SOURCE-TEXT: the source at $T/src/REL and its object where CMake puts it
  mkdir -p "$(dirname "$T/src/$1")" "$(dirname "$T/build/CMakeFiles/sf_x.dir/$1")"
  printf '%s\n' "$2" > "$T/src/$1"
  "$CC" -c -o "$T/build/CMakeFiles/sf_x.dir/$1.o" "$T/src/$1" || fail "cannot compile $1"
}
run() { python3 "$CHECK" "$T/build" "$T/src" > "$T/out" 2>&1; }

# a family whose variant only the entry calls: accepted
obj src/kernels/fam/fam.c 'void fam_variant(void); void fam_entry(void) { fam_variant(); }'
obj src/kernels/fam/fam_variant.c 'void fam_variant(void) {}'
run || fail "a clean family was refused: $(cat "$T/out")"
grep -q "1 kernel families with one entry" "$T/out" || fail "the entry was not found: $(cat "$T/out")"

# the variant calls back into its entry: refused
obj src/kernels/fam/fam_variant.c 'void fam_entry(void); void fam_variant(void) { fam_entry(); }'
run && fail "a variant calling its entry was accepted"
grep -q "variant src/kernels/fam/fam_variant.c calls its family's entry src/kernels/fam/fam.c (fam_entry)" "$T/out" ||
  fail "no message for the variant calling its entry: $(cat "$T/out")"
obj src/kernels/fam/fam_variant.c 'void fam_variant(void) {}'

# two files in a loop: refused, with both files and the symbols
obj src/a/one.c 'void two(void); void one(void) { two(); }'
obj src/a/two.c 'void one(void); void two(void) { one(); }'
run && fail "a loop between two files was accepted"
grep -q "files call each other in a loop: src/a/one.c (two) -> src/a/two.c (one) -> src/a/one.c" "$T/out" ||
  fail "no message for the loop: $(cat "$T/out")"

# the object of a removed source file is left out: the loop is gone with it
rm "$T/src/src/a/two.c"
run || fail "an object whose source was removed still counted: $(cat "$T/out")"

[ "$fails" -eq 0 ] && echo "file-graph check: refusals and acceptances as expected"
[ "$fails" -eq 0 ]
