#!/usr/bin/env python3
"""Writes the Parquet / Arrow IPC / `datasets` fixtures of tests/data/test_table_read.cpp into
tests/data/fixtures/tables/ (a few KB each), with expected.json: for each fixture, its header, the columns kgtrain
cannot read, and every cell as kgtrain should give it (strings; floats as JSON numbers, compared by value; null
for an empty cell).

    python3 -m venv .venv-arrow && .venv-arrow/bin/pip install pyarrow datasets pandas pillow
    .venv-arrow/bin/python scripts/gen_table_fixtures.py

Deterministic: the same pyarrow writes the same bytes (the files are committed; rerun only to change them).
"""
import datetime
import decimal
import io
import json
import os
import shutil
import sys

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "fixtures", "tables")

N = 23  # rows: enough for several pages and row groups at the small sizes below


def columns():
    """The table every configuration writes: each type kgtrain reads, with nulls, and some it does not."""
    rows = range(N)
    s = [None if i % 5 == 3 else ("é-" * (i % 3)) + "s" + str(i * 7 % 11) for i in rows]
    return {
        "s": pa.array(s, pa.string()),
        "label": pa.array(["cat", "dog", "bird"][i % 3] for i in rows),  # few values: a dictionary
        "i8": pa.array([(-1) ** i * (i * 5 % 128) for i in rows], pa.int8()),
        "i16": pa.array([(-1) ** i * i * 1200 for i in rows], pa.int16()),
        "i32": pa.array([None if i == 4 else (-1) ** i * i * 90000000 for i in rows], pa.int32()),
        "i64": pa.array([(-1) ** i * i * 400000000000000000 for i in rows], pa.int64()),
        "u8": pa.array([i * 11 % 256 for i in rows], pa.uint8()),
        "u16": pa.array([i * 2900 for i in rows], pa.uint16()),
        "u32": pa.array([i * 190000000 for i in rows], pa.uint32()),
        "u64": pa.array([i * 800000000000000000 for i in rows], pa.uint64()),
        "f32": pa.array([None if i == 6 else (i - 11) / 3.0 for i in rows], pa.float32()),
        "f64": pa.array([None if i == 7 else float("nan") if i == 8 else (i - 11) * 0.1 + 1e-17 * i for i in rows],
                        pa.float64()),
        "flag": pa.array([None if i == 9 else i % 3 == 0 for i in rows], pa.bool_()),
        "day": pa.array([datetime.date(1969, 12, 25) + datetime.timedelta(days=400 * i) for i in rows], pa.date32()),
        "dec": pa.array([decimal.Decimal(i * 137 - 1000) / 100 for i in rows], pa.decimal128(9, 2)),
        "tags": pa.array([[i, i + 1] for i in rows], pa.list_(pa.int64())),
        "when": pa.array([datetime.datetime(2020, 1, 1) + datetime.timedelta(hours=i) for i in rows],
                         pa.timestamp("ms")),
        "blob": pa.array([bytes([0xFF, i]) for i in rows], pa.binary()),
        "bintext": pa.array([b"b%d" % i for i in rows], pa.binary()),
    }


def cell(v, typ):
    if v is None:
        return None
    if pa.types.is_floating(typ):
        return None if v != v else float(v)
    if pa.types.is_boolean(typ):
        return "True" if v else "False"
    if pa.types.is_date(typ):
        return v.isoformat()
    if pa.types.is_decimal(typ):
        return str(v)
    if pa.types.is_binary(typ):
        return v.decode()
    return str(v)


def expected(table, unusable):
    rows = []
    cols = table.to_pydict()
    for r in range(table.num_rows):
        rows.append([None if name in unusable else cell(cols[name][r], table.schema.field(name).type)
                     for name in table.column_names])
    return {"header": table.column_names, "unusable": sorted(unusable), "rows": rows}


PARQUET_UNUSABLE = {"tags", "when", "blob"}


