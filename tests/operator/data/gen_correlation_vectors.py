"""Write correlation_vectors.npz: MXNet 1.9.1's Correlation and GridGenerator values.

Run with a Python that has MXNet 1.9.1 (not mxnb):
    /tmp/mxvenv/bin/python tests/operator/data/gen_correlation_vectors.py
"""

import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(11)
CASES = {
    "mul": dict(
        kernel_size=3, max_displacement=2, stride1=1, stride2=1, pad_size=2, is_multiply=True
    ),
    "abs": dict(
        kernel_size=1, max_displacement=2, stride1=2, stride2=2, pad_size=2, is_multiply=False
    ),
}
out = {}
for name, params in CASES.items():
    a, b = rng.rand(2, 3, 6, 5), rng.rand(2, 3, 6, 5)
    x1, x2 = mx.nd.array(a), mx.nd.array(b)
    x1.attach_grad()
    x2.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Correlation(x1, x2, **params)
    head = rng.randn(*y.shape)
    y.backward(mx.nd.array(head))
    out.update(
        {
            f"{name}_a": a,
            f"{name}_b": b,
            f"{name}_head": head,
            f"{name}_y": y.asnumpy(),
            f"{name}_ga": x1.grad.asnumpy(),
            f"{name}_gb": x2.grad.asnumpy(),
        }
    )
# GridGenerator (same file: the vision ops of vision_small.py)
theta = rng.randn(2, 6)
flow = rng.randn(2, 2, 4, 5)
for kind, data, params in [("affine", theta, dict(target_shape=(4, 5))), ("warp", flow, {})]:
    x = mx.nd.array(data)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.GridGenerator(x, transform_type=kind, **params)
    head = rng.randn(*y.shape)
    y.backward(mx.nd.array(head))
    out.update(
        {
            f"grid_{kind}_x": data,
            f"grid_{kind}_y": y.asnumpy(),
            f"grid_{kind}_head": head,
            f"grid_{kind}_g": x.grad.asnumpy(),
        }
    )
# ROIPooling: regions partly outside the map, one empty bin row
fmap = rng.rand(2, 3, 6, 7)
rois = np.array([[0, 1.1, 0.6, 5.2, 4.4], [1, -2.0, 3.0, 3.5, 9.0], [0, 4.0, 4.0, 4.0, 4.0]])
x = mx.nd.array(fmap)
x.attach_grad()
with mx.autograd.record():
    y = mx.nd.ROIPooling(x, mx.nd.array(rois), pooled_size=(2, 3), spatial_scale=0.9)
head = rng.randn(*y.shape)
y.backward(mx.nd.array(head))
out.update(roi_x=fmap, roi_rois=rois, roi_y=y.asnumpy(), roi_head=head, roi_g=x.grad.asnumpy())
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "correlation_vectors.npz")
np.savez(path, **out)
print("wrote", path)
