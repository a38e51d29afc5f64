#!/usr/bin/env python3
"""Recomputes `kgtrain interpret RUN`'s numbers from the run's OOF file with plain Python and compares:
the confusion matrix (arg-max of the probability columns against the target), per-class precision and
recall, and the largest loss (-log p(true)). Classification runs.

  python3 scripts/check_interpret.py RUN        (after kgtrain interpret RUN)
"""
import csv
import json
import math
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    run = sys.argv[1]
    src = os.path.join(run, "oof.csv") if os.path.exists(os.path.join(run, "oof.csv")) else os.path.join(run, "oof_fold.csv")
    rows = list(csv.reader(open(src)))
    header, rows = rows[0], rows[1:]
    classes = header[4:]
    cm = {(a, b): 0 for a in classes for b in classes}
    worst = 0.0
    for r in rows:
        p = [float(x) for x in r[4:]]
        pred = classes[max(range(len(p)), key=lambda i: p[i])]
        cm[(r[2], pred)] += 1
        worst = max(worst, -math.log(max(p[classes.index(r[2])], 1e-15)))
    out = os.path.join(run, "interpret")
    ours = list(csv.reader(open(os.path.join(out, "confusion_matrix.csv"))))
    for i, a in enumerate(classes):
        for j, b in enumerate(classes):
            if int(ours[1 + i][1 + j]) != cm[(a, b)]:
                sys.exit(f"confusion[{a}][{b}]: interpret {ours[1 + i][1 + j]}, recomputed {cm[(a, b)]}")
    info = json.load(open(os.path.join(out, "interpret.json")))
    for k, c in enumerate(classes):
        tp = cm[(c, c)]
        fp = sum(cm[(o, c)] for o in classes if o != c)
        fn = sum(cm[(c, o)] for o in classes if o != c)
        got = info["per_class"][k]
        if abs(got["precision"] - (tp / (tp + fp) if tp + fp else 0)) > 1e-12 or abs(got["recall"] - tp / (tp + fn)) > 1e-12:
            sys.exit(f"class {c}: precision/recall differ from the recomputation")
    top = info["images"]["top_losses"][0]["loss"] if info["images"]["top_losses"] else worst
    if abs(top - worst) > 1e-6 * max(1.0, worst):
        sys.exit(f"top loss: interpret {top}, recomputed {worst}")
    print(f"{src}: {len(rows)} rows; confusion matrix, per-class precision/recall of {len(classes)} classes and the "
          f"top loss ({worst:.4f}) equal the recomputation")


if __name__ == "__main__":
    main()
