"""Products, shape ops, joins and splits, indexing, reductions and creation ops."""

from __future__ import annotations

import numpy as np
import pytest

from mxnb.base import ShapeError
from mxnb.operator import eager, registry


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# -- products ------------------------------------------------------------------


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_dot_nd_matches_tensordot_and_gradient(ta, tb):
    lhs = _rand(*((4, 2, 3) if ta else (2, 3, 4)))
    rhs = _rand(*((5, 4) if tb else (4, 5)), seed=1)
    out = eager.run_forward("dot", [lhs, rhs], {"transpose_a": ta, "transpose_b": tb})[0][0]
    a = np.moveaxis(lhs, 0, -1) if ta else lhs
    b = rhs.T if tb else rhs
    np.testing.assert_allclose(out, np.tensordot(a, b, axes=1))
    eager.numeric_gradient_check("dot", [lhs, rhs], {"transpose_a": ta, "transpose_b": tb})


def test_dot_of_vectors_is_shape_1_and_batch_dot():
    out = eager.run_forward("dot", [np.arange(3.0), np.ones(3)])[0][0]
    assert out.shape == (1,) and out[0] == 3.0
    eager.numeric_gradient_check(
        "batch_dot", [_rand(2, 3, 4), _rand(2, 5, 4, seed=1)], {"transpose_b": True}
    )


def test_fully_connected_gradient_flatten_and_error_message():
    x, w, b = _rand(2, 3, 4), _rand(5, 4, seed=1), _rand(5, seed=2)
    eager.numeric_gradient_check("FullyConnected", [x, w, b], {"num_hidden": 5, "flatten": False})
    eager.numeric_gradient_check(
        "FullyConnected", [x, _rand(5, 12, seed=1)], {"num_hidden": 5, "no_bias": True}
    )
    prop = registry.get("FullyConnected").create_property(num_hidden=10)
    with pytest.raises(ShapeError) as info:
        prop.infer_shape([(32, 100), (10, 784), None])
    assert str(info.value) == (
        "FullyConnected: weight has shape (10, 784) but data (32, 100) gives 100 input features; "
        "pass weight of shape (10, 100) or reshape data to (32, 784)"
    )
    assert prop.declare_backward_dependency(["dy"], ["x", "w", "b"], ["y"]) == ["dy", "x", "w"]


# -- shape ops -----------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, codes, reverse, expected",
    [
        ((2, 3, 4), (0, -1), False, (2, 12)),
        ((2, 3, 4), (-3, -2), False, (6, 4)),
        ((2, 3, 4), (-4, 1, 2, -2), False, (1, 2, 3, 4)),
        ((2, 12), (0, -4, -1, 3), False, (2, 4, 3)),
        ((10, 5, 4), (-1, 0), True, (50, 4)),
        ((2, 3, 4), (4, 0, -1), False, (4, 3, 2)),
    ],
)
def test_reshape_special_codes(shape, codes, reverse, expected):
    prop = registry.get("reshape").create_property(shape=codes, reverse=reverse)
    assert prop.infer_shape([shape])[1] == [expected]


def test_reshape_errors_say_what_to_do():
    prop = registry.get("Reshape").create_property(shape=(5, -1))
    with pytest.raises(ShapeError, match="cannot reshape"):
        prop.infer_shape([(2, 3)])
    with pytest.raises(ShapeError, match="use -1"):
        registry.get("Reshape").create_property(shape=(7,)).infer_shape([(2, 3)])


@pytest.mark.parametrize(
    "name, params, shape",
    [
        ("Reshape", {"shape": (4, -1)}, (2, 3, 4)),
        ("Flatten", {}, (2, 3, 4)),
        ("transpose", {"axes": (2, 0, 1)}, (2, 3, 4)),
        ("expand_dims", {"axis": -1}, (2, 3)),
        ("squeeze", {"axis": (1,)}, (2, 1, 3)),
        ("swapaxes", {"dim1": 0, "dim2": 2}, (2, 3, 4)),
        ("broadcast_to", {"shape": (0, 3, 4)}, (2, 1, 4)),
        ("broadcast_axis", {"axis": (1,), "size": (5,)}, (2, 1, 4)),
        ("Concat", {"dim": 1, "num_args": 1}, (2, 3)),
        ("slice", {"begin": (None, 1), "end": (None, None), "step": (1, 2)}, (3, 5)),
        ("slice_axis", {"axis": 1, "begin": -3, "end": None}, (2, 5)),
        ("tile", {"reps": (2, 1, 3)}, (2, 3)),
        ("repeat", {"repeats": 3, "axis": 1}, (2, 3)),
        ("repeat", {"repeats": 2}, (2, 3)),
        (
            "Pad",
            {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1), "constant_value": 3},
            (1, 2, 3, 3),
        ),
        ("Pad", {"mode": "edge", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1)}, (1, 2, 3, 3)),
        ("Pad", {"mode": "reflect", "pad_width": (0, 0, 0, 0, 2, 1, 1, 2)}, (1, 2, 4, 4)),
        ("SliceChannel", {"num_outputs": 3, "axis": 0, "squeeze_axis": True}, (3, 2)),
    ],
)
def test_data_movement_gradients(name, params, shape):
    eager.numeric_gradient_check(name, [_rand(*shape)], params)


