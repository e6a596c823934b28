"""pytest plugin for the measurement: Gluon is out of scope for mxnb, so ``mxnb.gluon`` is
a placeholder module whose every attribute raises, naming Gluon.  A test file that
imports Gluon at its top then still runs its other tests.  Under real MXNet
(the oracle run, where this file reads ``mxnet``) nothing is replaced."""

import importlib.util
import sys
import types


class _OutOfScope(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(f"out of scope: Gluon ({self.__name__}.{name})")


if importlib.util.find_spec("mxnb") is not None:
    import mxnb

    if not hasattr(mxnb, "gluon") and importlib.util.find_spec("mxnb.gluon") is None:
        for _name in ("mxnb.gluon", "mxnb.gluon.nn", "mxnb.gluon.block"):
            sys.modules[_name] = _OutOfScope(_name)
        mxnb.gluon = sys.modules["mxnb.gluon"]
        mxnb.gluon.nn = sys.modules["mxnb.gluon.nn"]
        mxnb.gluon.block = sys.modules["mxnb.gluon.block"]
