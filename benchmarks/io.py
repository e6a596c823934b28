"""Data-loading benchmark: ImageRecordIter images/s against its peers, and what prefetch hides.

Figures, not tests. Same run, same machine, same JPEGs (256x256, quality 90):
    ImageRecordIter   data_shape (3, 224, 224), random crop + mirror, preprocess_threads=2,
                      batch 32, prefetched as engine ops
    torch DataLoader  a Dataset over the same JPEG files: Pillow decode + the same crop /
                      mirror / float CHW; num_workers=2, batch 32 (the `bench` extra installs torch)
    bare loop         one thread: Pillow decode + the same augmentation (this machine's limit
                      for one core)
Targets (issue 16): >= 1.0x the DataLoader, >= 0.8x the bare loop. The three sides are
timed back to back in each of 3 rounds and the best of each is kept (2 with --quick).

Prefetch and LeNet: a LeNet (mxnb.executor.zoo) training step on batches of 64 grey
28x28 PNG records. Measured: the step alone (data already loaded), loading alone,
and the training loop fed by ImageRecordIter; the share of the loading time that
the loop hides behind compute is ``(train + load - loop) / load`` (noisy when the
loading is a small part of the step: the loop / train ratio is printed beside it).

Run: ``python benchmarks/io.py`` (``--quick`` for fewer images).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
from _util import ratio, table
from PIL import Image

import mxnb as mx
from mxnb.executor import zoo
from mxnb.recordio import IRHeader, MXIndexedRecordIO, pack

CROP = 224
BATCH = 32
REPEAT = 3  # interleaved rounds; the best of each side is kept


def make_jpegs(folder: str, count: int) -> list[str]:
    """``count`` smooth-ish 256x256 JPEGs (gradients + noise: realistic decode cost)."""
    rng = np.random.RandomState(0)
    y, x = np.mgrid[0:256, 0:256]
    paths = []
    for i in range(count):
        base = np.stack([(x + 7 * i) % 256, (y + 13 * i) % 256, (x + y) // 2 % 256], axis=2)
        img = np.clip(base + rng.randint(-20, 20, base.shape), 0, 255).astype(np.uint8)
        path = os.path.join(folder, f"{i}.jpg")
        Image.fromarray(img).save(path, quality=90)
        paths.append(path)
    return paths


def pack_rec(paths: list[str], prefix: str) -> str:
    rec = MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "w")
    for i, path in enumerate(paths):
        with open(path, "rb") as f:
            rec.write_idx(i, pack(IRHeader(0, float(i % 10), i, 0), f.read()))
    rec.close()
    return prefix + ".rec"


def augment(img: Image.Image, rng: np.random.RandomState) -> np.ndarray:
    """The augmentation every contender does: random 224 crop, mirror, float32 CHW."""
    arr = np.asarray(img.convert("RGB"))
    h, w = arr.shape[:2]
    y0, x0 = rng.randint(0, h - CROP + 1), rng.randint(0, w - CROP + 1)
    arr = arr[y0 : y0 + CROP, x0 : x0 + CROP]
    if rng.random_sample() < 0.5:
        arr = arr[:, ::-1]
    return arr.transpose(2, 0, 1).astype(np.float32)


def bare_loop(paths: list[str]) -> float:
    rng = np.random.RandomState(0)
    start = time.perf_counter()
    for path in paths:
        with Image.open(path) as img:
            augment(img, rng)
    return len(paths) / (time.perf_counter() - start)


def record_iter(rec: str, count: int) -> float:
    it = mx.io.ImageRecordIter(
        path_imgrec=rec,
        data_shape=(3, CROP, CROP),
        batch_size=BATCH,
        rand_crop=True,
        rand_mirror=True,
        preprocess_threads=2,
        round_batch=False,
    )
    next(iter(it))  # warm: threads started, first batch
    it.reset()
    start = time.perf_counter()
    seen = sum(BATCH - b.pad for b in it)
    seconds = time.perf_counter() - start
    it.close()
    assert seen == count
    return seen / seconds


def torch_loader(paths: list[str]) -> float | None:
    try:
        import torch
        from torch.utils.data import DataLoader, Dataset
    except ImportError:
        return None

    class Jpegs(Dataset):
        def __len__(self) -> int:
            return len(paths)

        def __getitem__(self, i: int):
            rng = np.random.RandomState(i)
            with Image.open(paths[i]) as img:
                return torch.from_numpy(augment(img, rng)), i % 10

    torch.set_num_threads(1)
    loader = DataLoader(Jpegs(), batch_size=BATCH, num_workers=2, persistent_workers=True)
    for _ in loader:  # warm: workers started
        break
    start = time.perf_counter()
    seen = sum(len(labels) for _, labels in loader)
    seconds = time.perf_counter() - start
    del loader
    return seen / seconds


def lenet_overlap(folder: str, batches: int) -> dict[str, float]:
    """Seconds per batch: train alone, load alone, and the prefetched training loop."""
    batch = 64
    rng = np.random.RandomState(0)
    rec = MXIndexedRecordIO(os.path.join(folder, "g.idx"), os.path.join(folder, "g.rec"), "w")
    for i in range(batch * batches):
        img = Image.fromarray(rng.randint(0, 256, (28, 28)).astype(np.uint8))
        img = img.resize((56, 56))  # decode + resize work per image, as a real pipeline has
        path = os.path.join(folder, "tmp.png")
        img.save(path)
        with open(path, "rb") as f:
            rec.write_idx(i, pack(IRHeader(0, float(i % 10), i, 0), f.read()))
    rec.close()

    def make_iter() -> mx.io.ImageRecordIter:
        return mx.io.ImageRecordIter(
            path_imgrec=os.path.join(folder, "g.rec"),
            data_shape=(1, 28, 28),
            batch_size=batch,
            resize=28,
            rand_mirror=True,
            preprocess_threads=2,
        )

    exe = zoo.lenet().simple_bind(mx.cpu(), data=(batch, 1, 28, 28), grad_req="write")
    x = mx.nd.array(rng.rand(batch, 1, 28, 28))
    y = mx.nd.array(rng.randint(0, 10, batch))

    def step(data, label):
        exe.forward(is_train=True, data=data, softmax_label=label)
        exe.backward()
        for grad in exe.grad_dict.values():
            if grad is not None:
                grad.wait_to_read()

    step(x, y)
    start = time.perf_counter()
    for _ in range(batches):
        step(x, y)
    train = (time.perf_counter() - start) / batches

    it = make_iter()
    start = time.perf_counter()
    for b in it:
        b.data[0].wait_to_read()
    load = (time.perf_counter() - start) / batches
    it.close()

    it = make_iter()
    start = time.perf_counter()
    for b in it:
        step(b.data[0], b.label[0])
    loop = (time.perf_counter() - start) / batches
    it.close()
    return {"train": train, "load": load, "loop": loop}


def main() -> None:
    quick = "--quick" in sys.argv
    count = 64 if quick else 256
    with tempfile.TemporaryDirectory() as folder:
        paths = make_jpegs(folder, count)
        rec = pack_rec(paths, os.path.join(folder, "jpegs"))
        rounds = []  # each round times every side back to back; the machine is shared
        for _ in range(2 if quick else REPEAT):
            rounds.append((record_iter(rec, count), bare_loop(paths), torch_loader(paths)))
        ours = max(r[0] for r in rounds)
        bare = max(r[1] for r in rounds)
        peer = None if rounds[0][2] is None else max(r[2] for r in rounds)
        rows = [["ImageRecordIter (threads=2)", f"{ours:.0f}", "1.00x"]]
        rows.append(["bare Pillow loop (1 thread)", f"{bare:.0f}", ratio(ours, bare)])
        if peer is None:
            rows.append(["torch DataLoader (workers=2)", "torch not installed", "-"])
        else:
            rows.append(["torch DataLoader (workers=2)", f"{peer:.0f}", ratio(ours, peer)])
        print(
            table(
                ["JPEG 256 -> crop 224 + mirror", "img/s", "ours / it"],
                rows,
                f"ImageRecordIter throughput, {count} images, {os.cpu_count()} cores",
            )
        )
        print(
            f"best of {len(rounds)} interleaved rounds; per-round ours / bare loop: "
            + ", ".join(f"{r[0] / r[1]:.2f}x" for r in rounds)
        )
        print("targets: >= 1.00x the DataLoader, >= 0.80x the bare loop")
        print()
        t = lenet_overlap(folder, 8 if quick else 24)
        hidden = (t["train"] + t["load"] - t["loop"]) / t["load"]
        print(
            table(
                ["LeNet, batch 64", "ms / batch"],
                [
                    ["training step alone", f"{1e3 * t['train']:.1f}"],
                    ["loading alone (ImageRecordIter)", f"{1e3 * t['load']:.1f}"],
                    ["training fed by ImageRecordIter", f"{1e3 * t['loop']:.1f}"],
                    ["sum of the two", f"{1e3 * (t['train'] + t['load']):.1f}"],
                ],
                "prefetch overlap",
            )
        )
        print(
            f"loop / training alone: {ratio(t['loop'], t['train'])} "
            f"(1.00x: loading fully hidden; {ratio(t['train'] + t['load'], t['train'])}: not hidden)"
        )
        print(
            f"share of the loading time hidden: {min(max(hidden, 0.0), 1.0):.0%} (clipped to 0..1)"
        )


if __name__ == "__main__":
    main()
