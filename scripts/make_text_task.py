#!/usr/bin/python3
"""A real text + numeric classification task from this machine's Debian package index: predict a package's
Section (libs, libdevel, python, doc, perl, ...) from its description, with a few numeric columns beside it.

  python3 scripts/make_text_task.py OUT_DIR [--rows N] [--seed S] [--classes 10] [--index auto|system|fetch]
                                    [--apt-dir DIR] [--short-only]

Writes (RFC 4180 CSV, UTF-8, "\\n" line ends; a text with a comma, a quote or a line break is quoted):
  OUT_DIR/train.csv        id,text,installed_size_log,size_log,n_depends,n_recommends,n_suggests,arch_all,fold,label
  OUT_DIR/test.csv         the same columns without label (about 20 % of the packages)
  OUT_DIR/test_labels.csv  id,label: scores a prediction of test.csv
  OUT_DIR/meta.json        where the index came from (its Release dates), the classes, the counts per class and split

Columns:
  id                  the package name (unique)
  text                the short description, a line break, then the long description: Debian's continuation lines
                      joined with spaces, " ." paragraph lines and verbatim / list lines ("  * item") as line breaks,
                      control characters dropped, runs of spaces collapsed; never empty, always valid UTF-8
  installed_size_log  log1p(Installed-Size in KiB)      size_log  log1p(Size of the .deb in bytes)
  n_depends           entries of Depends + Pre-Depends  n_recommends, n_suggests  entries of Recommends, Suggests
  arch_all            1 for an Architecture: all package, else 0
  fold                0..4 from a hash of the name: kgtrain's cv.strategy = "column" and the Python peer
                      (scripts/bench_text_peer.py) hold out the same rows (fold 0)
  label               the Section, "contrib/x" and "non-free/x" counted as x; only the --classes most frequent
                      sections are kept (ties by name), other packages are dropped

Deterministic: the train/test split is a hash of the package name (SHA-256, 20 % test), so each package stays on its
side whatever else changes in the index; --rows caps train.csv by a stratified sample (per class, the packages with
the smallest hash of (seed, name), in proportion to the class sizes); rows are written in hash order. The same index
gives byte-identical files; a newer index (a Debian point release) changes a few packages.

Long descriptions: `apt-cache dumpavail` carries only the short description (Packages files hold Description-md5); the
long ones are in the index's English translations (Translation-en). A standard Debian 12 install fetches them with
`apt-get update`; Docker-style images (Acquire::Languages "none", as here) do not. --index auto (default) uses the
system's index when it has them and otherwise fetches a private index (Packages + Translation-en, about 16 MB from the
machine's apt sources) with apt-get into --apt-dir (default OUT_DIR/apt-index), leaving the system's apt state alone;
--index system never fetches (an error if the long descriptions are missing, unless --short-only), --index fetch
always does. Standard library + apt only.
"""
import argparse, collections, csv, hashlib, json, math, os, re, shutil, subprocess, sys, unicodedata

PROG = "make_text_task"
FEATURES = ["installed_size_log", "size_log", "n_depends", "n_recommends", "n_suggests", "arch_all"]
TEST_PERCENT = 20
FOLDS = 5


def die(msg):
    sys.exit(f"{PROG}: error: {msg}")


def run(cmd, **kw):
    try:
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw).stdout
    except FileNotFoundError:
        die(f"{cmd[0]} not found: this script reads a Debian/Ubuntu apt package index")
    except subprocess.CalledProcessError as e:
        die(f"{' '.join(cmd[:3])} ... failed (exit {e.returncode}): {e.stderr.decode('utf-8', 'replace').strip()}")


def h(*parts):
    return int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:8], "big")


def stanzas(data):
    """Deb822 paragraphs of bytes -> dicts of str (continuation lines kept with their leading space)."""
    for para in re.split(rb"\n\s*\n", data):
        if not para.strip():
            continue
        fields, key = {}, None
        try:
            text = para.decode("utf-8")
        except UnicodeDecodeError:
            text, fields["_invalid_utf8"] = para.decode("utf-8", "replace"), True
        for line in text.split("\n"):
            if line[:1] in (" ", "\t") and key is not None:
                fields[key] += "\n" + line
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        yield fields


