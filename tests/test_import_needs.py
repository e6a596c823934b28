"""``import mxnb`` needs only numpy and Pillow (a lent GPU machine has no more and installs nothing)."""

from __future__ import annotations

import subprocess
import sys

OPTIONAL = ("scipy", "ipywidgets", "matplotlib", "graphviz", "IPython", "anywidget", "ray")

BLOCK = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {OPTIONAL!r}:
            raise ImportError(f'{{name}} is blocked: import mxnb must not need it')
        return None
sys.meta_path.insert(0, Block())
import mxnb as mx
a = mx.nd.ones((2, 2)) + 1
exe = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3).simple_bind(mx.cpu(), data=(2, 4))
exe.forward()
print(a.asnumpy().sum(), exe.outputs[0].shape)
"""


def test_import_mxnb_and_a_first_step_need_no_optional_package():
    result = subprocess.run(
        [sys.executable, "-c", BLOCK], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["8.0", "(2,", "3)"]


def test_the_exact_planner_without_scipy_says_what_to_install():
    code = BLOCK.replace("import mxnb as mx", "import mxnb as mx\nfrom mxnb.executor import milp")
    code = code.split("a = mx.nd")[0] + (
        "try:\n    milp._scipy()\nexcept mx.base.MXNBError as e:\n    print(e)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "pip install scipy" in result.stdout and "solver='greedy'" in result.stdout
