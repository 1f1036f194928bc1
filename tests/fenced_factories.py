"""Factories that misbehave as user code can (tests/test_user_code_leftovers.py, the fault matrix's r41b rows): a
module import or a call that never returns, exits or raises KeyboardInterrupt, a non-daemon thread, a child process,
a fork, a change of folder, options that are credentials. Each leftover's pid goes
to the file named by the environment variable GB_PIDFILE, so a test can tell whether it outlived the command."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np

if os.environ.get("GB_HANG_AT_IMPORT"):
    time.sleep(1e6)
if os.environ.get("GB_EXIT_AT_IMPORT"):
    sys.exit(0)
if os.environ.get("GB_INTERRUPT_AT_IMPORT"):
    raise KeyboardInterrupt
if os.environ.get("GB_CHDIR_AT_IMPORT"):
    os.chdir(os.environ["GB_CHDIR_AT_IMPORT"])


def _spec():
    from mxnet import gluon

    x = np.random.rand(64, 8).astype("float32")
    y = np.random.randint(0, 2, 64).astype("float32")
    return {"dataset": gluon.data.ArrayDataset(x, y), "net": lambda: gluon.nn.Dense(2), "batch_size": 16}


def _note(pid: int) -> None:
    with open(os.environ["GB_PIDFILE"], "a") as f:
        f.write(f"{pid}\n")


def sleeps():
    time.sleep(1e6)


def sleeps_noted():
    """Notes its pid (it is in the factory now), then blocks: a real Ctrl-C or SIGTERM there is a stop."""
    _note(os.getpid())
    time.sleep(1e6)


def exits():
    """A CI gate must not pass by this: the factory ends the program with status 0."""
    sys.exit(0)


def interrupts():
    raise KeyboardInterrupt


def chdir():
    """Moves the process into the folder GB_CHDIR names: a relative --out must still land where it was meant to."""
    os.chdir(os.environ["GB_CHDIR"])
    return _spec()


def secrets(password="", aws_secret_access_key="", api_token="", db_url=""):
    """Takes credentials as options: none of their values may be kept in any file a command writes, nor put in
    the command line of a process gluonbench starts (any user's ``ps`` shows those)."""
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace")
    except OSError:  # no /proc (not Linux)
        argv = ""
    # a process gluonbench started (profile's child, a distributed job's worker), not the user's own command
    if "gluonbench.profiler.pipeline_run" in argv or "gluonbench.distributed.node" in argv:
        for value in (password, aws_secret_access_key, api_token, db_url):
            if value and value in argv:
                raise RuntimeError("a credential is in this process's command line")
    return _spec()


def reads_socket():
    a, _b = socket.socketpair()
    a.recv(10)


def thread():
    threading.Thread(target=time.sleep, args=(1e6,), name="user-sleeper").start()
    return _spec()


def child():
    _note(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"]).pid)
    return _spec()


def grandchild():
    """A double fork: the grandchild's parent exits at once, so it is re-parented."""
    code = "import subprocess, sys; print(subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"
    _note(int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout))
    return _spec()


def fork():
    pid = os.fork()
    if pid == 0:
        time.sleep(1000)
        os._exit(0)
    _note(pid)
    return _spec()


def fork_returns():
    """The forked child returns from the factory too: it must not run the command a second time."""
    if os.fork() == 0:
        _note(os.getpid())
    return _spec()


class _BadLen:
    def __getitem__(self, i):
        return np.zeros(8, dtype="float32"), 0.0

    def __len__(self):
        raise RuntimeError("the index is not loaded")


def bad_len():
    from mxnet import gluon

    return {"dataset": _BadLen(), "net": lambda: gluon.nn.Dense(2), "batch_size": 16}


def text_lr():
    return {**_spec(), "learning_rate": "fast"}


def options(a=1, b=2):
    return _spec()


# -- faults mid-run: good for the first batches, broken later (tests/test_midrun_faults.py) --------------------

MIDRUN = range(40, 200)
"""the items that go wrong: past the first batch gluonbench checks up front (items 0..15 and the last)"""


def _indexed(n: int = 256):
    x = np.zeros((n, 8), dtype="float32")
    x[:, 0] = np.arange(n)
    return x, np.zeros((n,), dtype="float32")


def _raising_transform(data, label):
    if int(data[0]) in MIDRUN:
        raise ValueError(f"bad sample {int(data[0])}")
    return data, label


def transform_raises():
    from mxnet import gluon

    x, y = _indexed()
    return {"dataset": gluon.data.ArrayDataset(x, y), "transform": _raising_transform,
            "net": lambda: gluon.nn.Dense(2), "batch_size": 8}  # fmt: skip


class _Ragged:
    def __len__(self):
        return 256

    def __getitem__(self, i):
        return np.zeros(9 if i in MIDRUN else 8, dtype="float32"), np.float32(0)


def shapes_differ():
    from mxnet import gluon

    return {"dataset": _Ragged(), "net": lambda: gluon.nn.Dense(2), "batch_size": 8}


def _failing_net():
    from mxnet import gluon

    class Failing(gluon.nn.Block):
        def __init__(self):
            super().__init__()
            self.dense = gluon.nn.Dense(2)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            if self.calls > 6:
                raise RuntimeError("the model broke")
            return self.dense(x)

    return Failing()


def forward_raises():
    from mxnet import gluon

    x, y = _indexed()
    return {"dataset": gluon.data.ArrayDataset(x, y), "net": _failing_net, "batch_size": 8}


def _detached_loss():
    from mxnet import gluon

    class Detached(gluon.loss.Loss):
        def __init__(self):
            super().__init__(None, 0)

        def hybrid_forward(self, F, pred, label):  # noqa: N803 (MXNet names it F)
            return F.ones_like(label)  # no path back to the net's parameters

    return Detached()


def loss_detached():
    from mxnet import gluon

    x, y = _indexed()
    return {"dataset": gluon.data.ArrayDataset(x, y), "net": lambda: gluon.nn.Dense(2), "loss": _detached_loss,
            "batch_size": 8}  # fmt: skip


# -- more faults for every command (tests/test_midrun_faults_all.py) ------------------------------------------------


def _in_loader_worker() -> bool:
    import multiprocessing

    return multiprocessing.current_process().name != "MainProcess"


def _worker_transform(data, label):
    if _in_loader_worker() and int(data[0]) in MIDRUN:
        raise ValueError(f"bad sample {int(data[0])} in a worker")
    return data, label


def worker_fault():
    """A transform that fails in the loader's worker processes only: a run at 0 workers is measured."""
    from mxnet import gluon

    x, y = _indexed()
    return {"dataset": gluon.data.ArrayDataset(x, y), "transform": _worker_transform,
            "net": lambda: gluon.nn.Dense(2), "batch_size": 8}  # fmt: skip


_LATE = {"left": -1}


def _late_transform(data, label):
    if not _in_loader_worker():  # the main process only (0 workers): a fault the loader's pool never sees
        _LATE["left"] -= 1
        if _LATE["left"] < 0:
            raise ValueError("the source went away")
    return data, label


def late_fault(after_items=2000):
    """A transform that fails every item in the main process once it has transformed ``after_items`` there (as a
    source that goes away mid-run): what was measured before that is there to be kept."""
    from mxnet import gluon

    _LATE["left"] = int(after_items)
    x, y = _indexed()
    return {"dataset": gluon.data.ArrayDataset(x, y), "transform": _late_transform,
            "net": lambda: gluon.nn.Dense(2), "batch_size": 8}  # fmt: skip


def _unused_block_net():
    from mxnet import gluon

    class Unused(gluon.nn.Block):
        def __init__(self):
            super().__init__()
            self.dense = gluon.nn.Dense(2)
            self.spare = gluon.nn.Dense(2, in_units=8)  # never called: its parameters get no gradient

        def forward(self, x):
            return self.dense(x)

    return Unused()


def param_unused():
    from mxnet import gluon

    x, y = _indexed()
    return {"dataset": gluon.data.ArrayDataset(x, y), "net": _unused_block_net, "batch_size": 8}
