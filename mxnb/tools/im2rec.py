"""``python -m mxnb.tools.im2rec``: make ``.lst`` and ``.rec``/``.idx`` files from a folder of images.

Idea (MXNet: tools/im2rec.py): two steps, as in MXNet. ``--list`` walks the
folder and writes a list file, one image a line (``index TAB label(s) TAB
relative path``); with ``--recursive`` each sub-folder is a class, labelled
0, 1, ... in sorted order. Then, without ``--list``, every ``PREFIX*.lst`` is
packed into ``.rec`` + ``.idx``: each image is read (Pillow), optionally
resized (shorter edge to ``--resize``) and centre-cropped, encoded
(``--encoding``, ``--quality``) and packed with ``IRHeader(0, label, index, 0)``
(all labels with ``--pack-label``).

Rule: the files are MXNet's formats, so MXNet reads what this writes and
this reads what MXNet's im2rec writes. An image that cannot be read (missing,
not an image, truncated, or claiming more pixels than ``imdecode`` accepts:
decoding is bounded the same way) is reported on stderr by name and
skipped, and packing goes on, as MXNet's tool does.

Example (shell)::

    python -m mxnb.tools.im2rec --list --recursive --train-ratio 0.8 data/digits data/
    python -m mxnb.tools.im2rec --resize 32 --encoding .png data/digits data/
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import sys
from collections.abc import Iterator, Sequence

from ..atomic_file import write_text_atomically
from ..base import FormatError
from ..image.augment import center_crop, resize_short
from ..image.codec import decode_rgb, encode_rgb
from ..image.image_iter import list_entries
from ..recordio import IRHeader, MXIndexedRecordIO, pack

__all__ = ["list_images", "main", "make_list", "make_record", "read_list"]


def list_images(root: str, recursive: bool, exts: Sequence[str]) -> Iterator[tuple[int, str, int]]:
    """(index, path relative to root, label) of every image, in sorted order."""
    exts = tuple(e.lower() for e in exts)
    index = 0
    if recursive:
        classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        for label, folder in enumerate(classes):
            for path, _, files in sorted(os.walk(os.path.join(root, folder))):
                for name in sorted(files):
                    if name.lower().endswith(exts):
                        yield index, os.path.relpath(os.path.join(path, name), root), label
                        index += 1
        return
    for name in sorted(os.listdir(root)):
        if name.lower().endswith(exts) and os.path.isfile(os.path.join(root, name)):
            yield index, name, 0
            index += 1


def _write_list(path: str, items: Sequence[tuple]) -> None:
    write_text_atomically(
        path,
        "".join(
            f"{index}\t" + "".join(f"{float(x):f}\t" for x in labels) + f"{relpath}\n"
            for index, relpath, *labels in items
        ),
    )


def make_list(
    prefix: str,
    root: str,
    recursive: bool = False,
    exts: Sequence[str] = (".jpeg", ".jpg", ".png"),
    train_ratio: float = 1.0,
    test_ratio: float = 0.0,
    shuffle: bool = True,
) -> list[str]:
    """Write PREFIX.lst (or PREFIX_train/_val/_test.lst when split); return the paths written."""
    items = list(list_images(root, recursive, exts))
    if shuffle:
        random.seed(100)  # MXNet's im2rec seeds the same way
        random.shuffle(items)
    n = len(items)
    n_test = int(n * test_ratio)
    n_train = int(n * train_ratio)
    if train_ratio == 1.0 and test_ratio == 0:
        _write_list(prefix + ".lst", items)
        return [prefix + ".lst"]
    written = []
    parts = [
        ("_test", items[:n_test]),
        ("_train", items[n_test : n_test + n_train]),
        ("_val", items[n_test + n_train :]),
    ]
    for suffix, chunk in parts:
        if chunk or suffix == "_train":
            _write_list(prefix + suffix + ".lst", chunk)
            written.append(prefix + suffix + ".lst")
    return written


def read_list(path: str) -> Iterator[tuple[int, str, list[float]]]:
    """(index, relative path, labels) of each line of a ``.lst`` file (FormatError on a bad line)."""
    for index, labels, relpath in list_entries(path):
        yield index, relpath, labels.tolist()


def make_record(
    lst: str,
    root: str,
    resize: int = 0,
    center_crop_: bool = False,
    quality: int = 95,
    encoding: str = ".jpg",
    pack_label: bool = False,
    pass_through: bool = False,
    color: int = 1,
) -> tuple[str, str]:
    """Pack the images of list ``lst`` into ``.rec``/``.idx`` beside it; return their paths."""
    base = os.path.splitext(lst)[0]
    rec = MXIndexedRecordIO(base + ".idx", base + ".rec", "w")
    skipped = 0
    for index, relpath, labels in read_list(lst):
        path = os.path.join(root, relpath)
        label = labels if pack_label and len(labels) > 1 else labels[0]
        header = IRHeader(0, label, index, 0)
        try:
            if pass_through:
                with open(path, "rb") as f:
                    payload = f.read()
            else:
                with open(path, "rb") as f:
                    # decoded as imdecode decodes: a claimed size over Pillow's pixel limit
                    # is refused before anything is decoded (no decompression bomb)
                    img = decode_rgb(f.read(), 0 if color == 0 else 1)
                if resize:
                    img = resize_short(img, resize)
                if center_crop_:
                    side = min(img.shape[:2])
                    img = center_crop(img, (side, side))[0]
                payload = encode_rgb(img, encoding, quality)
        except (OSError, FormatError) as exc:  # one bad image never stops the job
            print(f"im2rec: skipping {path!r}: {exc}", file=sys.stderr)
            skipped += 1
            continue
        rec.write_idx(index, pack(header, payload))
    rec.close()
    if skipped:
        print(f"im2rec: {skipped} image(s) of {lst!r} skipped (named above)", file=sys.stderr)
    return base + ".rec", base + ".idx"


def _parser() -> argparse.ArgumentParser:
    """MXNet's im2rec.py options."""
    parser = argparse.ArgumentParser(
        description="Make an image list and RecordIO files (MXNet's im2rec)."
    )
    parser.add_argument(
        "prefix", help="prefix of the .lst/.rec files, or a folder holding .lst files"
    )
    parser.add_argument("root", help="folder of the images")
    parser.add_argument(
        "--list", action="store_true", help="make the image list instead of the .rec"
    )
    parser.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"])
    parser.add_argument("--train-ratio", type=float, default=1.0)
    parser.add_argument("--test-ratio", type=float, default=0.0)
    parser.add_argument("--recursive", action="store_true", help="each sub-folder is a class")
    parser.add_argument("--no-shuffle", dest="shuffle", action="store_false")
    parser.add_argument("--pass-through", action="store_true", help="store the files unchanged")
    parser.add_argument("--resize", type=int, default=0, help="shorter edge to this size")
    parser.add_argument("--center-crop", action="store_true")
    parser.add_argument("--quality", type=int, default=95, help="JPEG quality or PNG level 0-9")
    parser.add_argument("--color", type=int, default=1, choices=[-1, 0, 1])
    parser.add_argument("--encoding", default=".jpg", choices=[".jpg", ".png"])
    parser.add_argument("--pack-label", action="store_true", help="store every label of a line")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (MXNet's im2rec.py options)."""
    args = _parser().parse_args(argv)
    if args.list:
        for path in make_list(
            args.prefix,
            args.root,
            args.recursive,
            args.exts,
            args.train_ratio,
            args.test_ratio,
            args.shuffle,
        ):
            print(f"wrote {path}")
        return 0
    if os.path.isdir(args.prefix) and not glob.glob(args.prefix + "*.lst"):
        folder, stem = args.prefix, ""
    else:
        folder, stem = os.path.split(args.prefix)
        folder = folder or "."
    lists = sorted(f for f in os.listdir(folder) if f.startswith(stem) and f.endswith(".lst"))
    if not lists:
        print(
            f"im2rec: no .lst file for prefix {args.prefix!r}; run with --list first",
            file=sys.stderr,
        )
        return 1
    for name in lists:
        rec, idx = make_record(
            os.path.join(folder, name),
            args.root,
            args.resize,
            args.center_crop,
            args.quality,
            args.encoding,
            args.pack_label,
            args.pass_through,
            args.color,
        )
        print(f"wrote {rec} and {idx}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
