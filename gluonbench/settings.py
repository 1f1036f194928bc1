"""Every setting the commands share beside the loader's knobs and the budgets, declared once.

A :class:`Setting` holds what a setting is: its name (the settings' field, the TOML key and the Python
argument), type, bounds, default, help and command-line flag. The commands' flags are generated from it
(:func:`gluonbench.commands.options.add_setting`), every settings type checks the fields it holds against it
(:func:`check_declared`), the bounds table (:data:`gluonbench.bounds.LIMITS`) is read from it, and an error
names the setting by its name (``seed``) from Python and by its flag (``--seed``) on the command line. The
loader's knobs (:data:`gluonbench.knobs.KNOBS`) are settings too, with what tune needs to search them; the
budgets (:data:`gluonbench.budgets.BUDGETS`) have one range per command.

======================  ========  ===================  ===============================================================
setting                 type      range                means
======================  ========  ===================  ===============================================================
``seed``                int       0 .. 2**32 - 1       numpy's and MXNet's random seed
``ctx``                 str                            cpu, cpu:N, gpu or gpu:N
``epochs``              int       1 .. 100,000         epochs per run
``repeat``              int       1 .. 1,000           runs per worker count
``max_batches``         int|None  1 .. 10**9           cap on training (and eval) batches per run
``eval_workers``        int|None  0 .. 1,024           the eval loader's workers
``max_workers``         int|None  0 .. 1,024           most workers tune tries
``timeout_s``           float     0 .. 10**7 s         one run's limit (``--timeout``)
``devices``             int|None  1 .. 1,024           contexts in one process
``hosts``               int       1 .. 1,024           kvstore worker processes per job (each)
``servers``             int|None  0 .. 1,024           parameter servers per job
``port``                int|None  0 .. 65,535          the kvstore scheduler's port
``diagnose_rank``       int|None  0 .. 1,023           the worker rank that diagnoses its pipeline
``gpus``                int       0 .. 1,023           GPU indexes (each)
``classes``             int|None  1 .. 1,000,000       model outputs
``image_size``          int|None  1 .. 16,384          the model's input size
``workload``            str                            a built-in data set and its model (``--dataset``)
``data_dir``            str|None                       the data set's folder
``download``            bool                           download a data set with no local copy (``--no-download``)
``pipeline``            str|None                       a user's pipeline factory, ``MODULE:FUNCTION``
``model``               str|None                       a gluoncv classification model
``preset``              str|None                       an image workload's training transforms
``kvstore``             str|None                       MXNet's kvstore
``launcher``            str                            local or ssh
``hostfile``            str|None                       the ssh launcher's hosts
``diagnose``            bool                           a diagnosis after each sweep run
``diagnose_budget_s``   float     its budget's         seconds for each run's diagnosis (``--diagnose-budget``)
``out``                 str                            the parent folder of run folders
``name``                str|None  a plain name         the run folder's suffix: no path, no leading dot
``json_path``           str|None                       a JSON copy of the result (``--json``)
======================  ========  ===================  ===============================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from gluonbench.budgets import BUDGETS
from gluonbench.errors import GluonbenchError
from gluonbench.names import FLAGS, param, param_example
from gluonbench.units import MAX_SECONDS

BOOL_TEXTS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
"""The texts a switch's value may be written as (lower case), and what each means: a config's, ``--set``'s, a rule
parameter's, a synthetic option's"""


@dataclass(frozen=True)
class Setting:
    """One setting: its name, type, bounds, default, help and flag; :meth:`check` is its one check."""

    name: str
    kind: type
    default: Any = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    optional: bool = False
    """None is a value (e.g. ``max_batches=None``: no cap)"""
    help: str = ""
    """what it is: the help of its command-line flag in every command"""
    flag: str = ""
    """its command-line flag; default: ``--`` + the name with dashes"""
    means: str = ""
    """added to an error about its value (why the range is what it is)"""
    parse: Callable[[Any, str], Any] | None = None
    """a check of a text value beyond its type (a context string), given the value and its worded name"""
    seconds: bool = True
    """a float setting is a duration in seconds; False: a plain number (a share, a fraction)"""
    exclusive: bool = False
    """the bounds of a plain number are open: ``(minimum, maximum)``"""
    choices: tuple[str, ...] = ()
    """the values its flag takes, where they are a short list (the value's check is where it is used)"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "flag", self.flag or "--" + self.name.replace("_", "-"))

    @property
    def key(self) -> str:
        """Its field in the commands' settings and its TOML key (a knob's may differ from its name)."""
        return self.name

    def check(self, value: Any, what: str | None = None) -> Any:
        """``value`` if it is this setting's type and within its range, else one line naming ``what`` (default:
        the setting as a parameter, worded for the caller) and the range."""
        what = what or param(self.key)
        tail = f"; {self.means}" if self.means else ""
        if value is None and self.optional:
            return None
        if self.kind is bool:
            if not isinstance(value, bool):
                raise GluonbenchError(f"{what} must be True or False (got {value!r})")
            return value
        if self.kind is str:
            if not isinstance(value, str):
                raise GluonbenchError(f"{what} must be a string (got {value!r})")
            return self.parse(value, what) if self.parse else value
        if self.kind is float and not self.seconds:
            return check_number(value, what, self.minimum, self.maximum, exclusive=self.exclusive, tail=tail)
        if self.kind is float:  # seconds
            minimum = -math.inf if self.minimum is None else self.minimum
            return check_duration(value, what, minimum=minimum, maximum=self.maximum or MAX_SECONDS)
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and math.isfinite(value) and value == int(value):
                value = int(value)
            else:
                none = " or None" if self.optional else ""
                raise GluonbenchError(f"{what} must be a whole number{none} (got {value!r}){tail}")
        lo, hi = self.minimum, self.maximum
        if lo is not None and value < lo:
            least = "0 or more" if lo == 0 else f"at least {lo}"
            raise GluonbenchError(f"{what} must be {least} (got {value}){tail}")
        if hi is not None and value > hi:
            low = f"from {lo} to {hi}" if lo is not None else f"at most {hi}"
            raise GluonbenchError(f"{what} must be {low} (got {value}){tail}")
        return value

    def words(self, optional: bool | None = None) -> str:
        """What a value of this setting is, in words ("a whole number or None")."""
        kind = {bool: "True or False", int: "a whole number", str: "a string"}.get(self.kind)
        if self.kind is float:
            kind = "a number of seconds" if self.seconds else "a number"
        none = self.optional if optional is None else optional
        return f"{kind}{' or None' if none else ''}"

    def is_type(self, value: Any) -> bool:
        """Whether ``value`` has this setting's type (a whole number for a float setting too; no bool for a
        number)."""
        if self.kind is bool or self.kind is str:
            return isinstance(value, self.kind)
        if isinstance(value, bool):
            return False
        return isinstance(value, int | float) if self.kind is float else isinstance(value, int)

    def convert(self, raw: Any, what: str, optional: bool | None = None) -> Any:
        """A value from a config file or a ``--set KEY=VALUE`` text as this setting's type ("64" is 64, "off" is
        False, "none" is None where None is a value); its range is :meth:`check`'s. ``optional``: None is a value
        here though the declaration has none (a setting left to the pipeline's own)."""
        none = self.optional if optional is None else optional
        if none and (raw is None or (isinstance(raw, str) and raw.strip().lower() in ("none", ""))):
            return None
        if self.kind is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).lower()
            if text in BOOL_TEXTS:
                return BOOL_TEXTS[text]
            raise GluonbenchError(f"{what} must be true or false (got {raw!r})")
        if self.kind is str:
            if not isinstance(raw, str):
                raise GluonbenchError(f"{what} must be a string (got {raw!r})")
            return raw
        wrong = GluonbenchError(f"{what} must be {self.words(none)} (got {raw!r})")
        # TOML's true would be 1 and 64.9 would be 64: neither is what was meant, so both are refused
        if isinstance(raw, bool) or (isinstance(raw, str) and len(raw.strip()) > 40):
            raise wrong
        if self.kind is int:
            if isinstance(raw, float):
                raise wrong
            try:
                return int(raw)
            except (TypeError, ValueError):
                raise wrong from None
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise wrong from None
        return check_duration(value, what, minimum=-math.inf) if self.seconds else value

    def shown_default(self, default: Any = None) -> str:
        """The default as a flag's help says it."""
        value = self.default if default is None else default
        return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def check_duration(value: Any, what: str, minimum: float = 0.0, maximum: float = MAX_SECONDS) -> float:
    """A duration in seconds: a finite number, not a bool, in ``minimum .. maximum``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise GluonbenchError(f"{what} must be a finite number of seconds (got {value!r})")
    if value > maximum:
        about = " (about 115 days)" if maximum == MAX_SECONDS else ""
        raise GluonbenchError(f"{what} {value:g} s is too long; the most is {maximum:g} s{about}")
    if value < minimum:
        raise GluonbenchError(f"{what} must be at least {minimum:g} seconds (got {value:g})")
    return float(value)


def check_number(
    value: Any,
    what: str,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    exclusive: bool = False,
    tail: str = "",
) -> float:
    """A finite number, not a bool, within ``minimum .. maximum`` (open bounds where ``exclusive``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GluonbenchError(f"{what} must be a number (got {value!r}){tail}")
    lo = -math.inf if minimum is None else minimum
    hi = math.inf if maximum is None else maximum
    inside = lo < value < hi if exclusive else lo <= value <= hi
    if not math.isfinite(value) or not inside:
        if minimum is not None and maximum is not None:
            span = f"in ({lo:g}, {hi:g})" if exclusive else f"in [{lo:g}, {hi:g}]"
        elif minimum is not None:
            span = f"{'over' if exclusive else 'at least'} {lo:g}"
        else:
            span = f"{'under' if exclusive else 'at most'} {hi:g}"
        raise GluonbenchError(f"{what}={value:g} is out of range; give a number {span}{tail}")
    return float(value)


def _ctx(value: str, what: str) -> str:
    from gluonbench.contexts import check_ctx

    check_ctx(value, what)
    return value


def plain_name(name: str, what: str, example: str) -> str:
    """``name`` if it is a plain file-name part: no ``/``, ``\\``, ``..``, leading ``.`` or ``-``, control characters."""
    if (
        not isinstance(name, str)
        or not name
        or "/" in name
        or "\\" in name
        or ".." in name
        or name.startswith((".", "-"))
        or any(ord(c) < 32 for c in name)
        or len(name) > 100
        or not _utf8(name)
    ):
        raise GluonbenchError(
            f"{what} {name!r} must be a plain name (letters, digits, -, _; no '/', '..' or leading '.'), e.g. {example}"
        )
    return name


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a surrogate-escaped byte from a non-UTF-8 command line ($'\\xff')
        return False
    return True


def _run_name(value: str, what: str) -> str:
    return plain_name(value, what, param_example("name='w0-8-cpu'", "--name w0-8-cpu"))


DEFAULT_OUT = "gluonbench-results"
"""The folder, relative to the working directory, that run folders go under when no ``out`` is given. Not
``results``: from a checkout of a project that keeps its own measurements in a tracked ``results/`` (gluonbench's
does), a default run would land among them. The checkout's ``.gitignore`` ignores this one."""

DATA_DIR_HELP = (
    "folder of the data set's files (MNIST: the four IDX files, default $GLUONBENCH_DATA/NAME, MXNet's cache or a "
    "system copy; synthetic: where its files are written)"
)


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting("seed", int, 1, 0, 2**32 - 1, help="random seed", means="numpy and MXNet take 0 to 4294967295"),
        Setting("ctx", str, None, optional=True, help="cpu, cpu:N, gpu or gpu:N", parse=_ctx),
        Setting("epochs", int, 1, 1, 100_000, help="epochs per run"),
        Setting("repeat", int, 1, 1, 1_000, help="runs per worker count (median and min-max)"),
        Setting(
            "max_batches", int, None, 1, 1_000_000_000, optional=True, help="cap on training (and eval) batches per run"
        ),
        Setting("eval_workers", int, None, 0, 1_024, optional=True, help="fix the eval loader's workers"),
        Setting("max_workers", int, None, 0, 1_024, optional=True, help="most workers tried"),
        Setting("timeout_s", float, 3600.0, 0, MAX_SECONDS, help="seconds one run may take", flag="--timeout"),
        Setting("devices", int, None, 1, 1_024, optional=True, help="contexts in one process"),
        Setting("hosts", int, 1, 1, 1_024, help="kvstore worker processes per job"),
        Setting("servers", int, None, 0, 1_024, optional=True, help="parameter servers per job"),
        Setting("port", int, None, 0, 65_535, optional=True, help="scheduler port"),
        Setting("diagnose_rank", int, None, 0, 1_023, optional=True, help="the worker rank that diagnoses"),
        Setting("gpus", int, None, 0, 1_023, optional=True, help="GPUs by index"),
        Setting("classes", int, None, 1, 1_000_000, optional=True, help="model outputs"),
        Setting("image_size", int, None, 1, 16_384, optional=True, help="the model's input size"),
        # what runs, where its data are, where its results go
        Setting("workload", str, "mnist", help="a built-in data set and its model", flag="--dataset"),
        Setting("data_dir", str, None, optional=True, help=DATA_DIR_HELP),
        Setting("download", bool, True, help="download a data set that has no local copy", flag="--no-download"),
        Setting("pipeline", str, None, optional=True, help="your pipeline: pkg.mod:func or path/to/file.py:func"),
        Setting("model", str, None, optional=True, help="a classification model of gluoncv.model_zoo"),
        Setting(
            "preset",
            str,
            None,
            optional=True,
            help="per-sample training transforms: imagenet, cifar or none",
            choices=("imagenet", "cifar", "none"),
        ),
        Setting("kvstore", str, None, optional=True, help="MXNet kvstore: device, local, dist_sync, dist_async"),
        Setting("launcher", str, "local", help="local (every process here) or ssh (needs --hostfile)"),
        Setting("hostfile", str, None, optional=True, help="one host[:port] per line; servers first, then workers"),
        Setting("diagnose", bool, False, help="after each run, diagnose the bottleneck at its setting"),
        Setting(
            "diagnose_budget_s",
            float,
            BUDGETS["sweep.diagnose"].default,  # its range is the budget's, checked there (check_budget)
            help="seconds for each run's diagnosis",
            flag="--diagnose-budget",
        ),
        Setting("out", str, DEFAULT_OUT, help="parent folder of the run folders"),
        Setting("name", str, None, optional=True, help="suffix of the run folder", parse=_run_name),
        Setting(
            "json_path", str, None, optional=True, help="also write the result as JSON (atomically)", flag="--json"
        ),
    )
}
"""Every shared setting by name (the loader's knobs: :data:`gluonbench.knobs.KNOBS`)."""

FLAGS.update(
    {s.name: s.flag for s in SETTINGS.values() if s.flag != "--" + s.name.replace("_", "-") and s.kind is not bool}
)


SETTING = "gluonbench.setting"
"""the metadata key of a settings type's field that holds a declared setting (:func:`declared`)"""

_UNSET: Any = object()


def declared(name: str, default: Any = _UNSET) -> Any:
    """A settings type's field holding declared setting ``name``: its default is the declaration's (or this
    command's ``default``), and :func:`check_declared` checks it against the declaration.
    ``seed: int = declared("seed")``."""
    s = SETTINGS[name]
    return field(default=s.default if default is _UNSET else default, metadata={SETTING: name})


def check_declared(settings: Any) -> None:
    """Check each field of ``settings`` (a settings dataclass) made with :func:`declared` against its
    declaration (a tuple, such as a sweep's host counts, value by value): the one check of these settings in
    every settings type."""
    for f in fields(settings):
        name = f.metadata.get(SETTING)
        if name is None:
            continue
        value = getattr(settings, f.name)
        for one in value if isinstance(value, tuple | list) else (value,):
            SETTINGS[name].check(one)
