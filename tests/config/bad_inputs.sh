#!/bin/bash
# Bad configuration inputs, each run through the config_cli driver (sf_config_from_cli, as a
# subcommand parses its options): every case must exit with status 2 and its message must contain
# the listed fragments (the file:line or "override ...", the key, the value, what was expected).
# Needs SF_BUILD_DIR (the driver is ${SF_BUILD_DIR}/tests/config/config_cli) and SF_SOURCE_DIR.
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

echo "$n cases, $failed failed"
[ "$failed" -eq 0 ]