def main():
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    os.makedirs(ROOT)
    table = pa.table(columns())
    out = {}

    # Parquet: each codec, dictionary on and off, data pages v1 and v2, several row groups and pages.
    configs = {
        "snappy_dict_v1.parquet": dict(compression="snappy"),  # pandas' and pyarrow's defaults
        "gzip_plain_v2.parquet": dict(compression="gzip", use_dictionary=False, data_page_version="2.0"),
        "zstd_dict_v2_groups.parquet": dict(compression="zstd", data_page_version="2.0", row_group_size=7,
                                            data_page_size=64, write_batch_size=4),
        "none_plain_v1_pages.parquet": dict(compression="none", use_dictionary=False, row_group_size=10,
                                            data_page_size=32, write_batch_size=3),
        "snappy_int_decimal.parquet": dict(compression="snappy", store_decimal_as_integer=True,
                                           max_rows_per_page=5),
    }
    for name, kw in configs.items():
        pq.write_table(table, os.path.join(ROOT, name), **kw)
        unusable = set(PARQUET_UNUSABLE)
        if not kw.get("store_decimal_as_integer"):
            unusable.add("dec")  # FIXED_LEN_BYTE_ARRAY decimals: not read
        out[name] = expected(table, unusable)

    # A pandas DataFrame as Kaggle users write it (index column, object strings).
    import pandas as pd
    df = pd.DataFrame({"image_id": ["a1", "b2", "c3", "d4"], "label": [0, 1, 1, 0], "score": [0.5, 0.25, None, 2.0]})
    df.to_parquet(os.path.join(ROOT, "pandas.parquet"))
    t = pq.read_table(os.path.join(ROOT, "pandas.parquet"))
    out["pandas.parquet"] = expected(t, set())

    # The Hugging Face Image feature's struct, paths only (readable) and with bytes (unusable).
    img_paths = pa.table({"id": ["x", "y", "z"],
                          "image": pa.array([{"bytes": None, "path": "train/x.png"}, None,
                                             {"bytes": None, "path": "train/z.png"}],
                                            pa.struct([("bytes", pa.binary()), ("path", pa.string())]))})
    pq.write_table(img_paths, os.path.join(ROOT, "image_paths.parquet"))
    out["image_paths.parquet"] = {"header": ["id", "image"], "unusable": [],
                                  "rows": [["x", "train/x.png"], ["y", None], ["z", "train/z.png"]]}
    img_bytes = pa.table({"id": ["x", "y"],
                          "image": pa.array([{"bytes": b"\x89PNG\r\n", "path": "x.png"}, {"bytes": None, "path": "y"}],
                                            pa.struct([("bytes", pa.binary()), ("path", pa.string())]))})
    pq.write_table(img_bytes, os.path.join(ROOT, "image_bytes.parquet"))
    out["image_bytes.parquet"] = {"header": ["id", "image"], "unusable": ["image"], "rows": [["x", None], ["y", None]]}

    # Arrow IPC: a stream with every type (large strings, a dictionary column, a null column), the file format,
    # and ZSTD-compressed buffers; LZ4 is refused (the test checks the message).
    arrow_cols = columns()
    del arrow_cols["dec"]
    arrow_cols["big"] = pa.array(arrow_cols["s"].to_pylist(), pa.large_string())
    arrow_cols["cat"] = pa.array(arrow_cols["label"].to_pylist()).dictionary_encode()
    arrow_cols["nothing"] = pa.nulls(N)
    at = pa.table(arrow_cols)
    arrow_unusable = {"tags", "when", "blob"}
    with ipc.new_stream(os.path.join(ROOT, "stream.arrow"), at.schema) as w:
        for b in at.to_batches(max_chunksize=10):
            w.write_batch(b)
    out["stream.arrow"] = expected(at, arrow_unusable)
    with ipc.new_file(os.path.join(ROOT, "file_format.arrow"), at.schema) as w:
        w.write_table(at)
    out["file_format.arrow"] = expected(at, arrow_unusable)
    small = at.select(["s", "i32", "f64", "label"])
    with ipc.new_stream(os.path.join(ROOT, "zstd.arrow"), small.schema,
                        options=ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(small)
    out["zstd.arrow"] = expected(small, set())
    with ipc.new_stream(os.path.join(ROOT, "lz4.arrow"), small.schema,
                        options=ipc.IpcWriteOptions(compression="lz4")) as w:
        w.write_table(small)

    # A `datasets` save_to_disk folder in 2 shards, and one whose images are in the table (the Image feature).
    import datasets
    ds = datasets.Dataset.from_dict(
        {"image_id": [f"img{i}" for i in range(7)], "label": [i % 2 for i in range(7)],
         "text": [f"t{i}" if i != 3 else None for i in range(7)], "path": [f"train/img{i}.png" for i in range(7)]},
        features=datasets.Features({"image_id": datasets.Value("string"),
                                    "label": datasets.ClassLabel(names=["no", "yes"]),
                                    "text": datasets.Value("string"), "path": datasets.Value("string")}))
    ds.save_to_disk(os.path.join(ROOT, "hf_dataset"), num_shards=2)
    out["hf_dataset"] = {"header": ds.column_names, "unusable": [],
                         "rows": [[r["image_id"], str(r["label"]), r["text"], r["path"]] for r in ds]}
    from PIL import Image
    png = io.BytesIO()
    Image.new("RGB", (2, 2), (200, 10, 10)).save(png, "PNG")
    img = datasets.Dataset.from_dict({"id": ["a", "b"], "image": [{"bytes": png.getvalue(), "path": None}] * 2},
                                     features=datasets.Features({"id": datasets.Value("string"),
                                                                 "image": datasets.Image()}))
    img.save_to_disk(os.path.join(ROOT, "hf_images"))
    out["hf_images"] = {"header": ["id", "image"], "unusable": ["image"], "rows": [["a", None], ["b", None]]}

    with open(os.path.join(ROOT, "expected.json"), "w") as f:
        json.dump(out, f, sort_keys=True, separators=(",", ":"))
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(d, x)) for d, _, xs in os.walk(ROOT) for x in xs)
    print(f"gen_table_fixtures: {len(out)} fixtures in {ROOT}, {total} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
