"""What is trained: a data set, a per-sample transform, a net and a loss, by name."""

from __future__ import annotations

from gluonbench.workloads.base import Workload, get_workload, register, workload_names

__all__ = ["Workload", "get_workload", "register", "workload_names"]
