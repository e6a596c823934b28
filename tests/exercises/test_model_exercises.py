"""The NDArray, operator and custom-op exercises: references pass, wrong answers fail for their reason."""

from __future__ import annotations

import pytest

import mxnb as mx


# -- NDArray: a loop without a wait ----------------------------------------------------------
def loop_wait_to_read(x, steps):
    history = []
    for _ in range(steps):
        x = 0.5 * x + 1
        x.wait_to_read()  # "to be safe"
        history.append(x.mean())
    return x, history


def loop_asscalar(x, steps):
    history = []
    for _ in range(steps):
        x = 0.5 * x + 1
        history.append(x.mean().asscalar())
    return x, history


def loop_waitall(x, steps):
    history = []
    for _ in range(steps):
        x = 0.5 * x + 1
        history.append(x.mean())
        mx.nd.waitall()
    return x, history


def loop_early_stop(x, steps):
    history = []
    for _ in range(steps):
        new = 0.5 * x + 1
        history.append(new.mean())
        if (new - x).abs().max().asscalar() < 1e-9:  # converged? reads a value each step
            break
        x = new
    return new, history


def loop_wrong_update(x, steps):
    history = []
    for _ in range(steps):
        x = 0.5 * x  # forgot the + 1
        history.append(x.mean())
    return x, history


# -- Operators: backward dependencies --------------------------------------------------------
def deps_everything(out_grad, in_data, out_data):
    return [*out_grad, *in_data, *out_data]


def deps_input_sign(out_grad, in_data, out_data):
    return [out_grad[0], in_data[0]]  # "relu'(x) = x > 0": but backward reads the output


def deps_output_only(out_grad, in_data, out_data):
    return [out_data[0]]


def deps_nothing(out_grad, in_data, out_data):
    return []


# -- CustomOp: softplus ----------------------------------------------------------------------
class SoftplusNoChainRule(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.log(1 + mx.nd.exp(in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 1 / (1 + mx.nd.exp(-in_data[0])))  # out_grad forgotten


class SoftplusSignError(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.log(1 + mx.nd.exp(in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] / (1 + mx.nd.exp(in_data[0])))  # 1 - sigmoid


class SoftplusInPlace(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        x[:] = mx.nd.exp(x)  # "saves memory": writes into its input
        self.assign(out_data[0], req[0], mx.nd.log(1 + x))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] / (1 + mx.nd.exp(-in_data[0])))


class SoftplusWrongForward(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.exp(in_data[0]))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * mx.nd.exp(in_data[0]))


WRONG = [
    ("ndarray_loop_without_wait", loop_wait_to_read, "wait_in_loop"),
    ("ndarray_loop_without_wait", loop_asscalar, "wait_in_loop"),
    ("ndarray_loop_without_wait", loop_waitall, "wait_in_loop"),
    ("ndarray_loop_without_wait", loop_early_stop, "wait_in_loop"),
    ("ndarray_loop_without_wait", loop_wrong_update, "wrong_value"),
    ("operator_inplace_relu", deps_everything, "no_inplace"),
    ("operator_inplace_relu", deps_input_sign, "missing_dependency"),
    ("operator_inplace_relu", deps_output_only, "missing_dependency"),
    ("operator_inplace_relu", deps_nothing, "missing_dependency"),
    ("customop_gradient", SoftplusNoChainRule, "gradient"),
    ("customop_gradient", SoftplusSignError, "gradient"),
    ("customop_gradient", SoftplusInPlace, "writes_input"),
    ("customop_gradient", SoftplusWrongForward, "wrong_forward"),
]

NAMES = ["ndarray_loop_without_wait", "operator_inplace_relu", "customop_gradient"]


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_solution_passes(name):
    passed, message, counterexample = mx.exercises.check(name, mx.exercises.solution(name))
    assert passed, message
    assert counterexample is None


@pytest.mark.parametrize("name", NAMES)
def test_the_starting_code_fails(name):
    assert not mx.exercises.check(name, mx.exercises.get(name).starting()).passed


@pytest.mark.parametrize(
    ("name", "answer", "reason"), WRONG, ids=[answer.__name__ for _, answer, _ in WRONG]
)
def test_a_wrong_answer_is_rejected_for_its_reason(name, answer, reason):
    result = mx.exercises.check(name, answer)
    assert not result.passed
    assert result.reason == reason, result.message
    assert result.counterexample is None  # no schedule to show: the trace, plan or check says why


def test_the_loop_grader_counts_one_wait_per_iteration():
    result = mx.exercises.check("ndarray_loop_without_wait", loop_asscalar)
    assert result.details["waits"] == 20
    assert "waited 20 times" in result.message


def test_the_relu_declaration_saves_memory_and_takes_the_input_in_place():
    good = mx.exercises.check(
        "operator_inplace_relu", mx.exercises.solution("operator_inplace_relu")
    )
    bad = mx.exercises.check("operator_inplace_relu", deps_everything)
    assert good.details["saved"] > 0
    assert good.details["bytes"] + good.details["saved"] == bad.details["bytes"]
    assert "in place" in good.message


def test_missing_output_dependency_names_it():
    result = mx.exercises.check("operator_inplace_relu", deps_input_sign)
    assert "out_data[0]" in result.message
