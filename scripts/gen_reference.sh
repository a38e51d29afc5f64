#!/usr/bin/env bash
# Regenerates the recipe reference in docs/reference.md (between its reference:begin/end markers) from the
# component registry (`kgtrain show --list --markdown`). A test fails when docs/reference.md and the registry disagree.
set -euo pipefail
cd "$(dirname "$0")/.."
KGTRAIN=${KGTRAIN:-build/kgtrain}
ref=$("$KGTRAIN" show --list --markdown)
/usr/bin/env python3 - "$ref" <<'PY'
import sys, re
ref = sys.argv[1]
text = open("docs/reference.md").read()
begin, end = "<!-- reference:begin -->", "<!-- reference:end -->"
i, j = text.index(begin) + len(begin), text.index(end)
open("docs/reference.md", "w").write(text[:i] + "\n" + ref.rstrip("\n") + "\n" + text[j:])
PY
echo "docs/reference.md recipe reference updated"
