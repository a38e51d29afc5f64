#!/usr/bin/env python3
"""Parity of kgtrain's Parquet and Arrow IPC readers with pandas: random tables written by pyarrow in many
configurations (row groups, page sizes, write batch sizes, codecs, dictionary on/off, data pages v1/v2, nulls,
Arrow streams and files with record batches of random sizes, large strings, dictionary columns, ZSTD bodies),
each read by kgtrain (scripts/table_dump.cpp: data::read_table, printed as JSON) and by pandas, compared cell for
cell: strings and integers exactly, floats by value (kgtrain writes the shortest round-trip text), booleans as
True/False, dates as YYYY-MM-DD, nulls and NaN as empty cells.

    python3 -m venv .venv-arrow && .venv-arrow/bin/pip install pyarrow pandas
    .venv-arrow/bin/python scripts/check_table_readers.py [--cases 300] [--seed 1] [--keep DIR]

Builds the driver with c++ from the readers' few files (build-table-dump/table_dump; no LibTorch, no CMake).
Exit 1 when a cell differs (the case's file is kept and named).
"""
import argparse
import datetime
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# The readers' files (CMakeLists.txt's kgtrain_base lists them too) and the driver.
READERS = ["lib/data/" + f + ".cpp" for f in ("parquet", "parquet_meta", "parquet_pages", "arrow_ipc", "arrow_columns",
                                              "table_codecs", "table_read", "table_text", "csv")]
SOURCES = ["scripts/table_dump.cpp", *READERS, "lib/core/strings.cpp", "lib/core/fs.cpp"]


def build_driver():
    out = os.path.join(REPO, "build-table-dump", "table_dump")
    srcs = [os.path.join(REPO, s) for s in SOURCES]
    headers = [os.path.join(REPO, "lib/data", h)
               for h in ("table_read.h", "table_codecs.h", "csv.h", "parquet_format.h", "arrow_format.h")]
    if os.path.exists(out) and all(os.path.getmtime(out) > os.path.getmtime(s) for s in srcs + headers):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    zstd = os.path.exists("/usr/include/zstd.h")
    cmd = [os.environ.get("CXX", "c++"), "-std=c++17", "-O1", "-g", "-I" + os.path.join(REPO, "lib"),
           f"-DKG_WITH_ZSTD={int(zstd)}", *srcs, "-lz", *(["-lzstd"] if zstd else []), "-o", out]
    print("check_table_readers: building", out, file=sys.stderr)
    subprocess.run(cmd, check=True)
    return out


ALPHABET = "abcxyz019 _-,\"'é中😀\n\t"


def random_column(rng, n, kind, null_p):
    def maybe(v):
        return None if rng.random() < null_p else v
    if kind == "string":
        vocab = None if rng.random() < 0.5 else [
            "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 12))) for _ in range(rng.randrange(1, 6))]
        vals = [maybe(rng.choice(vocab) if vocab else "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 30))))
                for _ in range(n)]
        return pa.array(vals, pa.string())
    if kind in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        t = getattr(pa, kind)()
        bits = t.bit_width
        lo, hi = (0, 2 ** bits - 1) if kind.startswith("u") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        small = rng.random() < 0.5
        vals = [maybe(rng.randint(max(lo, -5), min(hi, 5)) if small else rng.randint(lo, hi)) for _ in range(n)]
        return pa.array(vals, t)
    if kind in ("float32", "float64"):
        def f():
            r = rng.random()
            if r < 0.05:
                return float("nan")
            if r < 0.08:
                return rng.choice([float("inf"), float("-inf"), 0.0, -0.0])
            if r < 0.3:
                return float(rng.randint(-1000, 1000))
            return rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)
        return pa.array([maybe(f()) for _ in range(n)], getattr(pa, kind)())
    if kind == "bool":
        return pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_())
    if kind == "date":
        return pa.array([maybe(datetime.date(1900, 1, 1) + datetime.timedelta(days=rng.randrange(0, 80000)))
                         for _ in range(n)], pa.date32())
    raise ValueError(kind)


KINDS = ["string", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
         "bool", "date"]


def random_table(rng):
    n = rng.choice([0, 1, 2, 7, 50, 300, 2000])
    cols = {}
    for i in range(rng.randrange(1, 9)):
        kind = rng.choice(KINDS)
        cols[f"c{i}_{kind}"] = random_column(rng, n, kind, rng.choice([0.0, 0.0, 0.1, 0.5, 1.0]))
    return pa.table(cols)


