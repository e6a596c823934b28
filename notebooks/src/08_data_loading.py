# %% [markdown]
# # 08 — Data loading: RecordIO, augmentation and prefetching on the engine
#
# MXNet feeds its executors from **data iterators**. Images are packed once into a RecordIO
# file (`.rec`, with an `.idx` for random access), then an `ImageRecordIter` decodes and
# augments them on threads and hands out batches of `(batch, C, H, W)` floats.
#
# In mxnb the loading is **engine work**: batch *k+1* is loaded by an op on the engine's copy
# lane while batch *k* trains on the CPU workers — so the timeline shows the overlap.
#
# **What you will learn**
#
# 1. make a `.lst` and a `.rec`/`.idx` from a folder of images with `mxnb.tools.im2rec`;
# 2. read records back with `MXIndexedRecordIO`, `unpack_img`;
# 3. augment with `mx.image` and look at a grid of samples;
# 4. watch prefetching overlap LeNet training on the timeline, and check it on the trace.

# %%
import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import mxnb as mx
from mxnb import widgets
from mxnb.executor import zoo
from mxnb.tools import im2rec

engine = mx.engine.set_engine("threaded_per_device")
np.random.seed(0)

# %% [markdown]
# ## 1. A folder of PNGs, a list, a record file
#
# scikit-learn's digits are 8x8 images with values 0..16. We scale them to 0..255, enlarge them
# to 32x32 and save one PNG per image in a folder per class — the layout `im2rec --recursive`
# expects (each sub-folder is a class, labelled in sorted order).

# %%
digits = load_digits()
root = tempfile.mkdtemp()
images = os.path.join(root, "digits")
count = 300
for i in range(count):
    img = (digits.images[i] * (255 / 16)).astype(np.uint8)
    big = mx.image.imresize(np.stack([img] * 3, axis=2), 32, 32, interp=0).asnumpy()
    folder = os.path.join(images, f"class_{digits.target[i]}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{i:04d}.png"), "wb") as f:
        f.write(mx.image.codec.encode_rgb(big, ".png"))

prefix = os.path.join(root, "digits")
assert im2rec.main(["--list", "--recursive", prefix, images]) == 0
assert im2rec.main(["--encoding", ".png", prefix, images]) == 0
with open(prefix + ".lst") as f:
    lines = f.read().splitlines()
print(lines[:3])
print(os.path.getsize(prefix + ".rec"), "bytes in", prefix + ".rec")

# %% [markdown]
# ## 2. Reading records back
#
# `MXIndexedRecordIO` reads the `.idx` (one `key<TAB>byte offset` line per record) and seeks
# straight to a record. Each record is an `IRHeader` (flag, label, id, id2) and the encoded
# image. PNG is lossless, so the image we get back is exactly the one we wrote.

# %%
rec = mx.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
print(len(rec.keys), "records; first keys", rec.keys[:5])
header, img_bgr = mx.recordio.unpack_img(rec.read_idx(rec.keys[0]))
print(header)
line = lines[0].split("\t")
with open(os.path.join(images, line[-1]), "rb") as f:
    original = mx.image.imdecode(f.read()).asnumpy()
assert len(rec.keys) == count
assert header.label == float(line[1])
assert np.array_equal(img_bgr[:, :, ::-1], original)  # unpack_img speaks OpenCV's BGR
rec.close()

# %% [markdown]
# ## 3. Augmentation
#
# `mx.image.CreateAugmenter` builds MXNet's default pipeline: resize, crop (random or
# centre), mirror, cast to float, colour jitter, normalise. Here: random 28x28 crops,
# mirroring and brightness / contrast jitter, shown for the same digit eight times.

# %%
augs = mx.image.CreateAugmenter(
    (3, 28, 28), rand_crop=True, rand_mirror=True, brightness=0.4, contrast=0.4
)
print([type(a).__name__ for a in augs])
fig, axes = plt.subplots(2, 8, figsize=(10, 2.8))
for row, key in enumerate([0, 1]):
    reader = mx.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
    _, payload = mx.recordio.unpack(reader.read_idx(key))
    reader.close()
    for col in range(8):
        sample = mx.image.imdecode(payload).asnumpy()
        for aug in augs:
            sample = aug(sample)
        assert sample.shape == (28, 28, 3) and sample.dtype == np.float32
        axes[row, col].imshow(np.clip(sample / 255, 0, 1))
        axes[row, col].axis("off")
fig.suptitle("augmented samples: random crop, mirror, brightness and contrast")
plt.show()

# %% [markdown]
# ## 4. Prefetching overlaps training
#
# `ImageRecordIter` pushes "load batch k" ops that write the iterator's slot vars; `next()`
# waits for the slot of batch k and pushes the load of batch k+2. The loads run on the copy
# workers, LeNet's forward and backward on the CPU workers: on the timeline the lanes overlap,
# batch after batch — while batch k trains, the copy lane loads the batches after it.

# %%
batch = 32
it = mx.io.ImageRecordIter(
    path_imgrec=prefix + ".rec",
    data_shape=(1, 28, 28),
    batch_size=batch,
    rand_crop=True,
    rand_mirror=True,
    scale=1 / 255,
    preprocess_threads=2,
    shuffle=True,
    seed=1,
)
exe = zoo.lenet().simple_bind(mx.cpu(), data=(batch, 1, 28, 28), grad_req="write")
for name, arr in exe.arg_dict.items():
    if name not in ("data", "softmax_label"):
        arr[:] = mx.nd.random.uniform(-0.1, 0.1, shape=arr.shape)

with mx.engine.trace() as trace:
    it.reset()
    for k, data_batch in enumerate(it):
        exe.forward(is_train=True, data=data_batch.data[0], softmax_label=data_batch.label[0])
        exe.backward()
        # as a metric does each batch: read the output, so the loop keeps pace with training
        # (without it the loop pushes every step at once and the loads all finish first)
        exe.outputs[0].wait_to_read()
        if k == 7:
            break
    mx.nd.waitall()

ops = list(trace.ops().values())
loads = [op for op in ops if op.name.startswith("ImageRecordIter load batch")]
compute = [op for op in ops if op.end is not None and not op.name.startswith("ImageRecordIter")]
overlapping = {
    load.name
    for load in loads
    for op in compute
    if load.end is not None and load.start < op.end and op.start < load.end
}
print(len(loads), "load ops on", sorted({op.worker for op in loads}))
print("loads that ran while compute ran:", sorted(overlapping))
assert all(op.worker.startswith("copy") for op in loads)
assert overlapping, "prefetching did not overlap training"
widgets.Timeline(trace)

# %% [markdown]
# A decode failure would surface at `next()` for exactly the batch that needed the record,
# naming it (`ImageRecordIter: record 17 (byte 4096) of 'digits.rec' cannot be decoded`);
# the engine keeps running and the following batches still load.

# %%
it.close()