class Index:
    """The apt index to read: the system's, or a private one under a folder (its own lists + caches)."""

    def __init__(self, lists_dir=None, conf=None):
        self.opts = []
        if lists_dir:
            self.opts = ["-c", conf, "-o", f"Dir::State::Lists={lists_dir}", "-o", "Dir::Cache::pkgcache=",
                         "-o", "Dir::Cache::srcpkgcache=", "-o", "Debug::NoLocking=1"]
        self.lists_dir = lists_dir

    def targets(self, identifier, extra=()):
        out = run(["apt-get", "indextargets", *self.opts, "--format", "$(FILENAME)", f"Identifier: {identifier}",
                   *extra]).decode()
        return [p for p in out.split() if os.path.exists(p)]

    def packages_text(self):
        return run(["apt-cache", *self.opts, "dumpavail"])

    def translations(self):
        """Description-md5 -> the English description (short line + long lines), from every Translation-en file."""
        out = {}
        for path in self.targets("Translations", ["Language: en"]):
            for st in stanzas(run(["/usr/lib/apt/apt-helper", "cat-file", path])):
                if "Description-md5" in st and "Description-en" in st and not st.get("_invalid_utf8"):
                    out[st["Description-md5"]] = st["Description-en"]
        return out

    def releases(self):
        """The Release files' Origin/Suite/Date, for meta.json."""
        lists = self.lists_dir or run(["apt-config", "shell", "D", "Dir::State::Lists/d"]).decode().split("'")[1]
        out = []
        for name in sorted(os.listdir(lists)):
            if name.endswith("InRelease") or name.endswith("_Release"):
                with open(os.path.join(lists, name), "rb") as f:
                    head = f.read(4096).decode("utf-8", "replace")
                got = {k: v for k, v in re.findall(r"^(Origin|Suite|Codename|Date): (.*)$", head, re.M)}
                out.append(dict(got, file=name))
        return out


def fetch_index(apt_dir):
    """apt-get update into apt_dir with English translations, from the machine's own sources; the system untouched."""
    lists = os.path.join(apt_dir, "lists")
    os.makedirs(os.path.join(lists, "partial"), exist_ok=True)
    os.makedirs(os.path.join(apt_dir, "archives", "partial"), exist_ok=True)
    conf = os.path.join(apt_dir, "apt.conf")
    with open(conf, "w") as f:  # "#clear": a Docker image's Acquire::Languages "none" would win over an -o option
        f.write('#clear Acquire::Languages;\nAcquire::Languages { "en"; };\n')
    cmd = ["apt-get", "-c", conf, "-o", f"Dir::State::Lists={lists}", "-o", f"Dir::Cache={apt_dir}",
           "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=", "-o", "Debug::NoLocking=1",
           "-q", "update"]
    print(f"{PROG}: fetching the package index with English descriptions into {apt_dir} (apt-get update)",
          file=sys.stderr)
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except FileNotFoundError:
        die("apt-get not found: this script reads a Debian/Ubuntu apt package index")
    log = r.stdout.decode("utf-8", "replace")
    idx = Index(lists, conf)
    if r.returncode != 0 or not idx.targets("Translations", ["Language: en"]):
        die("could not fetch the English package descriptions (Translation-en) with apt-get update:\n"
            + "\n".join(log.strip().splitlines()[-8:])
            + "\nOn a machine with them (Acquire::Languages including \"en\"), run with --index system; or pass"
              " --short-only to use the one-line descriptions alone.")
    return idx


def clean_long(lines):
    """Debian's long description lines (leading space stripped by the caller) -> text with line breaks."""
    out, cur = [], []
    for raw in lines:
        if raw.strip() == ".":  # paragraph separator
            if cur:
                out.append(" ".join(cur))
                cur = []
            continue
        verbatim = raw.startswith(" ") or raw.startswith("\t")  # "  * item", code, tables: a line of their own
        s = raw.strip()
        if not s:
            continue
        if verbatim and cur:
            out.append(" ".join(cur))
            cur = []
        cur.append(s)
        if verbatim:
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return "\n".join(out)


def clean_line(s):
    s = "".join(c if c in "\n" or unicodedata.category(c)[0] != "C" else " " for c in s)
    s = unicodedata.normalize("NFC", s)
    return "\n".join(re.sub(r"[ \t\u00a0]+", " ", line).strip() for line in s.split("\n") if line.strip())