def expected_cells(df_col, arrow_type):
    out = []
    for v in df_col.tolist():
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            out.append(None)
        elif pa.types.is_boolean(arrow_type):
            out.append("True" if v else "False")
        elif pa.types.is_floating(arrow_type):
            out.append(float(v))
        elif pa.types.is_date(arrow_type):
            out.append(v.isoformat() if hasattr(v, "isoformat") else str(v)[:10])
        else:
            out.append(str(v))
    return out


def compare(path, table, df, got):
    if "error" in got:
        return f"kgtrain refused it: {got['error']}"
    if got["header"] != list(df.columns):
        return f"header {got['header']} != {list(df.columns)}"
    if len(got["rows"]) != len(df):
        return f"{len(got['rows'])} rows != {len(df)}"
    for c, name in enumerate(df.columns):
        typ = table.schema.field(name).type
        if pa.types.is_dictionary(typ):
            typ = typ.value_type
        want = expected_cells(df[name], typ)
        for r, w in enumerate(want):
            g = got["rows"][r][c]
            if w is None:
                ok = g == ""
            elif isinstance(w, float):
                gv = float(g) if g not in ("",) else None
                if gv is not None and pa.types.is_float32(typ):
                    ok = pa.array([gv], pa.float32())[0].as_py() == pa.array([w], pa.float32())[0].as_py()
                else:
                    ok = gv == w
            else:
                ok = g == w
            if not ok:
                return f"row {r + 1} column {name}: kgtrain {g!r}, pandas {w!r}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="a folder to keep every written file in")
    args = ap.parse_args()
    driver = build_driver()
    rng = random.Random(args.seed)
    work = args.keep or tempfile.mkdtemp(prefix="kgtrain-tables-")
    os.makedirs(work, exist_ok=True)
    failures = 0
    counts = {}
    for case in range(args.cases):
        table = random_table(rng)
        fmt = rng.choice(["parquet", "parquet", "parquet", "arrow_stream", "arrow_file"])
        if fmt == "parquet":
            kw = dict(compression=rng.choice(["snappy", "gzip", "zstd", "none"]),
                      use_dictionary=rng.random() < 0.6,
                      data_page_version=rng.choice(["1.0", "2.0"]),
                      row_group_size=rng.choice([None, 1, 3, 64, 1000]),
                      data_page_size=rng.choice([None, 1, 64, 1024]),
                      write_batch_size=rng.choice([None, 1, 7, 100]))
            kw = {k: v for k, v in kw.items() if v is not None}
            path = os.path.join(work, f"case{case}.parquet")
            pq.write_table(table, path, **kw)
            df = pd.read_parquet(path, dtype_backend="pyarrow")
            label = f"parquet {kw['compression']} dict={kw['use_dictionary']} v{kw['data_page_version']}"
        else:
            if rng.random() < 0.3 and table.num_columns:
                name = table.column_names[0]
                if pa.types.is_string(table.schema.field(name).type):
                    table = table.set_column(0, name, pa.compute.dictionary_encode(table.column(0)))
                elif rng.random() < 0.5:
                    pass
            if rng.random() < 0.3:
                table = table.cast(pa.schema([pa.field(f.name, pa.large_string() if pa.types.is_string(f.type) else f.type)
                                              for f in table.schema]))
            opts = ipc.IpcWriteOptions(compression=rng.choice([None, None, "zstd"]))
            path = os.path.join(work, f"case{case}.arrow")
            batches = table.to_batches(max_chunksize=rng.choice([1, 5, 100, 10000]))
            writer = ipc.new_stream if fmt == "arrow_stream" else ipc.new_file
            with writer(path, table.schema, options=opts) as w:
                for b in batches:
                    w.write_batch(b)
            df = table.to_pandas(types_mapper=pd.ArrowDtype)
            label = f"{fmt} compression={opts.compression}"
        got = json.loads(subprocess.run([driver, path], capture_output=True, text=True, check=True).stdout)
        problem = compare(path, table, df, got)
        counts[label.split()[0]] = counts.get(label.split()[0], 0) + 1
        if problem:
            failures += 1
            print(f"check_table_readers: case {case} ({label}, {path}): {problem}", file=sys.stderr)
        elif not args.keep:
            os.remove(path)
    if not args.keep and failures == 0:
        shutil.rmtree(work, ignore_errors=True)
    print(f"check_table_readers: {args.cases} tables ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}), "
          f"{failures} with a difference")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
