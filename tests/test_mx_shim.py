"""The single MXNet import applies the numpy and distutils shims MXNet 1.9.1 needs."""

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


def test_numpy_aliases_restored_when_numpy_removed_them():
    # emulate numpy >= 1.24, where np.bool & co. raise AttributeError
    proc = _run(
        """
        import numpy as np
        removed = ("bool", "int", "float", "complex", "object", "str")
        original = np.__getattr__
        def no_aliases(name):
            if name in removed:
                raise AttributeError(name)
            return original(name)
        np.__getattr__ = no_aliases
        for name in removed:
            np.__dict__.pop(name, None)
        from gluonbench._mx import mx, nd
        assert np.bool is bool and np.object is object
        print(nd.array([1, 2]).asnumpy().sum(), mx.__version__)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3.0", "1.9.1"]


def test_distutils_shimmed_when_python_lacks_it():
    # emulate Python 3.12, where `import distutils` fails without setuptools' help
    proc = _run(
        """
        import sys, importlib.abc
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "distutils" and not any(type(f).__name__ == "DistutilsMetaFinder" for f in sys.meta_path):
                    raise ModuleNotFoundError(name)
        sys.modules.pop("distutils", None)
        sys.meta_path.insert(0, Block())
        import gluonbench._mx as m
        sys.meta_path.pop(0)
        from distutils.version import LooseVersion
        assert "setuptools" in sys.modules["distutils"].__file__
        print(LooseVersion("1.2") < LooseVersion("1.10"), m.mx.__version__)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "1.9.1"]


def test_mxnet_imported_in_exactly_one_module():
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1] / "gluonbench"
    import ast

    def imports_mxnet(path: pathlib.Path) -> bool:
        # import statements only (a docstring's example of user code does not count)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "mxnet" for a in node.names):
                return True
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mxnet" and not node.level:
                return True
        return False

    importers = [p.relative_to(root).as_posix() for p in root.rglob("*.py") if imports_mxnet(p)]
    assert importers == ["_mx.py"]


def test_the_mxnet_import_leaves_unused_modules_unloaded_until_read():
    """MXNet imports scipy.stats (for its quantization and test helpers) and, on Python 3.11, distutils through
    setuptools' redirect, about a third of its start-up between them: neither is loaded for gluonbench's own use,
    and a user's scipy.stats works as ever."""
    proc = _run(
        """
        import sys
        from gluonbench._mx import nd
        import mxnet.contrib.quantization as quantization
        assert type(sys.modules["scipy.stats"]).__name__ == "_Deferred", type(sys.modules["scipy.stats"])
        assert "scipy.stats._stats_py" not in sys.modules
        if sys.version_info < (3, 12):
            assert "setuptools" not in sys.modules, sys.modules["distutils"]
        print(nd.array([1, 2]).asnumpy().sum())
        from scipy import stats
        from scipy.stats import norm
        import scipy.stats.distributions
        print(stats.norm.cdf(0), norm.cdf(0), quantization.stats.norm.cdf(0), scipy.stats.distributions.norm.cdf(0))
        try:
            stats.no_such_name
        except AttributeError:
            print("AttributeError")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3.0", "0.5", "0.5", "0.5", "0.5", "AttributeError"]
