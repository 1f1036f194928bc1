"""What is trained: a data set, a per-sample transform, a net and a loss, by name."""

from __future__ import annotations

from gluonbench.workloads.base import get_workload, register, workload_names

__all__ = ["get_workload", "register", "workload_names"]
