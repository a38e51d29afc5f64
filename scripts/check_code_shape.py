#!/usr/bin/env python3
"""Checks the code's shape (issue 23): no file in lib/ or app/ over 400 lines, no function over 120.

Functions are found by brace matching on the text with comments, strings and character literals blanked:
a block whose opening line (or the lines just before it) reads like a function head -- a parameter list
`(...)`, not `if`/`for`/`while`/`switch`/`catch`, not a class/struct/namespace/enum or an initializer --
is measured from its head to its closing brace. Lambdas inside a function count toward the function.
Also (issue 53): outside lib/config no code reads a recipe's raw tree (`.tree().at(` / `.tree().find(`): components
read typed options (recipe.get<Options>()), and a multi-form key's resolution goes through session/effective_recipe.h.
Exit 1 with file:line for each problem.
"""
import os
import re
import sys

MAX_FILE, MAX_FUNC = 400, 120
ROOTS = ("lib", "app")
RAW_TREE_READ = re.compile(r"\.tree\(\)\s*\.\s*(at|find)\s*\(")


def blank(text):
    """Comments, string and char literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i)); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


HEAD_KEYWORDS = re.compile(r"\b(if|for|while|switch|catch|do|else|return)\b")
TYPE_KEYWORDS = re.compile(r"^\s*(template\s*<.*>\s*)?(class|struct|union|namespace|enum)\b")


def functions(path):
    text = blank(open(path, encoding="utf-8").read())
    lines = text.split("\n")
    depth, stack, found = 0, [], []
    for ln, line in enumerate(lines, 1):
        for col, ch in enumerate(line):
            if ch == "{":
                head = " ".join(l.strip() for l in lines[max(0, ln - 4):ln - 1]) + " " + line[:col]
                head = head[head.rfind(";") + 1:] if ";" in head else head
                head = head[head.rfind("}") + 1:] if "}" in head else head
                is_func = (")" in head and not HEAD_KEYWORDS.search(head.split("(")[0] if "(" in head else head)
                           and not TYPE_KEYWORDS.search(head) and not head.rstrip().endswith("="))
                stack.append((ln, is_func and not any(s[1] for s in stack), head.strip()))
            elif ch == "}" and stack:
                start, is_func, head = stack.pop()
                if is_func:
                    found.append((start, ln, head))
    return found


def main():
    problems = []
    for root in ROOTS:
        for dirpath, _, files in os.walk(root):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h", ".cu", ".cuh")):
                    continue
                p = os.path.join(dirpath, f)
                n = sum(1 for _ in open(p, encoding="utf-8"))
                if n > MAX_FILE:
                    problems.append(f"{p}:1: {n} lines (at most {MAX_FILE} per file)")
                if not p.startswith(os.path.join("lib", "config")):
                    for i, line in enumerate(open(p, encoding="utf-8"), 1):
                        if RAW_TREE_READ.search(line):
                            problems.append(f"{p}:{i}: reads the recipe's raw tree; use recipe.get<Options>()")
                for start, end, head in functions(p):
                    if end - start + 1 > MAX_FUNC:
                        name = re.sub(r"\s+", " ", head)[:80]
                        problems.append(f"{p}:{start}: function of {end - start + 1} lines (at most {MAX_FUNC}): {name}")
    for p in problems:
        print(p)
    print(f"check_code_shape: {len(problems)} problem(s)" if problems else "check_code_shape: OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
