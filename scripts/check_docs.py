#!/usr/bin/env python3
"""Checks the Markdown documentation: README.md and docs/*.md.

- every relative link (and image) resolves to an existing file or folder of the repository;
- every `#anchor` names a heading of the target page (GitHub's slugs: lowercase, punctuation other than
  `-` and `_` dropped, spaces to `-`, `-1`, `-2`, ... for repeated headings) or an explicit `id`/`name`;
- no http:// or https:// link anywhere (the documentation links inside the repository only);
- README.md has at most 300 lines.

Prints file:line: problem for each one and exits 1 when there is any; standard library only.
Usage: python3 scripts/check_docs.py [REPO_ROOT]
"""
import os
import re
import sys
import unicodedata

README_MAX_LINES = 300

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); text may hold one level of brackets.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+[\"'(][^)]*)?\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(\S+)")
AUTOLINK = re.compile(r"<((?:https?|ftp)://[^>]*)>")
EXPLICIT_ANCHOR = re.compile(r"""<a\s+[^>]*(?:name|id)\s*=\s*["']([^"']+)["']""", re.I)
URL = re.compile(r"https?://", re.I)


def slug(heading_text):
    """GitHub's anchor for a heading's text."""
    t = heading_text
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", t)  # links and images: their text
    t = re.sub(r"<[^>]+>", "", t)  # inline HTML tags
    t = t.replace("`", "").replace("*", "")
    t = t.strip().lower()
    out = []
    for ch in t:
        cat = unicodedata.category(ch)
        if ch in "-_" or ch == " ":
            out.append("-" if ch == " " else ch)
        elif cat[0] in "LNM":  # letters, numbers, marks
            out.append(ch)
        # everything else (punctuation, symbols) is dropped
    return "".join(out)


def scan(path):
    """Returns (lines outside fenced code as (number, text), anchors of the page)."""
    with open(path, encoding="utf-8") as f:
        raw = f.read().split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    body, anchors, seen = [], set(), {}
    fence = None
    for n, line in enumerate(raw, 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        body.append((n, line))
        h = HEADING.match(line)
        if h:
            s = slug(h.group(2))
            k = seen.get(s, 0)
            anchors.add(s if k == 0 else f"{s}-{k}")
            seen[s] = k + 1
        for a in EXPLICIT_ANCHOR.findall(line):
            anchors.add(a)
    return raw, body, anchors


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    pages = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        pages += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    problems = []
    cache = {}

    def page(p):
        if p not in cache:
            cache[p] = scan(p)
        return cache[p]

    def rel(p):
        return os.path.relpath(p, root)

    for p in pages:
        if not os.path.isfile(p):
            problems.append(f"{rel(p)}:1: missing")
            continue
        raw, body, _ = page(p)
        if os.path.basename(p) == "README.md" and os.path.dirname(p) == root and len(raw) > README_MAX_LINES:
            problems.append(f"{rel(p)}:{len(raw)}: README.md has {len(raw)} lines (at most {README_MAX_LINES})")
        for n, line in enumerate(raw, 1):
            if URL.search(line):
                problems.append(f"{rel(p)}:{n}: http(s) link (the docs link inside the repository only)")
        for n, line in body:
            text = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
            targets = [m.group(1) for m in LINK.finditer(text)]
            targets += [m.group(1) for m in AUTOLINK.finditer(text)]
            d = REF_DEF.match(text)
            if d:
                targets.append(d.group(1))
            for t in targets:
                t = t.strip("<>")
                if URL.match(t):
                    continue  # reported above
                if re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I):
                    problems.append(f"{rel(p)}:{n}: link {t!r} leaves the repository")
                    continue
                target, _, anchor = t.partition("#")
                dest = p if target == "" else os.path.normpath(os.path.join(os.path.dirname(p), target))
                if not os.path.abspath(dest).startswith(root + os.sep) and os.path.abspath(dest) != root:
                    problems.append(f"{rel(p)}:{n}: link {t!r} points outside the repository")
                    continue
                if not os.path.exists(dest):
                    problems.append(f"{rel(p)}:{n}: link {t!r}: no file {rel(dest)}")
                    continue
                if anchor:
                    if not dest.endswith(".md") or not os.path.isfile(dest):
                        problems.append(f"{rel(p)}:{n}: link {t!r}: an anchor into a file that is not Markdown")
                        continue
                    if anchor not in page(dest)[2]:
                        problems.append(f"{rel(p)}:{n}: link {t!r}: no heading #{anchor} in {rel(dest)}")
    for q in problems:
        print(q)
    sys.stdout.flush()
    if problems:
        print(f"check_docs: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_docs: {len(pages)} pages OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
