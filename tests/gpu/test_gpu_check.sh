#!/usr/bin/env bash
# scripts/gpu-check --quick without a GPU.
#   skip: no bundle -> exit 77 and a summary.txt saying so; a bundle on a machine without a CUDA device
#         -> exit 77 after the kernel check; usage errors -> exit 2.
#   flow: the whole flow through a stand-in bundle whose `run` maps every GPU run onto CPU workers at
#         tiny shapes (ps 4 base 8; the kernel and step checks are canned lines, they need a device;
#         quick.yml becomes tiny.yml with target_dice 0.25), PyTorch skipped: exit 0, every figure in
#         summary.txt, and a perfmodels tarball that unpacks to <class>/{MATCH,sampling/codelets/45,
#         sampling/bus} with the class's file names.
set -u
: "${GPU_TRAIN:?run through ctest (GPU_TRAIN)}" "${SF_BINARY:?}" "${SF_SOURCE_DIR:?}"
mode=${1:-skip}
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-gpu-check-test-XXXXXX")
trap 'rm -rf "$T"' EXIT
check=$SF_SOURCE_DIR/scripts/gpu-check
fail() { echo "FAIL ($mode): $*" >&2; exit 1; }
unset SF_GPU_BUNDLE SF_GPU_CHECK_BUDGET SF_GPU_CHECK_SKIP_BENCH SF_GPU_CHECK_SKIP_E2E SF_PERFMODEL_CLASS

# stand_in DIR KERNELS: a bundle folder; KERNELS=nodevice makes gpu_kernels_check skip like a GPU-less host
stand_in() {
  mkdir -p "$1/bin"
  for p in gpu_kernels_check gpu_train scaffold; do printf '#!/bin/sh\nexit 2\n' >"$1/bin/$p"; chmod +x "$1/bin/$p"; done
  echo "stand-in bundle (tests/gpu/test_gpu_check.sh) from test" >"$1/MANIFEST"
  cat >"$1/run" <<EOF
#!/usr/bin/env bash
case "\${1:-}" in --env | --ldd) echo "stand-in bundle"; exit 0 ;; esac
prog=\$1; shift
args=()
while [ \$# -gt 0 ]; do
  case "\$1" in
    --ps) args+=(--ps 4); shift ;;
    --base) args+=(--base 8); shift ;;
    --steps) args+=(--steps \$(( \$2 > 12 ? 12 : \$2 ))); shift ;;
    --ncuda) args+=(--ncuda 0); shift ;;
    --ncpu) args+=(--ncpu \$([ "\$2" = 0 ] && echo 1 || echo 2)); shift ;;
    -c) args+=(-c "$SF_SOURCE_DIR/configs/tiny.yml" --set target_dice=0.25); shift ;;
    ncuda=1) args+=(ncuda=0) ;;
    ncpu=0) args+=(ncpu=1) ;;
    *) args+=("\$1") ;;
  esac
  shift
done
case \$prog in
  gpu_kernels_check)
    [ "$2" = nodevice ] && { echo "SKIPPED: no CUDA device (stand-in)"; exit 77; }
    echo "stand-in kernel check"; echo "189 passed, 0 failed"; exit 0 ;;
  gpu_train)
    [ "\${args[0]}" = check ] && { echo "stand-in step check \${args[*]}"; echo "6 checks, 0 failed"; exit 0; }
    exec "$GPU_TRAIN" "\${args[@]}" ;;
  scaffold) exec "$SF_BINARY" "\${args[@]}" ;;
esac
exit 2
EOF
  chmod +x "$1/run"
}

