#!/bin/sh
# dataset_reuse_enforce_commit_id (spec §4.6): a dataset records the git commit the binary was built
# from (the short hash, embedded at build time; no-commit-id outside a checkout) in its meta.yaml
# and directory name. With the commit faked to another one in meta.yaml, enforce 0 still reuses the
# dataset and enforce 1 refuses it (a new dataset, of this commit, is generated).
# Usage: test_dataset_commit_id.sh DATASET_TOOL (SF_SOURCE_DIR and SF_BUILD_DIR from ctest).
set -eu
TOOL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sf-dscommit-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export STARPU_HOME="$tmp/starpu" STARPU_SILENT=1
mkdir -p "$STARPU_HOME"
fail() { echo "FAIL: $*"; exit 1; }
common="--set fract_base_dir=$tmp/fractals --set dataset_dir=$tmp/datasets --set problem_scale=3
  --set unet_bottleneck_dim=2 --set n_categories=2 --set n_instances_used_per_fractal=6 --set ncpu=1"
field() { sed -n "s/^DATASET .*$1=\([^ ]*\).*/\1/p" "$2"; }

# the commit this build embedded (cmake/GitCommit.cmake): a hex hash in a git checkout
want=$(sed -n 's/^#define SF_GIT_COMMIT "\(.*\)"$/\1/p' "${SF_BUILD_DIR:?}/generated/sf_git_commit.h")
[ -n "$want" ] || fail "no SF_GIT_COMMIT in $SF_BUILD_DIR/generated/sf_git_commit.h"
if git -C "${SF_SOURCE_DIR:?}" rev-parse --short HEAD >/dev/null 2>&1; then
  echo "$want" | grep -Eqx '[0-9a-f]{4,40}' || fail "the build is in a git checkout but embedded '$want'"
fi

# shellcheck disable=SC2086
"$TOOL" $common --fractals >"$tmp/1.log" 2>&1 || { cat "$tmp/1.log"; fail "first run"; }
d1=$(field dir "$tmp/1.log")
[ "$(field generated "$tmp/1.log")" = 1 ] || fail "the first run did not generate a dataset: $(cat "$tmp/1.log")"
grep -qx "code_commit: $want" "$d1/meta.yaml" ||
  fail "meta.yaml code_commit is not $want: $(grep code_commit "$d1/meta.yaml")"
case "$d1" in *__"$want") ;; *) fail "dataset directory $d1 does not end in __$want" ;; esac
echo "dataset made by commit $want: $d1"

# shellcheck disable=SC2086
"$TOOL" $common --set dataset_reuse_enforce_commit_id=1 >"$tmp/2.log" 2>&1 || { cat "$tmp/2.log"; fail "second run"; }
[ "$(field generated "$tmp/2.log")" = 0 ] && [ "$(field dir "$tmp/2.log")" = "$d1" ] ||
  fail "enforce 1 did not reuse the dataset of the same commit: $(grep DATASET "$tmp/2.log")"

sed -i 's/^code_commit: .*/code_commit: 0123456789ab/' "$d1/meta.yaml"
grep -qx "code_commit: 0123456789ab" "$d1/meta.yaml" || fail "could not fake the commit in $d1/meta.yaml"

# shellcheck disable=SC2086
"$TOOL" $common --set dataset_reuse_enforce_commit_id=0 >"$tmp/3.log" 2>&1 || { cat "$tmp/3.log"; fail "third run"; }
[ "$(field generated "$tmp/3.log")" = 0 ] && [ "$(field dir "$tmp/3.log")" = "$d1" ] ||
  fail "enforce 0 did not reuse the dataset of another commit: $(grep DATASET "$tmp/3.log")"
echo "enforce 0: the dataset of commit 0123456789ab is reused"

# shellcheck disable=SC2086
"$TOOL" $common --set dataset_reuse_enforce_commit_id=1 >"$tmp/4.log" 2>&1 || { cat "$tmp/4.log"; fail "fourth run"; }
d4=$(field dir "$tmp/4.log")
[ "$(field generated "$tmp/4.log")" = 1 ] && [ "$d4" != "$d1" ] ||
  fail "enforce 1 reused the dataset of commit 0123456789ab: $(grep DATASET "$tmp/4.log")"
grep -qx "code_commit: $want" "$d4/meta.yaml" || fail "the new dataset's code_commit is not $want"
echo "enforce 1: the dataset of commit 0123456789ab is refused; a new one was generated for $want"
echo "PASS"
