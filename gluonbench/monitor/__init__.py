"""Samplers for system metrics during a run."""

from gluonbench.monitor.system import SystemMonitor, SystemSummary, merge_summaries

__all__ = ["SystemMonitor", "SystemSummary", "merge_summaries"]