def count_entries(field):
    return sum(1 for e in field.split(",") if e.strip()) if field else 0


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--rows", type=int, default=0, help="cap train.csv at N rows (stratified sample; 0 = all)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the --rows sample (the split itself has none)")
    ap.add_argument("--classes", type=int, default=10, help="keep the N most frequent sections (default 10)")
    ap.add_argument("--index", choices=["auto", "system", "fetch"], default="auto")
    ap.add_argument("--apt-dir", default="", help="private apt index folder for --index fetch (default OUT/apt-index)")
    ap.add_argument("--short-only", action="store_true", help="texts from the one-line descriptions alone")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)

    system = Index()
    if not system.targets("Packages"):
        die("apt has no package index (no Packages files in its lists): run `apt-get update` (as root) first")
    idx, translations = system, {}
    if not a.short_only:
        if a.index in ("auto", "system"):
            translations = system.translations()
        if not translations:
            if a.index == "system":
                die("the system's apt index has no English long descriptions (Translation-en; Docker images set "
                    "Acquire::Languages \"none\"): use --index fetch (or auto), or --short-only")
            idx = fetch_index(a.apt_dir or os.path.join(a.out_dir, "apt-index"))
            translations = idx.translations()
    raw = idx.packages_text()

    seen, rows, why = set(), [], collections.Counter()
    for st in stanzas(raw):
        name = st.get("Package", "")
        if not name or name in seen:
            why["duplicate"] += bool(name)
            continue
        seen.add(name)
        if st.get("_invalid_utf8"):  # none in Debian 12's index; a third-party source might have Latin-1
            why["stanza not valid UTF-8"] += 1
            continue
        section = st.get("Section", "")
        for area in ("contrib/", "non-free/", "non-free-firmware/"):
            if section.startswith(area):
                section = section[len(area):]
        desc = st.get("Description", "")
        short, _, inline_long = desc.partition("\n")
        long_lines = [l[1:] for l in inline_long.split("\n")] if inline_long else []
        if not long_lines and not a.short_only:
            full = translations.get(st.get("Description-md5", ""))
            if full is None:
                why["no long description in the index"] += 1
            else:
                short_t, _, rest = full.partition("\n")
                short = short_t or short
                long_lines = [l[1:] for l in rest.split("\n")] if rest else []
        text = clean_line(short.strip())
        long_text = clean_line(clean_long(long_lines)) if long_lines else ""
        if long_text:
            text = f"{text}\n{long_text}" if text else long_text
        if not text:
            why["empty text"] += 1
            continue
        try:
            inst = float(st.get("Installed-Size", "0") or 0)
            size = float(st.get("Size", "0") or 0)
        except ValueError:
            why["bad size"] += 1
            continue
        feats = [math.log1p(inst), math.log1p(size),
                 count_entries(st.get("Depends", "")) + count_entries(st.get("Pre-Depends", "")),
                 count_entries(st.get("Recommends", "")), count_entries(st.get("Suggests", "")),
                 1 if st.get("Architecture", "") == "all" else 0]
        rows.append({"id": name, "text": text, "feats": feats, "label": section, "has_long": bool(long_text)})
    if len(rows) < 1000:
        die(f"only {len(rows)} packages in apt's index: run `apt-get update` (as root) first")

    counts = collections.Counter(r["label"] for r in rows)
    classes = [c for c, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:a.classes]]
    keep = set(classes)
    dropped_other = sum(1 for r in rows if r["label"] not in keep)
    rows = [r for r in rows if r["label"] in keep]
    for r in rows:
        r["split_hash"] = h("split", r["id"])
        r["fold"] = h("fold", r["id"]) % FOLDS
    rows.sort(key=lambda r: (r["split_hash"], r["id"]))
    test = [r for r in rows if r["split_hash"] % 100 < TEST_PERCENT]
    train = [r for r in rows if r["split_hash"] % 100 >= TEST_PERCENT]
    if a.rows and a.rows < len(train):
        by = collections.defaultdict(list)
        for r in train:
            by[r["label"]].append(r)
        quota = {c: a.rows * len(v) / len(train) for c, v in by.items()}
        take = {c: int(q) for c, q in quota.items()}
        for c in sorted(by, key=lambda c: (-(quota[c] - take[c]), c))[:a.rows - sum(take.values())]:
            take[c] += 1  # largest remainders
        chosen = set()
        for c, v in by.items():
            chosen.update(r["id"] for r in sorted(v, key=lambda r: (h("rows", str(a.seed), r["id"]), r["id"]))[:take[c]])
        train = [r for r in train if r["id"] in chosen]

    header = ["id", "text"] + FEATURES
    def write(name, rs, cols, label):
        tmp = os.path.join(a.out_dir, name + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
            w.writerow(cols)
            for r in rs:
                vals = [r["id"]] + ([r["text"]] if "text" in cols else [])
                if "text" in cols:
                    vals += [f"{r['feats'][0]:.6f}", f"{r['feats'][1]:.6f}"] + [str(v) for v in r["feats"][2:]]
                if "fold" in cols:
                    vals.append(str(r["fold"]))
                if label:
                    vals.append(r["label"])
                w.writerow(vals)
        os.replace(tmp, os.path.join(a.out_dir, name))
    write("train.csv", train, header + ["fold", "label"], True)
    write("test.csv", test, header, False)
    write("test_labels.csv", test, ["id", "label"], True)

    per = {c: {"train": sum(r["label"] == c for r in train), "test": sum(r["label"] == c for r in test)}
           for c in classes}
    lens = sorted(len(r["text"]) for r in train + test)
    meta = {"source": "apt index" + (" (private fetch: %s)" % idx.lists_dir if idx.lists_dir else " (system)"),
            "releases": idx.releases(), "classes": classes, "counts": per,
            "train_rows": len(train), "test_rows": len(test), "rows_cap": a.rows, "seed": a.seed,
            "short_only": a.short_only, "packages_in_index": len(seen),
            "dropped": dict(why, **{"section not kept": dropped_other}),
            "without_long_description": sum(not r["has_long"] for r in train + test),
            "text_chars": {"median": lens[len(lens) // 2], "p90": lens[len(lens) * 9 // 10], "max": lens[-1]},
            "features": FEATURES}
    with open(os.path.join(a.out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"{PROG}: {a.out_dir}: train.csv {len(train)} rows, test.csv {len(test)} rows, {len(classes)} classes "
          f"(from {len(seen)} packages; {dropped_other} in other sections, "
          f"{sum(why.values()) - why['duplicate']} unusable)")
    for c in classes:
        print(f"  {c:<10} train {per[c]['train']:>6}  test {per[c]['test']:>6}")


if __name__ == "__main__":
    main()
