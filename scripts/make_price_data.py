#!/usr/bin/python3
"""A price-from-image regression task on Fashion-MNIST's real images, the shape of a Kaggle listing-price
competition: each item's price depends on what it is (its class sets a base price, 15 for a T-shirt to
150 for a bag) and on how it looks (more ink = a heavier, dearer item: exp(0.35 z) with z the image's ink
standardized within its class), times a log-normal noise exp(0.15 N(0, 1)) no model can predict.
Prices run from about 5 to 500; the noise alone puts the best achievable SMAPE near 12%.

  python3 scripts/make_price_data.py [FMNIST_DIR]
      FMNIST_DIR: scripts/prepare_fashion_mnist.sh's output (default data/fashion_mnist); the tables go
                  beside its images: price_train.csv (id,price) and price_test_labels.csv (id,price), and
                  price100_train.csv: the same prices x100 (450 .. 64,340: a car- or house-price scale, where a
                  raw regression head spends its first epochs climbing to the targets).
Standard library only; reads the IDX files of Debian's dataset-fashion-mnist (FASHION_MNIST_DIR).
Deterministic (seed 0). Idempotent.
"""
import csv, gzip, math, os, random, struct, sys

BASE = [15, 40, 35, 60, 120, 30, 25, 80, 150, 110]  # T-shirt, trouser, pullover, dress, coat, sandal, shirt,
#                                                     sneaker, bag, ankle boot


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 2049:
        return list(data[8:8 + n])
    rows, cols = struct.unpack(">II", data[8:16])
    size = rows * cols
    return [sum(data[16 + i * size:16 + (i + 1) * size]) / (255.0 * size) for i in range(n)]  # ink per image


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "data/fashion_mnist"
    idx_dir = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    if os.path.exists(os.path.join(src, "price_test_labels.csv")):
        print(f"make_price_data: {src} already holds the price task")
        return
    for split in ("train", "test"):
        if not os.path.isdir(os.path.join(src, split)):
            sys.exit(f"make_price_data: {src}/{split} missing: run scripts/prepare_fashion_mnist.sh first")
    rng = random.Random(0)
    splits = {"train": ("train", "train.csv"), "test": ("t10k", "test_labels.csv")}
    for split, (stem, labels_csv) in splits.items():
        labels = idx(os.path.join(idx_dir, f"{stem}-labels-idx1-ubyte.gz"))
        ink = idx(os.path.join(idx_dir, f"{stem}-images-idx3-ubyte.gz"))
        with open(os.path.join(src, labels_csv)) as f:
            rows = list(csv.DictReader(f))
        if [int(r["label"]) for r in rows] != labels:
            sys.exit(f"make_price_data: {src}/{labels_csv} is not in the IDX files' order")
        stats = []
        for c in range(10):
            v = [x for x, y in zip(ink, labels) if y == c]
            m = sum(v) / len(v)
            stats.append((m, math.sqrt(sum((x - m) ** 2 for x in v) / len(v))))
        prices = []
        for x, y in zip(ink, labels):
            z = (x - stats[y][0]) / stats[y][1]
            prices.append(round(BASE[y] * math.exp(0.35 * max(-3.0, min(3.0, z)) + 0.15 * rng.gauss(0, 1)), 2))
        tmp = os.path.join(src, "price_" + ("train" if split == "train" else "test_labels") + ".csv.tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "price"])
            w.writerows([r["id"], p] for r, p in zip(rows, prices))
        os.replace(tmp, tmp[:-4])
        if split == "train":
            with open(os.path.join(src, "price100_train.csv.tmp"), "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["id", "price"])
                w.writerows([r["id"], f"{p * 100:.2f}"] for r, p in zip(rows, prices))
            os.replace(os.path.join(src, "price100_train.csv.tmp"), os.path.join(src, "price100_train.csv"))
        print(f"make_price_data: {split}: {len(prices)} prices, {min(prices)} .. {max(prices)}, "
              f"median {sorted(prices)[len(prices) // 2]}")


if __name__ == "__main__":
    main()
