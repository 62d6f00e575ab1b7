#!/bin/bash
# What we write is what upstream's tooling (PyYAML) reads: the YAML from --write-yaml and the -v
# listing both load with yaml.safe_load to the same values, with the types of the key table (int,
# float, 0/1 flag, string, list of 3 ints); a float never reads back as a string or an int.
# Skipped (77) when /usr/bin/python3 or its yaml module is missing.
set -u
bin="${SF_BUILD_DIR:?SF_BUILD_DIR not set}/tests/config/config_cli"
cfg="${SF_SOURCE_DIR:?SF_SOURCE_DIR not set}/configs"
py=/usr/bin/python3
if ! "$py" -c 'import yaml' 2>/dev/null; then
  echo "SKIPPED: $py with the yaml module is not available"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" -c "$cfg/quick.yml" --set min_learning_rate=1e-7 --set 'job_name="x: \"y\" #z"' \
  --set normalize=2 --write-yaml "$tmp/config.yaml" >"$tmp/listing.txt" || exit 1
"$bin" --markdown >"$tmp/keys.md" || exit 1
"$py" - "$tmp/config.yaml" "$tmp/listing.txt" "$tmp/keys.md" <<'PY'
import sys, yaml
written = yaml.safe_load(open(sys.argv[1]))
listing = yaml.safe_load(open(sys.argv[2]))
types = {}
for row in open(sys.argv[3]):
    if row.startswith("| `"):
        cells = [c.strip() for c in row.split("|")]
        types[cells[1].strip("`")] = cells[2]
bad = []
if set(written) != set(types):
    bad.append(f"written keys differ from the table: {sorted(set(written) ^ set(types))}")
if written != listing:
    bad.append("the -v listing and the written YAML load to different values: "
               + str({k: (written.get(k), listing.get(k)) for k in set(written) | set(listing)
                      if written.get(k) != listing.get(k)}))
check = {"int": lambda v: type(v) is int, "float": lambda v: type(v) is float,
         "flag": lambda v: v in (0, 1) and type(v) is int, "string": lambda v: type(v) is str,
         "3 ints": lambda v: type(v) is list and len(v) == 3 and all(type(i) is int for i in v)}
for k, t in types.items():
    if k in written and not check[t](written[k]):
        bad.append(f"{k}: PyYAML reads {written[k]!r} ({type(written[k]).__name__}), expected {t}")
for want_k, want_v in {"min_learning_rate": 1e-7, "normalize": 2.0, "job_name": 'x: "y" #z',
                       "problem_scale": 5, "dc_num_shards": [1, 1, 1]}.items():
    if written.get(want_k) != want_v:
        bad.append(f"{want_k}: PyYAML reads {written.get(want_k)!r}, expected {want_v!r}")
for b in bad:
    print("FAIL", b)
print(f"{len(types)} keys checked, {len(bad)} problems")
sys.exit(1 if bad else 0)
PY
