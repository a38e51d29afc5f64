#!/usr/bin/env python3
"""The reliability figures of issue 26 (docs/reliability.md), measured against a built kgtrain; standard library only.
Run by scripts/reliability.sh, which prints the table.

  python3 scripts/reliability.py hostile KGTRAIN WORKDIR   hostile sizes: refused cleanly, peak RSS bounded
  python3 scripts/reliability.py faults  KGTRAIN WORKDIR SHIM   ENOSPC/EIO at the N-th write/fsync/rename
  python3 scripts/reliability.py kills   KGTRAIN WORKDIR [N]    SIGKILL anywhere + --resume: bit-identical weights
  python3 scripts/reliability.py sigterm KGTRAIN WORKDIR [N]    SIGTERM: exit 143, checkpoint saved
  python3 scripts/reliability.py locks   KGTRAIN WORKDIR        a second writer or reader of a run in use: refused
Each prints one line per trial and, last, one JSON line with its totals.
"""
import hashlib
import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
import zlib

MODE, KG, WORK = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
os.makedirs(WORK, exist_ok=True)


def write(rel, data):
    p = os.path.join(WORK, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return p


def png(width, height):
    """A valid PNG header (IHDR CRC correct) declaring width x height, with one tiny IDAT."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def jpeg(width, height):
    """SOI, a baseline frame header declaring width x height, EOI: enough for a decoder to size its buffer."""
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + sof + b"\xff\xd9"


def dataset(name, train_csv, images):
    root = os.path.join(WORK, name)
    write(f"{name}/train.csv", train_csv)
    for rel, data in images.items():
        write(f"{name}/train/{rel}", data)
    return write(f"{name}.toml", f'[data]\nroot = "{root}"\nchannels = 1\nimage_size = 28\n'
                                  f'[model]\nname = "resnet9"\nwidth = 4\n')


def small_png():
    return png(28, 28)  # decodes as damaged (the IDAT is short): only the header matters here


def labels_csv(n, label):
    return "id,label\n" + "".join(f"{i},{label(i)}\n" for i in range(n))


def hostile():
    cases = []


    def case(name, args, want_exit, want_text, declared):
        cases.append((name, args, want_exit, want_text, declared))


    # Images whose headers declare 30000 x 30000 (2.7 GB decoded): refused from the header.
    bomb = dataset("png_bomb", labels_csv(4, lambda i: i % 2), {"0.png": png(30000, 30000), "1.png": small_png(),
                                                                  "2.png": small_png(), "3.png": small_png()})
    case("PNG declaring 30000 x 30000", ["fit", bomb, "--check-data"], 3, "declares 30000 x 30000 pixels", "2.7 GB")
    jbomb = dataset("jpeg_bomb", labels_csv(4, lambda i: i % 2), {})
    for i in range(4):
        write(f"jpeg_bomb/train/{i}.png", jpeg(30000, 30000))
    case("JPEG declaring 30000 x 30000", ["fit", jbomb, "--check-data"], 3, "declares 30000 x 30000 pixels", "2.7 GB")
    # A CSV field of 100 MB and a header of a million columns.
    field = dataset("csv_field", "id,label\n0,1\n1," + "x" * (100 << 20) + "\n", {})
    case("CSV field of 100 MB", ["fit", field, "--check-data"], 3, "more than a field may (16 MiB)", "100 MB field")
    wide = dataset("csv_columns", "id," + ",".join(f"c{i}" for i in range(1_000_000)) + ",label\n", {})
    case("CSV row of 1,000,000 columns", ["fit", wide, "--check-data"], 3, "more than 100,000 fields", "1M columns")
    # A label set of a million classes (string labels), and one integer label of 10^15.
    million = dataset("million_classes", labels_csv(1_000_000, lambda i: f"class_{i}"), {})
    case("1,000,000 distinct labels", ["fit", million, "--check-data"], 3, "more than data.max_classes = 100000",
         "1M-way head")
    huge_int = dataset("huge_label", "id,label\n0,0\n1,1000000000000000\n", {})
    case("integer label 10^15", ["fit", huge_int, "--check-data"], 3, "more of them than data.max_classes", "10^15 classes")
    # A safetensors file whose header length says 200 MB (the reference implementation's cap is 100 MB).
    st = write("big_header.safetensors", struct.pack("<Q", 200 << 20) + b"{}")
    valid = tiny_recipe("hostile_valid", tiny_dataset("hostile_valid_data", train=8, test=4))
    case("safetensors header of 200 MB", ["tta-predict", valid, "--weights", st, "--out", os.path.join(WORK, "s.csv")],
         3, "exceeds the 100 MB limit", "200 MB header")
    # Deeply nested TOML: 100,000 open brackets.
    deep = write("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    case("TOML array nested 100,000 deep", ["show", deep], 2, "deep.toml:1:", "stack overflow")
    long_key = write("long_key.toml", ".".join(["a"] * 1_000_000) + " = 1\n")
    case("TOML key of 1,000,000 parts", ["show", long_key], 2, "more than 64 dotted parts", "stack overflow")
    # A pack whose header claims 2^40 items in a 4 KB file.
    pack = bytearray(4096)
    pack[0:8] = b"KGPACK01"
    struct.pack_into("<IIQ", pack, 8, 1, 0, 1 << 40)  # version, flags, item count
    struct.pack_into("<QQQQQQQ", pack, 24, 128, 0, 128, 16 << 40, 128, 2, 4096)  # items, index, metadata, file size
    write("packed/train.kgpack", bytes(pack))
    pack_recipe = write("packed.toml", f'[data]\nroot = "{os.path.join(WORK, "packed")}"\nformat = "pack"\nchannels = 1\n'
                                       f'image_size = 28\n')
    case("pack claiming 2^40 items", ["fit", pack_recipe, "--check-data"], 3, "train.kgpack", "16 TB index")
    # IDX files declaring 2^31 images of 28 x 28 in 16 bytes.
    idx_images = write("idx/images", struct.pack(">IIII", 0x803, 1 << 31, 28, 28))
    idx_labels = write("idx/labels", struct.pack(">II", 0x801, 1 << 31))
    case("IDX declaring 2^31 images", ["import-idx", "--train-images", idx_images, "--train-labels", idx_labels,
                                       "--test-images", idx_images, "--test-labels", idx_labels, "--out",
                                       os.path.join(WORK, "idx_out")], 3, "idx/images", "1.7 TB")

    refused = 0
    rows = []
    for name, args, want_exit, want_text, declared in cases:
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", KG] + args, capture_output=True, text=True,
                              errors="replace", timeout=600)
        lines = proc.stderr.strip().splitlines()
        rss_mb = int(lines[-1]) / 1024 if lines and lines[-1].isdigit() else float("nan")
        message = "\n".join(lines[:-1]) + proc.stdout
        ok = proc.returncode == want_exit and want_text in message
        refused += ok
        first = next((l for l in message.splitlines() if want_text in l), message.strip().splitlines()[0] if message.strip() else "")
        rows.append({"case": name, "exit": proc.returncode, "want_exit": want_exit, "clean": ok, "peak_rss_mb": round(rss_mb),
                     "declared": declared, "message": first.strip()[:160]})
        print(f"{'ok  ' if ok else 'FAIL'} {name:32s} exit {proc.returncode} (want {want_exit})  peak RSS {rss_mb:6.0f} MB  "
              f"{first.strip()[:110]}", flush=True)
    return {"hostile_tried": len(cases), "hostile_refused_cleanly": refused,
            "max_peak_rss_mb": max(r["peak_rss_mb"] for r in rows), "cases": rows}


# --- a tiny real training job ---------------------------------------------------------------------------------------

def gray_png(rows):
    """8-bit gray PNG of `rows` (lists of 0..255)."""
    h, w = len(rows), len(rows[0])
    raw = b"".join(b"\0" + bytes(r) for r in rows)
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def tiny_dataset(root, train=96, test=16, size=12):
    """Two classes a small CNN learns at once: "left" images bright on the left half, "right" on the right."""
    rng = random.Random(7)
    def image(side):
        return gray_png([[min(255, (200 if (x < size // 2) == (side == "left") else 40) + rng.randrange(40))
                          for x in range(size)] for _ in range(size)])
    rows, test_rows = [], []
    for i in range(1, train + test + 1):
        side = "left" if rng.random() < 0.5 else "right"
        split = "train" if i <= train else "test"
        write(f"{root}/{split}/{i}.png", image(side))
        (rows if split == "train" else test_rows).append((i, side))
    write(f"{root}/train.csv", "id,label\n" + "".join(f"{i},{s}\n" for i, s in rows))
    write(f"{root}/test.csv", "id\n" + "".join(f"{i}\n" for i, _ in test_rows))
    write(f"{root}/sample_submission.csv", "id,label\n" + "".join(f"{i},left\n" for i, _ in test_rows))
    return os.path.join(WORK, root)


def tiny_recipe(name, root, extra=""):
    return write(f"{name}.toml", f"""[run]
name = "{name}"
seed = 3
[data]
root = "{root}"
sample_submission = "sample_submission.csv"
channels = 1
image_size = 12
num_workers = 0
[cv]
folds = 4
fold = 1
[model]
name = "resnet9"
width = 4
[optim]
lr = 0.02
weight_decay = 0.0
[train]
epochs = 3
batch_size = 8
checkpoint_every_steps = 2
[device]
threads = 1
deterministic = true
[ema]
enabled = true
[log]
loggers = ["jsonl", "csv", "tensorboard"]
""" + extra)


def kg(args, env=None, timeout=900):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([KG] + args, capture_output=True, text=True, errors="replace", env=e, timeout=timeout, cwd=WORK)
    return p.returncode, p.stdout + p.stderr


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def checkpoint_problem(d):
    """"" when folder d is a complete checkpoint (its MANIFEST.json, sizes and SHA-256 all agree), else why not."""
    try:
        with open(os.path.join(d, "MANIFEST.json"), "rb") as f:
            m = json.loads(f.read())
        own = m.pop("manifest_sha256")
        if hashlib.sha256(json.dumps(m, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()).hexdigest() != own:
            return "MANIFEST.json does not match its own hash"
        for e in m["files"]:
            p = os.path.join(d, e["name"])
            if os.path.getsize(p) != e["bytes"] or sha(p) != e["sha256"]:
                return e["name"] + " differs from the manifest"
        return ""
    except Exception as ex:  # missing or unreadable: not a complete checkpoint
        return f"{type(ex).__name__}: {ex}"


def checkpoints(run):
    """Every published checkpoint folder under run (temp folders .tmp-* excluded)."""
    out = []
    for base, dirs, _ in os.walk(run):
        if os.path.basename(base) == "checkpoints":
            out += [os.path.join(base, d) for d in sorted(dirs) if not d.startswith(".tmp-")]
    return out


def final_weights(run):
    """The hashes of every fold's final and best weights: equal hashes are bit-identical weights."""
    return {os.path.relpath(c, run): sha(os.path.join(c, "model.safetensors"))
            for c in checkpoints(run) if os.path.basename(c) in ("last", "best")}


def kg_fit_resume(run, flags=()):
    """The user's `fit --resume RUN` (with the flags the run was started with, such as --nproc 2)."""
    return kg(["fit", "--resume", run, "--quiet"] + list(flags))


def sample(n, k, rng):
    """Up to k call numbers in 1..n: the first, the last, and spread evenly between."""
    if n <= k:
        return list(range(1, n + 1))
    return sorted({1, n} | {1 + round(i * (n - 1) / (k - 1)) for i in range(k)})


def faults(shim, per_op=12):
    rng = random.Random(26)
    root = tiny_dataset("fault_data")
    recipe = tiny_recipe("faults", root)
    ref = os.path.join(WORK, "fault_ref")
    rc, out = kg(["fit", recipe, "--run-dir", ref, "--quiet"])
    assert rc == 0, out
    want = final_weights(ref)
    trace_file, count_file = os.path.join(WORK, "fault_trace.txt"), os.path.join(WORK, "fault_count.txt")
    rc, out = kg(["fit", recipe, "--run-dir", os.path.join(WORK, "fault_counted"), "--quiet"],
                 {"LD_PRELOAD": shim, "KGTRAIN_FAULT_TRACE": trace_file, "KGTRAIN_FAULT_COUNT": count_file})
    assert rc == 0 and final_weights(os.path.join(WORK, "fault_counted")) == want, out
    trace = [line.split() for line in open(trace_file).read().splitlines()]
    counts = {op: int(n) for op, n in (l.split() for l in open(count_file).read().splitlines())}
    totals = {"faults_injected": 0, "clean_errors": 0, "recovered_without_error": 0, "corrupt_loads": 0, "checkpoints_lost": 0,
              "resumed_identical": 0, "calls": {k: counts[k] for k in ("write", "fsync", "rename")}}
    trial = 0
    for op in ("write", "fsync", "rename"):
        for n in sample(counts[op], per_op, rng):
            err = "ENOSPC:sticky" if trial % 2 == 0 else "EIO"
            trial += 1
            run = os.path.join(WORK, f"fault_{op}_{n}")
            rc, out = kg(["fit", recipe, "--run-dir", run, "--quiet"],
                         {"LD_PRELOAD": shim, "KGTRAIN_FAULT": f"{op}:{n}:{err}"})
            totals["faults_injected"] += 1
            reason = "No space left on device" if err.startswith("ENOSPC") else "Input/output error"
            at = next(i for i, t in enumerate(trace) if t[0] == op and int(t[1]) == n)
            # Deleting a rotated-out checkpoint renames it to .trash-* first and, if that fails, deletes it where it
            # is: the run needs no error there, and ends as it would have.
            discard = op == "rename" and len(trace[at]) > 2 and "/.trash-" in trace[at][2]
            clean = (rc == 3 and reason in out and run in out) or (discard and rc == 0)  # names the file
            totals["clean_errors"] += clean
            totals["recovered_without_error"] += discard and rc == 0
            # Every published checkpoint must be complete; the last one published before the fault must be there.
            published = any(t[0] == "rename" and len(t) > 2 and t[2].endswith("/checkpoints/last") for t in trace[:at])
            bad = [c for c in checkpoints(run) if checkpoint_problem(c)]
            last = os.path.join(run, "checkpoints", "last")
            lost = published and (not os.path.isdir(last) or checkpoint_problem(last) != "")
            totals["checkpoints_lost"] += lost
            rc2, out2 = kg_fit_resume(run) if os.path.exists(os.path.join(run, "recipe.toml")) else (None, "")
            if rc2 is None:  # the fault came before the run held a recipe: nothing to resume, start again
                rc2, out2 = kg(["fit", recipe, "--resume", run, "--quiet"])
            identical = rc2 == 0 and final_weights(run) == want
            # A damaged checkpoint that was loaded would have changed the weights: count it as a corrupt load.
            totals["corrupt_loads"] += len(bad) + (rc2 == 0 and not identical)
            totals["resumed_identical"] += identical
            first = next((l for l in out.splitlines() if reason in l), out.strip().splitlines()[-1] if out.strip() else "")
            print(f"{'ok  ' if clean and not bad and not lost and identical else 'FAIL'} {op:6s} #{n:<4d} {err:13s} "
                  f"exit {rc} resume {rc2} identical {identical} damaged {len(bad)} lost {lost}  {first.strip()[:120]}",
                  flush=True)
            if rc2 != 0:
                print("   resume said: " + out2.strip()[-400:], flush=True)
    # The other commands' outputs: the submission (tta-predict), a pack, lr-find's files. After a fault each is
    # absent or complete (the bytes of a run without faults), and running the command again gives those bytes.
    others = [("tta-predict", lambda o: ["tta-predict", recipe, "--from-run", ref, "--out", o], "submission.csv"),
              ("pack", lambda o: ["pack", recipe, "--out", o], "train.kgpack"),
              ("lr-find", lambda o: ["lr-find", recipe, "--run-dir", o], "lr_find.csv")]
    for name, args, product in others:
        def produced(o):
            p = os.path.join(o, product) if name == "lr-find" else o
            return sha(p) if os.path.exists(p) else None
        base = os.path.join(WORK, f"{name}_ref")
        rc, out = kg(args(base if name == "lr-find" else base + "_" + product))
        assert rc == 0, out
        want_out = produced(base if name == "lr-find" else base + "_" + product)
        rc, out = kg(args(os.path.join(WORK, f"{name}_counted")), {"LD_PRELOAD": shim, "KGTRAIN_FAULT_COUNT": count_file})
        assert rc == 0, out
        counts = {op: int(n) for op, n in (l.split() for l in open(count_file).read().splitlines())}
        for op in ("write", "fsync", "rename"):
            for n in sample(counts[op], max(2, per_op // 3), rng):
                err = "ENOSPC:sticky" if trial % 2 == 0 else "EIO"
                trial += 1
                o = os.path.join(WORK, f"{name}_{op}_{n}")
                target = o if name == "lr-find" else o + "_" + product
                rc, out = kg(args(target), {"LD_PRELOAD": shim, "KGTRAIN_FAULT": f"{op}:{n}:{err}"})
                totals["faults_injected"] += 1
                reason = "No space left on device" if err.startswith("ENOSPC") else "Input/output error"
                clean = rc == 3 and reason in out and WORK in out
                totals["clean_errors"] += clean
                left = produced(target)
                damaged = left is not None and left != want_out
                totals["corrupt_loads"] += damaged
                if name == "lr-find":  # a new folder: --run-dir refuses one that holds a run's traces
                    target = o + "_again"
                rc2, out2 = kg(args(target))
                again = rc2 == 0 and produced(target) == want_out
                totals["resumed_identical"] += again
                first = next((l for l in out.splitlines() if reason in l), out.strip().splitlines()[-1] if out.strip() else "")
                print(f"{'ok  ' if clean and not damaged and again else 'FAIL'} {name:11s} {op:6s} #{n:<4d} {err:13s} exit {rc} "
                      f"output {'absent' if left is None else 'complete' if not damaged else 'DAMAGED'}, again {again}  "
                      f"{first.strip()[:100]}", flush=True)
    return totals


def start(args, log):
    f = open(log, "w")
    return subprocess.Popen([KG] + args, stdout=f, stderr=subprocess.STDOUT, start_new_session=True, cwd=WORK), f


def descendants(pid):
    """Every process below pid (the --nproc ranks, which run in sessions of their own)."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def kill_all(p):
    """SIGKILL to the job and every process it started, at once (what the OOM killer or `docker kill` does to a
    whole job), then waits for all of them to be gone."""
    pids = [p.pid] + descendants(p.pid)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait()
    def alive(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    for pid in pids[1:]:
        while alive(pid):
            time.sleep(0.005)


def kills(n_kills):
    """SIGKILLs at random moments (the whole process group: --nproc ranks too), each run resumed to the end."""
    rng = random.Random(40)
    root = tiny_dataset("kill_data")
    # (key, what, recipe, overrides and flags of the fit, flags its --resume repeats)
    scenarios = [("one", "one fold, checkpoints every 2 updates", tiny_recipe("kill_one", root), [], []),
                 ("cv", "cv.fold = all (fold switches)", tiny_recipe("kill_cv", root), ["cv.fold=all", "cv.folds=3"], []),
                 ("dist", "--nproc 2", tiny_recipe("kill_dist", root), ["--nproc", "2"], ["--nproc", "2"])]
    totals = {"kills": 0, "bit_identical": 0, "mid_checkpoint": 0, "before_run_folder": 0, "kill_points": []}
    per = [n_kills - 2 * (n_kills // 3), n_kills // 3, n_kills // 3]
    for (key, name, recipe, extra, resume_flags), count in zip(scenarios, per):
        ref = os.path.join(WORK, f"kill_ref_{key}")
        t0 = time.time()
        rc, out = kg(["fit", recipe, "--run-dir", ref, "--quiet"] + extra)
        assert rc == 0, out
        wall = time.time() - t0
        want = final_weights(ref)
        done, k = 0, -1
        while done < count and k < 3 * count:  # a run that ends before its kill is tried again
            k += 1
            run = os.path.join(WORK, f"kill_{key}_{k}")
            # The moment is drawn uniformly over the job's life after start-up (from its run folder's creation to
            # the uninterrupted run's end): loading LibTorch is not where a checkpoint can be lost.
            p, f = start(["fit", recipe, "--run-dir", run, "--quiet"] + extra, run + ".log")
            t0 = time.time()
            while p.poll() is None and not os.path.isdir(run) and time.time() - t0 < wall:
                time.sleep(0.002)
            time.sleep(rng.uniform(0.0, 0.98) * max(0.05, wall - (time.time() - t0)))
            delay = time.time() - t0  # the kill's moment since the process started
            killed = p.poll() is None
            if killed:
                kill_all(p)
            p.wait()
            f.close()
            # Where the kill landed: a checkpoint's temp folder left behind is a kill mid-checkpoint-write; no run
            # folder yet is a kill during start-up (nothing to resume: the user runs the fit again).
            mid = any(d.startswith(".tmp-") for base, dirs, _ in os.walk(run) for d in dirs)
            early = not os.path.isdir(run)
            if not killed:
                rc, out = 0, ""
            elif early:
                rc, out = kg(["fit", recipe, "--run-dir", run, "--quiet"] + extra)
            elif os.path.exists(os.path.join(run, "recipe.toml")):
                rc, out = kg_fit_resume(run, resume_flags)
            else:
                rc, out = kg(["fit", recipe, "--resume", run, "--quiet"] + extra)
            same = rc == 0 and final_weights(run) == want
            totals["mid_checkpoint"] += killed and mid
            totals["before_run_folder"] += killed and early
            totals["kills"] += killed
            done += killed
            totals["bit_identical"] += killed and same
            totals["kill_points"].append(round(delay / wall, 3))
            where = "(finished first)" if not killed else "(start-up)" if early else "(mid-checkpoint)" if mid else ""
            print(f"{'ok  ' if same else 'FAIL'} {name:38s} kill at {delay:5.2f} s of {wall:5.2f} s {where:16s} "
                  f"resume exit {rc} identical {same}", flush=True)
            if rc != 0:
                print("   resume said: " + out.strip()[-400:], flush=True)
    return totals


def sigterm(n):
    rng = random.Random(143)
    root = tiny_dataset("term_data")
    recipe = tiny_recipe("term", root)
    ref = os.path.join(WORK, "term_ref")
    t0 = time.time()
    rc, out = kg(["fit", recipe, "--run-dir", ref, "--quiet"])
    assert rc == 0, out
    wall, want = time.time() - t0, final_weights(ref)
    totals = {"sigterms": 0, "saved": 0, "finished_first": 0, "resumed_identical": 0}
    k = -1
    while totals["sigterms"] < n and k < 3 * n:  # a run that ends before its signal is tried again
        k += 1
        run = os.path.join(WORK, f"term_{k}")
        p, f = start(["fit", recipe, "--run-dir", run, "--quiet"], run + ".log")
        # After start-up (a SIGTERM before the job installs its handler is the default action, as for any program).
        while p.poll() is None and not os.path.exists(os.path.join(run, "recipe.toml")):
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.8) * wall)
        if p.poll() is not None:
            f.close()
            continue
        p.send_signal(signal.SIGTERM)
        rc = p.wait()
        f.close()
        last = os.path.join(run, "checkpoints", "last")
        # Stopped with 143 and a complete checkpoint, or the signal came during the last writes of a run that was
        # done (exit 0 with summary.json "completed": everything saved).
        try:
            completed = rc == 0 and json.load(open(os.path.join(run, "summary.json")))["status"] == "completed"
        except (OSError, ValueError, KeyError):
            completed = False
        saved = (rc == 143 or completed) and os.path.isdir(last) and checkpoint_problem(last) == ""
        totals["finished_first"] += completed
        rc2, _ = kg_fit_resume(run)
        same = rc2 == 0 and final_weights(run) == want
        totals["sigterms"] += 1
        totals["saved"] += saved
        totals["resumed_identical"] += same
        print(f"{'ok  ' if saved and same else 'FAIL'} SIGTERM #{k}: exit {rc}{' (it had finished)' if completed else ''}, checkpoint saved {saved}, "
              f"resumed identical {same}", flush=True)
    return totals


def locks():
    """While a fit runs, every command that would write or read its run folder is refused at once (exit 2)."""
    root = tiny_dataset("lock_data")
    recipe = tiny_recipe("lock", root)
    run = os.path.join(WORK, "lock_run")
    p, f = start(["fit", recipe, "--run-dir", run, "--quiet"], run + ".log")
    while p.poll() is None and not os.path.isdir(os.path.join(run, "checkpoints", "last")):
        time.sleep(0.01)
    assert p.poll() is None, "the fit ended before the attempts"
    os.killpg(p.pid, signal.SIGSTOP)  # mid-run, for as long as the attempts take
    attempts = [["fit", "--resume", run, "--quiet"], ["fit", recipe, "--run-dir", run, "--quiet"],
                ["fit", recipe, "--resume", run, "--quiet"],
                ["tta-predict", recipe, "--from-run", run, "--out", os.path.join(WORK, "lock_sub.csv")],
                ["pseudo-label", recipe, "--from-run", run, "--out", os.path.join(WORK, "lock_pseudo")],
                ["interpret", run]]
    totals = {"attempts": 0, "refused": 0}
    for a in attempts:
        t0 = time.time()
        rc, out = kg(a, timeout=120)
        refused = rc == 2 and "is in use by kgtrain fit" in out
        totals["attempts"] += 1
        totals["refused"] += refused
        print(f"{'ok  ' if refused else 'FAIL'} {' '.join(a[:2])[:40]:40s} exit {rc} in {time.time() - t0:4.2f} s: "
              f"{next((l for l in out.splitlines() if 'in use' in l), out.strip()[-160:]).strip()[:120]}", flush=True)
    os.killpg(p.pid, signal.SIGKILL)  # the lock goes with the process
    p.wait()
    f.close()
    rc, out = kg(["fit", "--resume", run, "--quiet"], timeout=1800)
    totals["resume_after_kill"] = rc == 0
    print(f"{'ok  ' if rc == 0 else 'FAIL'} after SIGKILL of the holder: fit --resume exit {rc}", flush=True)
    return totals


def table(out, seconds):
    """The markdown table of the totals the other modes wrote to OUT/<mode>.json (scripts/reliability.sh)."""
    import platform
    r = {m: json.load(open(os.path.join(out, m + ".json"))) for m in ("hostile", "faults", "kills", "sigterm", "locks")}
    h, f, k, t, l = r["hostile"], r["faults"], r["kills"], r["sigterm"], r["locks"]
    calls = f["calls"]
    rows = [
        ("hostile inputs tried / refused cleanly (exit 2/3, a message naming the limit)",
         f"{h['hostile_tried']} / {h['hostile_refused_cleanly']}, peak RSS at most {h['max_peak_rss_mb']} MB"),
        (f"disk faults injected (ENOSPC that stays / EIO once, at sampled writes, fsyncs and renames of fit — "
         f"{calls['write']} / {calls['fsync']} / {calls['rename']} in a run — tta-predict, pack, lr-find) / "
         f"a clear error naming the file, exit 3",
         f"{f['faults_injected']} / {f['clean_errors']}" +
         (f" ({f['recovered_without_error']} needed none: a failed rename of a rotated-out checkpoint before its "
          "deletion, which then deletes it in place)" if f["recovered_without_error"] else "")),
        ("corrupt checkpoints or outputs loaded", str(f["corrupt_loads"])),
        ("checkpoints lost", str(f["checkpoints_lost"])),
        ("faulted runs resumed (or run again) to the unfailed run's weights and bytes",
         f"{f['resumed_identical']} / {f['faults_injected']}"),
        ("SIGKILLs of the whole job (one fold, cv.fold = all, --nproc 2) / bit-identical weights after --resume",
         f"{k['kills']} / {k['bit_identical']} ({k['mid_checkpoint']} landed mid-checkpoint-write)"),
        ("SIGTERM at a random moment: exit 143 with a complete checkpoint (or, arriving during a finished run's "
         "last writes, exit 0 with everything saved)",
         f"{t['saved']} / {t['sigterms']} ({100 * t['saved'] // max(1, t['sigterms'])}%; {t['finished_first']} had "
         f"finished), {t['resumed_identical']} resumed to identical weights"),
        ("a second writer or reader of a run in use: refused at once (exit 2)",
         f"{l['refused']} / {l['attempts']}; resume after SIGKILL of the holder: "
         f"{'yes' if l['resume_after_kill'] else 'NO'}"),
    ]
    lines = [f"| check ({platform.machine()}, {os.cpu_count()} cores, {seconds} s in all) | result |", "|---|---|"]
    lines += [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    if MODE == "table":  # table KGTRAIN OUTDIR SECONDS
        print(table(WORK, sys.argv[4]))
        sys.exit(0)
    if MODE == "hostile":
        result = hostile()
        ok = result["hostile_refused_cleanly"] == result["hostile_tried"]
    elif MODE == "faults":
        result = faults(sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 12)
        ok = (result["clean_errors"] == result["faults_injected"] and result["corrupt_loads"] == 0 and
              result["checkpoints_lost"] == 0 and result["resumed_identical"] == result["faults_injected"])
    elif MODE == "kills":
        result = kills(int(sys.argv[4]) if len(sys.argv) > 4 else 40)
        ok = result["bit_identical"] == result["kills"]
    elif MODE == "sigterm":
        result = sigterm(int(sys.argv[4]) if len(sys.argv) > 4 else 10)
        ok = result["saved"] == result["sigterms"] and result["resumed_identical"] == result["sigterms"]
    elif MODE == "locks":
        result = locks()
        ok = result["refused"] == result["attempts"] and result["resume_after_kill"]
    else:
        sys.exit(f"reliability.py: unknown mode {MODE} (hostile, faults, kills, sigterm, locks)")
    print(json.dumps(result))
    sys.exit(0 if ok else 1)