case $mode in
  skip)
    mkdir -p "$T/o1"
    OUT=$T/o1 SF_GPU_BUNDLE=$T/none bash "$check" --quick >"$T/log1" 2>&1
    rc=$?
    [ $rc = 77 ] || { cat "$T/log1"; fail "without a bundle: exit $rc, want 77"; }
    grep -q "SKIPPED: no GPU bundle" "$T/log1" || fail "without a bundle: no 'SKIPPED: no GPU bundle' line"
    grep -q "^exit status: 77" "$T/o1/summary.txt" || fail "without a bundle: summary.txt lacks 'exit status: 77'"
    stand_in "$T/b" nodevice
    mkdir -p "$T/o2"
    OUT=$T/o2 SF_GPU_BUNDLE=$T/b bash "$check" --quick >"$T/log2" 2>&1
    rc=$?
    [ $rc = 77 ] || { cat "$T/log2"; fail "without a CUDA device: exit $rc, want 77"; }
    grep -q "^check.kernels .*SKIPPED (no CUDA device)" "$T/o2/summary.txt" ||
      { cat "$T/o2/summary.txt"; fail "without a CUDA device: summary.txt lacks the skipped kernel check"; }
    bash "$check" --bogus >/dev/null 2>&1
    rc=$?
    [ $rc = 2 ] || fail "--bogus: exit $rc, want 2"
    SF_GPU_CHECK_BUDGET=0 bash "$check" --quick >/dev/null 2>&1
    rc=$?
    [ $rc = 2 ] || fail "SF_GPU_CHECK_BUDGET=0: exit $rc, want 2"
    echo "gpu-check skip paths: ok"
    ;;
  flow)
    case "${SF_SANITIZED:-OFF}" in ON | 1 | TRUE | YES | on | true)
      echo "SKIPPED: sanitizer build: this checks scripts/gpu-check's flow (budgets, summary, tarball), which"
      echo "the normal suite checks; the gpu_train code it drives runs under ASan in gpu_train_counts(_opencl)"
      exit 77 ;;
    esac
    stand_in "$T/b" ok
    mkdir -p "$T/o"
    OUT=$T/o SF_GPU_BUNDLE=$T/b SF_GPU_CHECK_SKIP_TORCH=1 SF_PERFMODEL_CLASS=test-class bash "$check" --quick >"$T/log" 2>&1
    rc=$?
    cat "$T/o/summary.txt"
    [ $rc = 0 ] || { tail -40 "$T/log"; fail "exit $rc, want 0"; }
    s=$T/o/summary.txt
    for f in check.kernels check.step.ps6-b64-auto check.step.ps5-b16-cudnn conv.ours.time_to_solution \
      conv.ours-cuda-only.time_to_solution; do
      grep -q "^$f .* PASS$" "$s" || fail "summary.txt: no PASS line for $f"
    done
    for f in train.cuda-fp32 train.cuda-tf32 train.cuda-bf16 train.cuda-bf16-8slabs train.mixed-dmda-bf16; do
      grep -Eq "^$f +[0-9.]+ +samples/s" "$s" || fail "summary.txt: no samples/s figure for $f"
    done
    grep -Eq "^conv.ours.epochs +[0-9]+ +epochs" "$s" || fail "summary.txt: no epoch count for our run"
    for f in gpu-check.log summary.txt train.log e2e.log perfmodels-test-class.tar.gz; do
      [ -s "$T/o/$f" ] || fail "\$OUT/$f missing or empty"
    done
    n=$(find "$T/o" -type f | wc -l)
    [ "$n" -le 8 ] || fail "$n files in \$OUT (at most 8 come back from the device)"
    mkdir -p "$T/pm"
    tar -C "$T/pm" -xzf "$T/o/perfmodels-test-class.tar.gz" || fail "the perfmodels tarball does not unpack"
    top=$(find "$T/pm" -mindepth 1 -maxdepth 1 -printf "%f ")
    [ "$top" = "test-class " ] || fail "the tarball's top level is '$top', want test-class"
    grep -q "^cores = " "$T/pm/test-class/MATCH" || fail "MATCH has no cores line"
    ls "$T/pm/test-class/sampling/codelets/45/"sf_*.test-class >/dev/null 2>&1 || fail "no sf_*.test-class codelet model"
    [ -f "$T/pm/test-class/sampling/bus/test-class.config" ] || fail "no bus/test-class.config"
    other=$(find "$T/pm/test-class/sampling" -type f ! -name "*test-class*" | head -3)
    [ -z "$other" ] || fail "files not named after the class in the tarball: $other"
    echo "gpu-check flow through a stand-in bundle: ok"
    ;;
  *) echo "usage: $0 skip|flow" >&2; exit 2 ;;
esac