def test_pad_values_match_numpy():
    x = _rand(1, 1, 4, 4)
    for mode in ("edge", "reflect"):
        out = eager.run_forward("pad", [x], {"mode": mode, "pad_width": (0, 0, 0, 0, 1, 2, 2, 1)})[
            0
        ][0]
        np.testing.assert_array_equal(out, np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 1)], mode=mode))


def test_concat_stack_split_round_trip():
    parts = [_rand(2, i + 1, seed=i) for i in range(3)]
    joined = eager.run_forward("concat", parts, {"dim": 1})[0][0]
    assert joined.shape == (2, 6)
    eager.numeric_gradient_check("Concat", parts, {"dim": -1, "num_args": 3})
    stacked = eager.run_forward("stack", [parts[0], parts[0]], {"axis": 1})[0][0]
    assert stacked.shape == (2, 2, 1)
    eager.numeric_gradient_check("stack", [_rand(2, 3), _rand(2, 3, seed=1)], {"axis": 2})
    prop = registry.get("Concat").create_property(num_args=2, dim=1)
    with pytest.raises(ShapeError, match="arg1 has shape"):
        prop.infer_shape([(2, 3), (3, 3)])
    outs, _, state = eager.run_forward("split", [joined], {"num_outputs": 2, "axis": 1})
    assert [o.shape for o in outs] == [(2, 3), (2, 3)]
    grads = eager.run_backward(state, [np.ones((2, 3)), None])
    assert grads[0][:, :3].sum() == 6 and grads[0][:, 3:].sum() == 0


def test_view_ops_declare_inplace_and_only_the_head_gradient():
    for name, params in [
        ("Reshape", {"shape": (-1,)}),
        ("Flatten", {}),
        ("expand_dims", {"axis": 0}),
    ]:
        prop = registry.get(name).create_property(**params)
        assert prop.forward_inplace_option(["x"], ["y"]) == [("x", "y")]
        assert prop.declare_backward_dependency(["dy"], ["x"], ["y"]) == ["dy"]


# -- indexing ------------------------------------------------------------------


def test_embedding_take_pick_gradients_accumulate_repeats():
    index = np.array([[0.0, 2.0], [2.0, 1.0]])
    weight = _rand(4, 3)
    eager.numeric_gradient_check(
        "Embedding", [index, weight], {"input_dim": 4, "output_dim": 3, "dtype": "float64"}, wrt=[1]
    )
    _, grads = eager.run("take", [weight, np.array([1.0, 1.0, 3.0])], head_grads=[np.ones((3, 3))])
    assert grads[0][:, 0].tolist() == [0, 2, 0, 1]
    eager.numeric_gradient_check(
        "take", [_rand(3, 4), np.array([[3.0, 0.0]])], {"axis": 1}, wrt=[0]
    )
    eager.numeric_gradient_check(
        "pick", [_rand(3, 4), np.array([3.0, 0.0, 2.0])], {"axis": 1}, wrt=[0]
    )


