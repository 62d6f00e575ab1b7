#!/bin/sh
# The committed fixtures tests/golden/{ops,unet_ps4,unet_ps5}.bin must match what
# scripts/make_golden.py writes now (`--check`: exact names and shapes, values to 1e-6).
# Skips (77) where /usr/bin/python3 has no torch.
case "${SF_SANITIZED:-OFF}" in ON | 1 | TRUE | YES | on | true)
  echo "SKIPPED: sanitizer build: this check runs only Python (scripts/make_golden.py against the committed"
  echo "fixtures), no code of ours that ASan/UBSan could instrument; the normal suite runs it"
  exit 77 ;;
esac
src=${SF_SOURCE_DIR:?SF_SOURCE_DIR is not set}
py=/usr/bin/python3
if ! [ -x "$py" ] || ! "$py" -c "import torch, numpy" >/dev/null 2>&1; then
  echo "SKIPPED: $py with torch and numpy is not available"
  exit 77
fi
exec "$py" "$src/scripts/make_golden.py" --check
