#!/usr/bin/env bash
# The environment switch table (src/util/switches.c): a bad value is refused before any command
# starts (exit 2, naming the variable, its value and what it accepts), -v prints the switches that
# are set, and no source file reads an SF_* variable except through the table, so every switch the
# product reads is listed, checked and documented.
set -u
: "${SF_BINARY:?}" "${SF_SOURCE_DIR:?}" "${SF_CONFIG_CLI:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-switches-XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# refused VAR=VALUE WANT: `scaffold generate_fractals` in an empty directory exits 2 with WANT
# and writes nothing (the check runs before the command).
refused() {
  (cd "$T" && env "$1" "$SF_BINARY" generate_fractals -c "$SF_SOURCE_DIR/configs/tiny.yml" > out 2> err)
  local rc=$?
  [ "$rc" -eq 2 ] || fail "$1: exit status $rc, want 2"
  grep -qF -- "$2" "$T/err" || fail "$1: stderr lacks '$2': $(cat "$T/err")"
  [ ! -e "$T/fractals" ] || fail "$1: work started (fractals/ was written)"
  rm -rf "$T/out" "$T/err" "$T/fractals"
}
refused SF_CPU_BF16=bogus "environment SF_CPU_BF16='bogus': expected none | vdpbf16ps | amx"
refused SF_CPU_ISA=avx9 "environment SF_CPU_ISA='avx9': expected none | c | avx2 | avx512"
refused SF_CONV_WINOGRAD=yes "environment SF_CONV_WINOGRAD='yes': expected 0 | 1"
refused SF_HW_BLOCKS=2y2 "environment SF_HW_BLOCKS='2y2': expected ROWSxCOLUMNS"
refused SF_TRACE_MAX_EVENTS=-1 "environment SF_TRACE_MAX_EVENTS='-1': expected an integer >= 0"
refused SF_CUDA_MATH=fp64 "environment SF_CUDA_MATH='fp64': expected fp32 | tf32 | bf16"

# -v prints the switches that are set, beside the configuration.
SF_CONV_WINOGRAD=0 SF_HW_BLOCKS=2x2 "$SF_CONFIG_CLI" -c "$SF_SOURCE_DIR/configs/tiny.yml" -v > "$T/v" 2>&1 ||
  fail "config_cli -v failed: $(cat "$T/v")"
grep -q "^# environment switches: .*SF_CONV_WINOGRAD=0.* SF_HW_BLOCKS=2x2" "$T/v" ||
  fail "-v does not list the switches set: $(grep -i switch "$T/v")"
env -u SF_CPU_BF16 -u SF_KERNEL_TUNING "$SF_CONFIG_CLI" -c "$SF_SOURCE_DIR/configs/tiny.yml" -v > "$T/v0" 2>&1
grep -q "^# environment switches: none set" "$T/v0" || fail "-v with no switch set: $(grep -i switch "$T/v0")"

# Every SF_*/SCAFFOLD_* variable is read through the table, and every name read is in it.
cd "$SF_SOURCE_DIR"
direct=$(grep -rnE 'getenv\("(SF_|SCAFFOLD_)' src codelets | grep -v '^src/util/switches.c:')
[ -z "$direct" ] || fail "read without the switch table (use sf_switch): $direct"
for name in $(grep -rhoE 'sf_switch(_is)?\("[A-Z_0-9]+"' src codelets | sed 's/.*("//; s/"//' | sort -u); do
  grep -qE "(PRODUCT|HOOK)\(\"$name\"" src/util/switches.c || fail "$name is read but not in src/util/switches.c"
done
n=$(grep -cE '^ *(PRODUCT|HOOK)\("' src/util/switches.c)
[ "$n" -ge 20 ] || fail "the switch table lists $n switches; the check above did not find the table"

[ "$fails" -eq 0 ] && echo "switch table: all checks passed" || echo "$fails check(s) failed"
[ "$fails" -eq 0 ]
