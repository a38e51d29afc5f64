#!/usr/bin/env bash
# Regenerates the recipe reference in README.md from the component registry
# (`kgtrain show --list --markdown`). A test fails when README.md and the registry disagree.
set -euo pipefail
cd "$(dirname "$0")/.."
KGTRAIN=${KGTRAIN:-build/kgtrain}
ref=$("$KGTRAIN" show --list --markdown)
/usr/bin/env python3 - "$ref" <<'PY'
import sys, re
ref = sys.argv[1]
text = open("README.md").read()
begin, end = "<!-- reference:begin -->", "<!-- reference:end -->"
i, j = text.index(begin) + len(begin), text.index(end)
open("README.md", "w").write(text[:i] + "\n" + ref.rstrip("\n") + "\n" + text[j:])
PY
echo "README.md recipe reference updated"
