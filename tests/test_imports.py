"""`import gluonbench` is cheap, never imports MXNet, and makes the user's own `import mxnet` work in either order."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import EMULATE_NUMPY_124


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)


def test_import_gluonbench_does_not_import_mxnet():
    proc = _run(
        """
        import sys
        import gluonbench
        assert "mxnet" not in sys.modules, "import gluonbench imported mxnet"
        assert "gluonbench.api" not in sys.modules
        print(gluonbench.__version__)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == __import__("gluonbench").__version__


def test_user_mxnet_import_works_in_both_orders():
    for first, second in (("gluonbench", "mxnet"), ("mxnet", "gluonbench")):
        proc = _run(
            f"""
            import {first}
            import {second}
            from mxnet import gluon, nd
            import gluonbench
            net = gluon.nn.Dense(2, in_units=3)
            net.initialize()
            print(gluonbench.sweep.__name__, net(nd.ones((1, 3))).shape[1], nd.array([1, 2]).asnumpy().sum())
            """
        )
        assert proc.returncode == 0, (first, proc.stderr)
        assert proc.stdout.split() == ["sweep", "2", "3.0"], proc.stdout


def test_emulated_numpy_without_aliases_mxnet_fails_alone():
    """The control: with numpy's aliases gone (numpy >= 1.24), MXNet 1.9.1 alone cannot be used."""
    proc = _run(EMULATE_NUMPY_124 + "\nimport mxnet\nfrom mxnet import gluon\nprint(mxnet.nd.array([1]).dtype)\n")
    assert proc.returncode != 0 and "AttributeError: bool" in proc.stderr, proc.stderr[-2000:]


def test_emulated_numpy_without_aliases_import_gluonbench_first_fixes_mxnet():
    proc = _run(
        EMULATE_NUMPY_124
        + textwrap.dedent(
            """
            import sys
            import gluonbench
            assert "mxnet" not in sys.modules
            assert np.bool is bool and np.object is object and np.str is str
            import mxnet
            from mxnet import gluon, nd
            loader = gluon.data.DataLoader(gluon.data.ArrayDataset(np.zeros((8, 2), np.float32), np.arange(8)), 4)
            print(sum(int(x.shape[0]) for x, _ in loader), nd.array([1, 2]).asnumpy().sum(), mxnet.__version__)
            """
        )
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["8", "3.0", "1.9.1"]
