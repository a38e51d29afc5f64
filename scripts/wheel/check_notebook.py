#!/usr/bin/env python3
"""Runs scripts/wheel/notebook.ipynb as Jupyter runs it (nbclient and an ipykernel, in the venv that runs this) and
checks what its cells printed. scripts/wheel/in_root.sh calls it inside the wheel check's fresh root:

  check_notebook.py notebook.ipynb --wheels DIR --tag pt211 [--recipe photos.toml]

The first code cell (the folders: WHEELS, RECIPE) is replaced by this run's, as papermill injects parameters; every
other cell runs as written, and README's notebook cells are these cells. Checks: every cell ran without an error;
pip installed the +TAG wheel; kgtrain's progress reached the cell as plain lines (no carriage returns, no ANSI
escapes); both fits finished; tta-predict wrote a submission with a row per test image. Exit 0 passed, 1 failed.
"""
import argparse
import csv
import os
import re
import sys
import time

import nbclient
import nbformat


def text_of(cell):
    out = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            out.append(o.get("text", ""))
        elif o.get("output_type") in ("execute_result", "display_data"):
            out.append(o.get("data", {}).get("text/plain", ""))
        elif o.get("output_type") == "error":
            out.append("\n".join(o.get("traceback", [])))
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("notebook")
    ap.add_argument("--wheels", required=True)
    ap.add_argument("--tag", required=True, help="the local version pip must pick, e.g. pt211")
    ap.add_argument("--recipe", default="photos.toml")
    a = ap.parse_args()

    nb = nbformat.read(a.notebook, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    code[0].source = f"WHEELS = {a.wheels!r}\nRECIPE = {a.recipe!r}"
    # pip must install, not find kgtrain already there: the notebook's own pip cell does the install.
    os.system(f"{sys.executable} -m pip uninstall -q -y kgtrain >/dev/null 2>&1")
    t0 = time.time()
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=False,
                                     resources={"metadata": {"path": os.getcwd()}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        print(f"check_notebook: a cell failed:\n{e}", file=sys.stderr)
        return 1
    took = time.time() - t0
    problems = []
    texts = [text_of(c) for c in code]
    for i, t in enumerate(texts):
        # A `!` cell runs its command on a pseudo-terminal, which turns each "\n" into "\r\n" (Jupyter shows a line);
        # a "\r" alone is a line redrawn in place, which a cell shows as thousands of lines.
        if re.search(r"\r(?!\n)", t):
            problems.append(f"cell {i + 1} printed carriage returns that redraw a line (a progress bar in place)")
        if "\x1b[" in t:
            problems.append(f"cell {i + 1} printed ANSI escapes")
    from importlib import metadata
    picked = metadata.version("kgtrain")
    if not picked.endswith("+" + a.tag):
        problems.append(f"the pip cell installed kgtrain {picked}, not the +{a.tag} wheel")
    fit_text, run_text, tta_text = texts[2], texts[3], texts[4]
    for name, t in (("!kgtrain fit", fit_text), ("kgtrain.run", run_text)):
        if "epoch" not in t.lower():
            problems.append(f"the {name} cell printed no epoch lines:\n{t[-800:]}")
    try:
        # tta-predict's own line: "submission: PATH (N rows; ...)".
        m = re.search(r"^submission: (\S+) \(", tta_text.replace("\r\n", "\n"), re.M)
        if not m:
            raise ValueError("the cell printed no 'submission:' line")
        sub = m.group(1)
        rows = list(csv.reader(open(sub)))
        with open(os.path.join(os.path.dirname(a.recipe) or ".", "photos_ci", "test.csv")) as f:
            want = sum(1 for _ in f) - 1
        if len(rows) - 1 != want:
            problems.append(f"the submission {sub} has {len(rows) - 1} rows, the test set {want}")
    except (OSError, KeyError, ValueError) as e:
        problems.append(f"no submission from the tta-predict cell ({e}):\n{tta_text[-800:]}")
    if problems:
        for p in problems:
            print("check_notebook: FAILED: " + p, file=sys.stderr)
        return 1
    print(f"check_notebook: {len(code)} cells ran in {took:.1f} s (pip picked kgtrain {picked}; plain progress lines;"
          f" submission {sub} with {want} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
