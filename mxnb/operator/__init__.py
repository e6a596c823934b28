"""Operators: the interface (Operator / OperatorProperty / Param), the registry,
SimpleOp, MXNet-Python-compatible custom ops, and the operator library (``ops/``).

Example::

    >>> from mxnb import operator as op
    >>> op.OpReqType.ADD_TO
    <OpReqType.ADD_TO: 3>
"""

from . import (
    eager,
    ops,
    registry,
)
from .base import (
    REQUIRED,
    OpContext,
    Operator,
    OperatorProperty,
    OpReqType,
    ResourceRequest,
    assign,
)
from .custom import CustomOp, CustomOpProp
from .numpy_op import NumpyOp, PythonOp
from .param import DType, Param, Shape
from .registry import register, register_alias
from .simple_op import GradUses, SimpleOpInplace, simple_op

__all__ = [
    "REQUIRED",
    "CustomOp",
    "CustomOpProp",
    "DType",
    "GradUses",
    "NumpyOp",
    "OpContext",
    "OpReqType",
    "Operator",
    "OperatorProperty",
    "Param",
    "PythonOp",
    "ResourceRequest",
    "Shape",
    "SimpleOpInplace",
    "assign",
    "eager",
    "ops",
    "register",
    "register_alias",
    "registry",
    "simple_op",
]
