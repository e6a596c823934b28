"""nose.tools.raises / assert_raises on top of pytest (written for the measurement)."""

import functools

import pytest


def raises(*exceptions):
    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with pytest.raises(exceptions):
                function(*args, **kwargs)

        return wrapper

    return decorate


def assert_raises(exception, function=None, *args, **kwargs):
    if function is None:
        return pytest.raises(exception)
    with pytest.raises(exception):
        function(*args, **kwargs)


def ok_(expr, msg=None):
    assert expr, msg


def eq_(a, b, msg=None):
    assert a == b, msg


def make_decorator(function):
    """nose's ``make_decorator``: the wrapper keeps the wrapped test's name and docstring."""

    def decorate(wrapper):
        return functools.wraps(function)(wrapper)

    return decorate
