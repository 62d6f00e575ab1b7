#!/bin/bash
# Bad configuration inputs, each run through the config_cli driver (sf_config_from_cli, as a
# subcommand parses its options): every case must exit with status 2 and its message must contain
# the listed fragments (the file:line or "override ...", the key, the value, what was expected).
# Then valid configurations that `scaffold benchmark` cannot run (an optimizer not implemented,
# dc_num_shards, problem_scale above the dataset's limit, ...), and the config refusals again, through
# `scaffold benchmark` itself: each must be refused within 1 s and before any file is written.
# Needs SF_BUILD_DIR (the driver is ${SF_BUILD_DIR}/tests/config/config_cli), SF_BINARY and
# SF_SOURCE_DIR.
set -u
bin="${SF_BUILD_DIR:?SF_BUILD_DIR not set}/tests/config/config_cli"
bad="${SF_SOURCE_DIR:?SF_SOURCE_DIR not set}/tests/config/bad"
if [ ! -x "$bin" ]; then
  echo "FAIL: $bin is not built (cmake --build <build> --target config_cli)"
  exit 1
fi
n=0
failed=0

# expect NAME FRAGMENT... -- ARGS...: config_cli ARGS must exit 2 and print every FRAGMENT on stderr.
expect() {
  local name=$1 frags=() err rc f
  shift
  while [ "$1" != "--" ]; do frags+=("$1"); shift; done
  shift
  n=$((n + 1))
  err=$("$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ]; then
    echo "FAIL $name: exit status $rc, expected 2; args: $*"
    echo "     stderr: $err"
    failed=$((failed + 1))
    return
  fi
  for f in "${frags[@]}"; do
    if ! grep -qF -- "$f" <<<"$err"; then
      echo "FAIL $name: the message lacks '$f'; args: $*"
      echo "     stderr: $err"
      failed=$((failed + 1))
      return
    fi
  done
  echo "ok   $name: $err"
}

# ---- files: each message names file:line and the key ------------------------------------------
expect unknown_key "unknown_key.yml:3" "unknown key 'epoch'" "did you mean 'epochs'" -- -c "$bad/unknown_key.yml"
expect unknown_far "unknown_far.yml:3" "unknown key 'frobnicate_the_widget'" -- -c "$bad/unknown_far.yml"
expect int_word "int_word.yml:3" "key 'epochs'" "'ten'" "expected an integer" -- -c "$bad/int_word.yml"
expect int_decimal "int_decimal.yml:2" "key 'epochs'" "'5.0'" "expected an integer" -- -c "$bad/int_decimal.yml"
expect int_quoted "int_quoted.yml:2" "key 'seed'" '"42"' "expected an integer" -- -c "$bad/int_quoted.yml"
expect float_word "float_word.yml:2" "key 'starting_learning_rate'" "'fast'" "expected a number" -- -c "$bad/float_word.yml"
expect float_nan "float_nan.yml:2" "key 'target_dice'" "finite" -- -c "$bad/float_nan.yml"
expect flag_word "flag_word.yml:2" "key 'torch_amp'" "'maybe'" "expected a flag" -- -c "$bad/flag_word.yml"
expect flag_two "flag_two.yml:2" "key 'more_determinism'" "'2'" "expected a flag" -- -c "$bad/flag_two.yml"
expect string_number "string_number.yml:2" "key 'optimizer'" "'5'" "not a string" -- -c "$bad/string_number.yml"
expect sweep "sweep.yml:3" "key 'problem_scale'" "[5, 6]" "a list" "sweeps" -- -c "$bad/sweep.yml"
expect sweep_block "sweep_block.yml:2" "key 'problem_scale'" "a list" -- -c "$bad/sweep_block.yml"
expect mapping_value "mapping_value.yml:2" "key 'seed'" "a mapping" -- -c "$bad/mapping_value.yml"
expect duplicate "duplicate.yml:4" "duplicate key 'epochs'" "line 2" -- -c "$bad/duplicate.yml"
expect empty_value "empty_value.yml:3" "key 'epochs'" "empty" "expected an integer" -- -c "$bad/empty_value.yml"
expect null_value "null_value.yml:2" "key 'epochs'" "empty" -- -c "$bad/null_value.yml"
expect empty_string_value "empty_string_value.yml:2" "key 'scheduler'" "empty" '""' -- -c "$bad/empty_string_value.yml"
expect empty_file "empty.yml" "empty" -- -c "$bad/empty.yml"
expect comments_only "comments_only.yml" "empty" -- -c "$bad/comments_only.yml"
expect top_list "top_list.yml:2" "top level is a list" "mapping" -- -c "$bad/top_list.yml"
expect top_scalar "top_scalar.yml:2" "top level is a single value" -- -c "$bad/top_scalar.yml"
expect malformed_flow "malformed_flow.yml:" "malformed YAML" -- -c "$bad/malformed_flow.yml"
expect malformed_colon "malformed_colon.yml:3" "malformed YAML" -- -c "$bad/malformed_colon.yml"
expect malformed_tab "malformed_tab.yml:3" "malformed YAML" -- -c "$bad/malformed_tab.yml"
expect two_documents "two_documents.yml:3" "second YAML document" -- -c "$bad/two_documents.yml"
expect alias "alias.yml:3" "alias" -- -c "$bad/alias.yml"
expect list_short "list_short.yml:2" "key 'dc_num_shards'" "[1, 1]" "exactly 3" -- -c "$bad/list_short.yml"
expect list_scalar "list_scalar.yml:2" "key 'dc_num_shards'" "'2'" "3 integers" -- -c "$bad/list_scalar.yml"
expect list_item_word "list_item_word.yml:2" "key 'dc_num_shards'" "'one'" "not an integer" -- -c "$bad/list_item_word.yml"
expect dims_range "dims_range.yml:2" "key 'dc_shard_dims'" "[2, 3, 5]" "{2, 3, 4}" -- -c "$bad/dims_range.yml"
expect dims_repeat "dims_repeat.yml:2" "key 'dc_shard_dims'" "distinct" -- -c "$bad/dims_repeat.yml"
expect ps_below_bottleneck "ps_below_bottleneck.yml:2" "key 'problem_scale' has value '3'" "unet_bottleneck_dim + 1 = 4" \
  -- -c "$bad/ps_below_bottleneck.yml"
expect channels_groups "channels_groups.yml:2" "key 'unet_base_channels' has value '12'" "group_norm_groups = 8" \
  -- -c "$bad/channels_groups.yml"
expect instances_lt_fracts "instances_lt_fracts.yml:3" "n_instances_used_per_fractal" "n_fracts_per_vol = 3" \
  -- -c "$bad/instances_lt_fracts.yml"
expect lr_min_gt_start "lr_min_gt_start.yml:3" "min_learning_rate" "<= starting_learning_rate" -- -c "$bad/lr_min_gt_start.yml"
expect dist_false "dist_false.yml:2" "key 'dist'" "'false'" "out of range" -- -c "$bad/dist_false.yml"
expect scale_two "scale_two.yml:2" "key 'scale'" "'2'" "expected 1" -- -c "$bad/scale_two.yml"
expect framework_other "framework_other.yml:2" "key 'framework'" '"pytorch"' '"torch"' -- -c "$bad/framework_other.yml"
expect val_split_100 "val_split_100.yml:2" "key 'val_split'" "'100'" "(0, 100)" -- -c "$bad/val_split_100.yml"
expect target_dice_high "target_dice_high.yml:2" "key 'target_dice'" "'1.5'" "(0, 1]" -- -c "$bad/target_dice_high.yml"
expect epochs_zero "epochs_zero.yml:2" "key 'epochs'" "'0'" "-1 or >= 1" -- -c "$bad/epochs_zero.yml"
expect problem_scale_big "problem_scale_big.yml:2" "key 'problem_scale'" "'25'" "1..20" -- -c "$bad/problem_scale_big.yml"
expect missing_file "no_such_file.yml" "No such file" -- -c "$bad/no_such_file.yml"
expect directory "cannot read config file" "directory" -- -c "$bad"
# A later file is checked as strictly as the first.
expect second_file_bad "unknown_key.yml:3" -- -c "$SF_SOURCE_DIR/configs/quick.yml" -c "$bad/unknown_key.yml"

# ---- every range check, through --set: messages name "override --set key=value" -----------------
range() { expect "set_$1" "override --set $1" "key '${1%%=*}'" "${2:-out of range}" -- --set "$1"; }
range unet_bottleneck_dim=-1
range val_split=0
range n_categories=0
range n_fracts_per_vol=0
range seed=-1
range group_norm_groups=0
range local_batch_size=0
range starting_learning_rate=0
range min_learning_rate=-0.001
range T_0=0
range T_mult=0
range target_dice=0
range target_dice=1.01
range variance_threshold=0
range epochs=0
range epochs=-2
range checkpoint_interval=0
range checkpoint_interval=-5
range scale=2
range dist=no
range framework=jax
range 'dc_num_shards=[1, 0, 1]'
range 'dc_shard_dims=[1, 2, 3]'
range 'dc_shard_dims=[2, 3, 3]'
range spatial_ranks=0
range ncpu=-2
range ncuda=-3
range slabs=-1
range unet_base_channels=0
range problem_scale=0
range optimizer=5 "not a string"
range optimizer=true "not a string"
range epochs=1e3 "expected an integer"
range starting_learning_rate=.inf "finite"
range 'problem_scale=[5, 6]' "a list"
range 'seed={a: 1}' "a mapping"
range epochs= "empty"
range seed=99999999999999999999999 "64 bits"
expect set_cross_ps "override --set problem_scale=3" "key 'problem_scale' has value '3'" "unet_bottleneck_dim + 1" \
  -- --set problem_scale=3
expect set_cross_channels "override --set group_norm_groups=3" "unet_base_channels" "group_norm_groups = 3" \
  -- --set group_norm_groups=3
expect set_cross_instances "override --set n_instances_used_per_fractal=2" "n_fracts_per_vol" \
  -- --set n_instances_used_per_fractal=2
expect set_cross_lr "override --set min_learning_rate=0.01" "starting_learning_rate" -- --set min_learning_rate=0.01
expect set_derived "override --set unet_layers=3" "derived" "cannot be set" -- --set unet_layers=3
expect set_unknown "override --set problem_scal=5" "unknown key 'problem_scal'" "did you mean 'problem_scale'" \
  -- --set problem_scal=5
expect set_malformed "override --set epochs=[1, 2" "malformed YAML" -- --set "epochs=[1, 2"
expect set_no_equals "--set 'epochs'" "expected key=value" -- --set epochs
expect set_no_key "--set '=5'" "expected key=value" -- --set =5
expect flag_bad_value "override --epochs abc" "key 'epochs'" "'abc'" "expected an integer" -- --epochs abc
expect flag_bad_list "override --dc-shard-dims 2 3 9" "key 'dc_shard_dims'" "{2, 3, 4}" -- --dc-shard-dims 2 3 9
expect flag_problem_scale "override --problem-scale=0" "key 'problem_scale'" -- --problem-scale=0

# ---- keys of older upstream versions: the message names the key that replaced each ---------------
expect old_batch_size "old_batch_size.yml:2" "key 'batch_size'" "'2'" "older ScaFFold" "use 'local_batch_size'" \
  -- -c "$bad/old_batch_size.yml"
expect old_learning_rate "old_learning_rate.yml:3" "key 'learning_rate'" "use 'starting_learning_rate'" \
  "disable_scheduler: 1" -- -c "$bad/old_learning_rate.yml"
expect old_num_shards "old_num_shards.yml:2" "key 'num_shards'" "use 'dc_num_shards'" -- -c "$bad/old_num_shards.yml"
old_set() { expect "old_set_$1" "override --set $1=$2" "key '$1'" "older ScaFFold" "use '$3'" -- --set "$1=$2"; }
old_set batch_size 4 local_batch_size
old_set learning_rate 0.01 starting_learning_rate
old_set warmup_epochs 1 warmup_batches
old_set num_shards 2 dc_num_shards
old_set shard_dim 2 dc_shard_dims
old_set ce_weight_num_samples 8 ce_weight_sample_fraction
old_set dataset_num_shards '[1, 1, 2]' dc_num_shards
old_set dataset_shard_dims '[2, 3, 4]' dc_shard_dims
expect old_flag "unknown option '--batch-size'" "use 'local_batch_size'" "its option is '--local-batch-size'" \
  -- --batch-size 2
expect old_flag_no_flag "unknown option '--ce-weight-num-samples'" "--set ce_weight_sample_fraction=VALUE" \
  -- --ce-weight-num-samples 8

# activation_checkpointing: a flag, 0 and 1 accepted, anything else refused
expect activation_checkpointing "activation_checkpointing.yml:2" "key 'activation_checkpointing'" "'2'" \
  "0/1, true/false, yes/no" -- -c "$bad/activation_checkpointing.yml"
range activation_checkpointing=maybe "0/1, true/false, yes/no"
n=$((n + 1))
if out=$("$bin" --set activation_checkpointing=1 2>&1) && out=$("$bin" --set activation_checkpointing=no 2>&1); then
  echo "ok   activation_checkpointing_flag: 1 and no are accepted"
else
  echo "FAIL activation_checkpointing_flag: a valid value refused: $out"
  failed=$((failed + 1))
fi
# max_memory_gib: a number >= 0
range max_memory_gib=-1 ">= 0"
# async_save: a flag, 0 and 1 accepted, anything else refused
expect async_save "async_save.yml:3" "key 'async_save'" "'later'" "0/1, true/false, yes/no" -- -c "$bad/async_save.yml"
range async_save=2 "0/1, true/false, yes/no"
n=$((n + 1))
if out=$("$bin" --set async_save=1 2>&1) && out=$("$bin" --set async_save=false 2>&1); then
  echo "ok   async_save_flag: async_save 1 and false are accepted"
else
  echo "FAIL async_save_flag: a valid value refused: $out"
  failed=$((failed + 1))
fi

# ---- the command line itself ---------------------------------------------------------------------
expect unknown_option "unknown option '--frobnicate'" -- --frobnicate
expect underscore_flag "unknown option '--problem_scale'" "did you mean '--problem-scale'" -- --problem_scale 5
expect flagless_key "unknown option '--val-split'" "--set val_split=VALUE" -- --val-split 5
expect missing_c_arg "option '-c' needs an argument" -- -c
expect missing_set_arg "option '--set' needs an argument" -- --set
expect missing_flag_arg "option '--epochs' needs an argument" -- --epochs
expect missing_list_args "option '--dc-num-shards' needs 3 arguments" -- --dc-num-shards 1 1
expect list_flag_eq "takes 3 separate values" -- --dc-num-shards=1
expect stray_argument "unexpected argument 'extra'" -- -c "$SF_SOURCE_DIR/configs/quick.yml" extra

# ---- scaffold benchmark: refused before any work ---------------------------------------------------
# Each case runs `scaffold benchmark` in an empty directory W that holds its base_run_dir,
# dataset_dir, fract_base_dir and STARPU_HOME. It must exit 2 with the fragments in its message,
# leave W empty (no run directory, no fractal, no dataset, no StarPU file) and take under 1 s (the
# faster of two tries, so that a moment of load on a shared machine does not fail it).
: "${SF_BINARY:?SF_BINARY not set}"
tiny="$SF_SOURCE_DIR/configs/tiny.yml"
W=$(mktemp -d "${TMPDIR:-/tmp}/sf-bad-XXXXXX")
trap 'rm -rf "$W"' EXIT
refuse() {
  local name=$1 frags=() err rc f left ms best=999999 try t0
  shift
  while [ "$1" != "--" ]; do frags+=("$1"); shift; done
  shift
  n=$((n + 1))
  for try in 1 2; do
    t0=$(date +%s%N)
    err=$(cd "$W" && STARPU_HOME="$W/starpu" "$SF_BINARY" benchmark --set "base_run_dir=$W/runs" \
      --set "dataset_dir=$W/datasets" --set "fract_base_dir=$W/fractals" "$@" 2>&1 >/dev/null)
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    [ "$ms" -lt "$best" ] && best=$ms
    left=$(find "$W" -mindepth 1 | head -3 | tr '\n' ' ')
    if [ "$rc" -ne 2 ] || [ -n "$left" ]; then
      echo "FAIL bench_$name: exit status $rc (expected 2), files written: '${left}'; args: $*"
      echo "     stderr: $err"
      failed=$((failed + 1))
      find "$W" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
      return
    fi
    [ "$best" -lt 1000 ] && break
  done
  if [ "$best" -ge 1000 ]; then
    echo "FAIL bench_$name: refused after $best ms (twice), expected under 1000 ms; args: $*"
    failed=$((failed + 1))
    return
  fi
  for f in "${frags[@]}"; do
    if ! grep -qF -- "$f" <<<"$err"; then
      echo "FAIL bench_$name: the message lacks '$f'; args: $*"
      echo "     stderr: $err"
      failed=$((failed + 1))
      return
    fi
  done
  echo "ok   bench_$name (${best} ms, nothing written): $err"
}
refuse optimizer_file "optimizer_unknown.yml:3" "key 'optimizer'" '"Adagrad"' \
  "expected one of: ADAM, SGD, RMSProp, RMSprop" -- -c "$tiny" -c "$bad/optimizer_unknown.yml"
refuse optimizer_set "override --set optimizer=rmsprop" "key 'optimizer'" "expected one of: ADAM" \
  -- -c "$tiny" --set optimizer=rmsprop
refuse optimizer_flag "override --optimizer SGDX" "key 'optimizer'" '"SGDX"' -- -c "$tiny" --optimizer SGDX
refuse export_graph_dir "override --set export_graph=/proc/sf-no/graph" "key 'export_graph'" \
  "expected a writable directory path" -- -c "$tiny" --set export_graph=/proc/sf-no/graph
refuse dc_num_shards_file "dc_num_shards.yml:2" "key 'dc_num_shards'" "'[1, 1, 2]'" "2 ranks per volume, but this is a single process" \
  -- -c "$tiny" -c "$bad/dc_num_shards.yml"
refuse dc_num_shards_flag "override --dc-num-shards 2 1 1" "single process" "mpirun" -- -c "$tiny" --dc-num-shards 2 1 1
refuse problem_scale_file "problem_scale_12.yml:3" "key 'problem_scale'" "'12'" "the memory plan needs" \
  "GiB limit" -- -c "$tiny" -c "$bad/problem_scale_12.yml"
refuse batch_gt_val "override --set local_batch_size=5" "exceeds the 4 validation volumes" "expected at most 4" \
  -- -c "$tiny" --set n_instances_used_per_fractal=15 --set local_batch_size=5
refuse no_val_volumes "override --set val_split=1" "0 validation volumes" \
  -- -c "$tiny" --set n_instances_used_per_fractal=15 --set val_split=1
refuse slabs "override --set slabs=99" "key 'slabs'" "expected 0 (automatic) or 1..8" -- -c "$tiny" --set slabs=99
refuse scheduler "override --set scheduler=bogus" "not a StarPU scheduling policy" "dmda" \
  -- -c "$tiny" --set scheduler=bogus
refuse memory "key 'problem_scale' has value '10'" "unet_base_channels" "the memory plan needs" "GiB limit" \
  -- -c "$tiny" --set problem_scale=10 --set unet_base_channels=4096
refuse seed_numpy "override --set seed=4294967296" "[0, 2^32-1]" -- -c "$tiny" --set seed=4294967296
# upstream's official problem (2048^3): past the dataset layout and the model, refused by the memory plan
refuse scale11 "override --set problem_scale=11" "the memory plan needs" "GiB limit" "smaller problem_scale" \
  -- -c "$SF_SOURCE_DIR/configs/benchmark_default.yml" --set problem_scale=11
refuse scale11_tiny "override --set problem_scale=11" "the memory plan needs" -- -c "$tiny" --set problem_scale=11
refuse max_memory_gib "override --set max_memory_gib=0.01" "the memory plan needs" "limit (max_memory_gib)" \
  "max_memory_gib >= 0." -- -c "$tiny" --set max_memory_gib=0.01
refuse old_key "old_learning_rate.yml:3" "use 'starting_learning_rate'" -- -c "$tiny" -c "$bad/old_learning_rate.yml"
refuse old_flag "unknown option '--batch-size'" "use 'local_batch_size'" -- -c "$tiny" --batch-size 2

# `scaffold steps` reads only the keys that shape its timed steps: a key set on the command line that it
# would ignore is refused before any work (exit 2, the key named, nothing written); the same key from a
# config file is accepted (the file serves `scaffold benchmark` too) and named by -v.
steps_refused() {
  local name=$1 want=$2 err rc
  shift 2
  n=$((n + 1))
  err=$(cd "$W" && STARPU_HOME="$W/starpu" "$SF_BINARY" steps -c "$tiny" --steps 1 --warmup 0 --out "$W/out" "$@" \
    2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" <<<"$err" || [ -e "$W/out" ]; then
    echo "FAIL steps_$name: exit status $rc (expected 2), message '$err' (expected '$want'), out: $(ls "$W" | tr '\n' ' ')"
    failed=$((failed + 1))
  fi
  find "$W" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
}
steps_refused bound "scaffold steps does not read the key bound set on the command line" --set bound=1
steps_refused two "the keys target_dice, epochs set on the command line" --set target_dice=0.9 --set epochs=3
steps_refused flag "the key warmup_batches set on the command line" --warmup-batches 3
n=$((n + 1))
out=$(cd "$W" && STARPU_HOME="$W/starpu" "$SF_BINARY" steps -c "$tiny" --set ncpu=1 --steps 1 --warmup 0 \
  --out "$W/out" -v 2>&1)
rc=$?
if [ "$rc" -ne 0 ] || ! grep -q "^scaffold steps: keys of .*tiny.yml that this command does not read (.*): epochs" <<<"$out"; then
  echo "FAIL steps_file_keys: exit status $rc; expected a run that names tiny.yml's unread keys with -v: $out"
  failed=$((failed + 1))
fi
find "$W" -mindepth 1 -maxdepth 1 -exec rm -rf {} +

# `scaffold generate_fractals` likewise reads only the library's keys and the runtime's
n=$((n + 1))
err=$(cd "$W" && STARPU_HOME="$W/starpu" "$SF_BINARY" generate_fractals -c "$tiny" --set "fract_base_dir=$W/fr" \
  --set epochs=3 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 2 ] || ! grep -qF "scaffold generate_fractals does not read the key epochs set on the command line" <<<"$err" ||
  [ -e "$W/fr" ]; then
  echo "FAIL generate_fractals_unread: exit status $rc (expected 2), message '$err', written: $(ls "$W" | tr '\n' ' ')"
  failed=$((failed + 1))
fi
find "$W" -mindepth 1 -maxdepth 1 -exec rm -rf {} +

echo "$n cases, $failed failed"
[ "$failed" -eq 0 ]