def test_one_hot_topk_sort():
    out = eager.run_forward(
        "one_hot", [np.array([2.0, 0.0])], {"depth": 3, "on_value": 5, "off_value": -1}
    )[0][0]
    assert out.tolist() == [[-1, -1, 5], [5, -1, -1]]
    x = np.array([[3.0, 1.0, 4.0, 1.5]])
    assert eager.run_forward("topk", [x], {"k": 2})[0][0].tolist() == [[2.0, 0.0]]
    assert eager.run_forward("topk", [x], {"k": 2, "ret_typ": "value"})[0][0].tolist() == [
        [4.0, 3.0]
    ]
    assert eager.run_forward("topk", [x], {"k": 2, "ret_typ": "mask"})[0][0].tolist() == [
        [1, 0, 1, 0]
    ]
    outs = eager.run_forward("topk", [x], {"k": 1, "ret_typ": "both", "is_ascend": True})[0]
    assert outs[0].tolist() == [[1.0]] and outs[1].tolist() == [[1.0]]
    assert eager.run_forward("sort", [x])[0][0].tolist() == [[1.0, 1.5, 3.0, 4.0]]
    assert eager.run_forward("argsort", [x])[0][0].tolist() == [[1, 3, 0, 2]]
    eager.numeric_gradient_check("topk", [_rand(3, 5)], {"k": 2, "ret_typ": "value"})


def test_where_and_clip():
    cond = np.array([[1.0, 0.0], [0.0, 1.0]])
    eager.numeric_gradient_check("where", [cond, _rand(2, 2), _rand(2, 2, seed=1)], wrt=[1, 2])
    eager.numeric_gradient_check(
        "where", [np.array([1.0, 0.0]), _rand(2, 3), _rand(2, 3, seed=1)], wrt=[1, 2]
    )
    x = np.array([-2.0, -0.3, 0.4, 2.0])
    outs, grads = eager.run("clip", [x], {"a_min": -0.5, "a_max": 0.5}, head_grads=[np.ones(4)])
    assert outs[0].tolist() == [-0.5, -0.3, 0.4, 0.5] and grads[0].tolist() == [0, 1, 1, 0]


# -- reductions ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "nansum"])
@pytest.mark.parametrize(
    "params", [{}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"axis": 1, "exclude": True}]
)
def test_reduction_gradients(name, params):
    eager.numeric_gradient_check(name, [_rand(2, 3, 4) + 3], params)


def test_reduction_shapes_norm_and_arg_reductions():
    prop = registry.get("sum").create_property()
    assert prop.infer_shape([(2, 3)])[1] == [(1,)]
    assert registry.get("sum").create_property(axis=0, exclude=True).infer_shape([(2, 3)])[1] == [
        (2,)
    ]
    eager.numeric_gradient_check("norm", [_rand(2, 3)])
    eager.numeric_gradient_check("norm", [_rand(2, 3)], {"ord": 1, "axis": 1})
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    assert eager.run_forward("argmax", [x], {"axis": 1})[0][0].tolist() == [1.0, 0.0]
    assert eager.run_forward("argmin", [x])[0][0].tolist() == [4.0]
    assert eager.run_forward("argmax_channel", [x])[0][0].tolist() == [1.0, 0.0]


# -- creation ------------------------------------------------------------------


def test_creation_ops():
    assert eager.run_forward("_zeros", [], {"shape": (2, 3)})[0][0].tolist() == [[0] * 3] * 2
    ones = eager.run_forward("_ones", [], {"shape": (2,), "dtype": "int32"})[0][0]
    assert ones.dtype == np.int32 and ones.tolist() == [1, 1]
    assert eager.run_forward("_full", [], {"shape": (2,), "value": 2.5})[0][0].tolist() == [
        2.5,
        2.5,
    ]
    arange = eager.run_forward("_arange", [], {"start": 0, "stop": 3, "step": 1.5, "repeat": 2})[0][
        0
    ]
    assert arange.tolist() == [0.0, 0.0, 1.5, 1.5]
    assert eager.run_forward("_eye", [], {"N": 2, "k": 1})[0][0].tolist() == [[0, 1], [0, 0]]
    outs, grads = eager.run("ones_like", [_rand(2, 2)], head_grads=[np.ones((2, 2))])
    assert outs[0].tolist() == [[1, 1], [1, 1]] and grads[0].tolist() == [[0, 0], [0, 0]]


def test_clip_sort_cast_numeric_gradients():
    x = np.array([[-2.0, -0.3, 0.45], [0.7, 1.9, -0.8]])
    eager.numeric_gradient_check("clip", [x], {"a_min": -0.5, "a_max": 0.5})
    eager.numeric_gradient_check("sort", [_rand(3, 4)], {"axis": 1, "is_ascend": False})
    eager.numeric_gradient_check("Cast", [_rand(2, 3)], {"dtype": "float64"})
