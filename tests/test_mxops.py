"""MXNet's operator functions kept compiled between processes (gluonbench.mxops): each rebuilt function is the one
MXNet makes, a file made for another Python or MXNet (or damaged) is not used, and the cache can be turned off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# every function MXNet generated for an operator, as fresh interpreters see it: where it is bound and everything
# that makes it that function (the handle, an address, differs between processes and is left out)
TABLE = """
import hashlib, json, sys, types
import gluonbench._mx
from gluonbench import mxops
table = {}
for mname, mod in sorted(sys.modules.items()):
    if not mname.startswith("mxnet") or mod is None:
        continue
    for key, fn in sorted(vars(mod).items()):
        if isinstance(fn, types.FunctionType) and fn.__code__.co_filename == "<string>":
            c = fn.__code__
            consts = [repr(x) if not isinstance(x, int) or abs(x) < 2**32 else "address" for x in c.co_consts]
            table[f"{mname}.{key}"] = [
                fn.__name__, fn.__qualname__, fn.__module__, hashlib.md5((fn.__doc__ or "").encode()).hexdigest(),
                c.co_code.hex(), consts, c.co_names, c.co_varnames, repr(fn.__defaults__), repr(fn.__kwdefaults__),
                c.co_firstlineno, c.co_flags, fn.__globals__["__name__"], key in getattr(mod, "__all__", []),
            ]
out = gluonbench._mx.nd.FullyConnected(
    gluonbench._mx.nd.ones((2, 3)), gluonbench._mx.nd.ones((4, 3)), no_bias=True, num_hidden=4
)
print(json.dumps({"stats": mxops.stats(), "n": len(table), "sum": float(out.sum().asscalar()),
                  "table": hashlib.sha256(json.dumps(table).encode()).hexdigest()}))
"""


def _import(cache: Path, **env: str) -> dict:
    full = {k: v for k, v in os.environ.items() if k != "GLUONBENCH_MXNET_CACHE"}
    full.update(GLUONBENCH_CACHE=str(cache), **env)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(TABLE)], capture_output=True, text=True, timeout=180, env=full
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_function_rebuilt_from_the_file_is_the_one_mxnet_makes(tmp_path):
    made = _import(tmp_path)  # nothing kept yet: MXNet makes every function, and the file is written
    kept = tmp_path / f"mxnet-ops-{sys.implementation.cache_tag}.marshal"
    assert made["stats"]["made"] > 2000 and kept.is_file()
    read = _import(tmp_path)
    assert read["stats"]["made"] == 0 and read["stats"]["read"] == made["stats"]["reused"] + made["stats"]["made"]
    assert (read["n"], read["table"]) == (made["n"], made["table"]) and made["n"] > 3000
    assert read["sum"] == made["sum"] == 24.0  # the handle each function calls is this process's own


@pytest.mark.parametrize("damage", ["header", "truncated", "folder", "writable by others", "link"])
def test_a_file_made_elsewhere_or_damaged_is_not_used_and_is_made_again(tmp_path, damage):
    import marshal

    kept = tmp_path / f"mxnet-ops-{sys.implementation.cache_tag}.marshal"
    if damage == "header":  # a file made with another MXNet library: its header names that one
        kept.write_bytes(marshal.dumps(((1, b"x", "/elsewhere/libmxnet.so", 1, 1), {})))
    elif damage == "truncated":
        kept.write_bytes(b"\xe3\x00\x01")
    elif damage == "folder":
        kept.mkdir()
    else:  # a good file, but one someone else could have changed (its code would run in this process)
        good = tmp_path / "good"
        _import(tmp_path, GLUONBENCH_MXNET_CACHE=str(good))
        if damage == "link":
            kept.symlink_to(good)
        else:
            good.rename(kept)
            kept.chmod(0o666)
    made = _import(tmp_path)
    assert made["stats"]["made"] > 2000 and made["sum"] == 24.0
    if damage == "folder":  # a folder where the file goes is left as it is
        assert kept.is_dir()
    elif damage == "link":  # a link is not written through either
        assert kept.is_symlink()
    else:  # the file is made again, private
        assert _import(tmp_path)["stats"]["made"] == 0 and kept.stat().st_mode & 0o022 == 0


def test_the_cache_can_be_turned_off_and_a_run_hands_its_children_a_file_in_its_own_folder(tmp_path):
    off = _import(tmp_path, GLUONBENCH_MXNET_CACHE="off")
    assert off["stats"]["read"] == 0 and off["stats"]["made"] > 2000 and not any(tmp_path.iterdir())
    # a cache folder that cannot be written: the parent's import is handed on through the run's own folder
    blocked = tmp_path / "file"
    blocked.write_text("")
    code = f"""
        import json, os, sys
        from pathlib import Path
        import gluonbench._mx
        from gluonbench import mxops
        env = {{}}
        mxops.handover(env, Path({str(tmp_path)!r}))
        print(json.dumps(env))
        """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "GLUONBENCH_CACHE": str(blocked / "sub")},
    )
    assert proc.returncode == 0, proc.stderr
    handed = json.loads(proc.stdout.strip().splitlines()[-1])["GLUONBENCH_MXNET_CACHE"]
    assert Path(handed) == tmp_path / "mxnet-ops.marshal" and Path(handed).is_file()
    assert _import(tmp_path / "elsewhere", GLUONBENCH_MXNET_CACHE=handed)["stats"]["made"] == 0
