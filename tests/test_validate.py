"""Numbers validated once (issue 37): finite, of the right kind, in range, where they are given.

Specification: :func:`mxnb.validate.check_number` / :func:`check_count` are
the one check; every optimizer's and initializer's numeric argument, the
recompute budget and the launcher's numbers go through them, so NaN, the
infinities, bools and out-of-range values are a ``ParamError`` naming the
owner and the argument.
"""

from __future__ import annotations

import inspect
import math
import re

import pytest

import mxnb as mx
from mxnb.base import ParamError
from mxnb.executor import zoo
from mxnb.launch import parse_args
from mxnb.validate import check_count, check_number

BAD_NUMBERS = [float("nan"), float("inf"), -float("inf"), True, "0.1", None]


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_check_number_refuses_what_is_not_a_finite_number(value):
    with pytest.raises(ParamError, match=r"Owner: lr must be a"):
        check_number(value, "lr", "Owner")


def test_check_number_ranges_and_results():
    assert check_number(1, "x", "O") == 1.0 and isinstance(check_number(1, "x", "O"), float)
    assert check_number(None, "x", "O", optional=True) is None
    assert check_number(0.0, "x", "O", low=0) == 0.0
    with pytest.raises(ParamError, match=r"must be in \(0, inf\), got 0.0"):
        check_number(0.0, "x", "O", low=0, low_open=True)
    with pytest.raises(ParamError, match=r"must be in \[0, 1\), got 1.0"):
        check_number(1.0, "beta1", "Adam", low=0, high=1, high_open=True)
    assert check_count(3, "n", "O", low=1) == 3
    for bad in (2.5, True, "2", 0):
        with pytest.raises(ParamError, match="O: n must be"):
            check_count(bad, "n", "O", low=1)


def _numeric_parameters(cls):
    """The float parameters of ``cls.__init__`` (defaults that are floats), by name."""
    signature = inspect.signature(cls.__init__)
    return [
        name
        for name, parameter in signature.parameters.items()
        if isinstance(parameter.default, float) and not isinstance(parameter.default, bool)
    ]


OPTIMIZER_CASES = [
    (name, parameter)
    for name, cls in sorted(mx.optimizer.optimizer._REGISTRY.items())
    for parameter in _numeric_parameters(cls)
    + ["learning_rate", "wd", "rescale_grad", "clip_gradient"]
]


@pytest.mark.parametrize(("name", "parameter"), OPTIMIZER_CASES)
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_every_optimizer_refuses_a_non_finite_hyper_parameter(name, parameter, value):
    """A registry walk: no optimizer accepts NaN or inf in any numeric argument."""
    with pytest.raises(ParamError, match=parameter):
        mx.optimizer.create(name, **{parameter: value})


def test_optimizer_ranges_where_a_value_breaks_the_update():
    with pytest.raises(ParamError, match=r"beta1 must be in \[0, 1\)"):
        mx.optimizer.Adam(beta1=1.0)  # MXNet 1.9.1: ZeroDivisionError at the first update
    with pytest.raises(ParamError, match="momentum"):
        mx.optimizer.SGD(momentum=-0.5)
    with pytest.raises(ParamError, match="learning_rate"):
        mx.optimizer.SGD(learning_rate=-1.0)
    opt = mx.optimizer.SGD(learning_rate=0.1)
    with pytest.raises(ParamError, match="learning_rate"):
        opt.set_learning_rate(math.nan)
    assert opt.learning_rate == 0.1  # a refused call changes nothing


INITIALIZERS = [
    (lambda v: mx.init.Normal(v), "sigma"),
    (lambda v: mx.init.Uniform(v), "scale"),
    (lambda v: mx.init.Xavier(magnitude=v), "magnitude"),
    (lambda v: mx.init.Orthogonal(scale=v), "scale"),
    (lambda v: mx.init.Constant(v), "value"),
    (lambda v: mx.init.Constant([1.0, v]), "value"),
    (lambda v: mx.init.LSTMBias(v), "forget_bias"),
    (lambda v: mx.init.MSRAPrelu(slope=v), "slope"),
]


@pytest.mark.parametrize(("make", "field"), INITIALIZERS)
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_initializers_refuse_non_finite_numbers(make, field, value):
    with pytest.raises(ParamError, match=field):
        make(value)


def test_a_valid_initializer_still_initialises():
    arr = mx.nd.zeros((3, 4))
    mx.init.Normal(0.5)("fc_weight", arr)
    assert arr.asnumpy().std() > 0


@pytest.mark.parametrize("budget", [float("inf"), float("nan"), 2.5e6 + 0.5, True, -1, 0])
def test_recompute_budget_is_checked_once(budget):
    with pytest.raises(ParamError, match="recompute"):
        mx.executor.plan_memory(zoo.mlp(), {"data": (8, 784)}, recompute=budget)


def test_a_whole_float_budget_is_a_budget():
    plan = mx.executor.plan_memory(zoo.mlp(), {"data": (8, 784)}, recompute=1e9)
    assert plan.recompute.startswith("budget 1000000000 B")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--timeout", "nan"], "--timeout must be a finite number"),
        (["--timeout", "0"], r"--timeout must be in \(0, inf\)"),
        (["--timeout", "soon"], "'soon' is not a number"),
        (["--num-cpus", "0"], "--num-cpus must be in"),
        (["--object-store-mb", "0"], "--object-store-mb must be in"),
        (["-s", "0"], "-s/--num-servers must be in"),
    ],
)
def test_launcher_numbers_are_checked_before_anything_starts(argv, message, capsys, monkeypatch):
    monkeypatch.delenv("MXNB_DIST_TIMEOUT", raising=False)
    with pytest.raises(SystemExit) as stop:
        parse_args(["-n", "1", *argv, "true"])
    assert stop.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def test_launcher_timeout_from_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("MXNB_DIST_TIMEOUT", "nan")
    with pytest.raises(SystemExit):
        parse_args(["-n", "1", "true"])
    assert "--timeout must be a finite number" in capsys.readouterr().err
    monkeypatch.setenv("MXNB_DIST_TIMEOUT", "12.5")
    assert parse_args(["-n", "1", "true"]).timeout == 12.5


def test_a_dist_job_config_is_checked():
    from mxnb.kvstore.dist import JobConfig

    with pytest.raises(ParamError, match="rank must be in"):
        JobConfig(None, "job", 2, 2, 1, 60.0)
    with pytest.raises(ParamError, match="timeout"):
        JobConfig(None, "job", 0, 2, 1, float("nan"))
