"""Samplers for system metrics during a run."""

from gluonbench.monitor.system import SystemMonitor, SystemSummary, TreeUsage, merge_summaries, tree_usage

__all__ = ["SystemMonitor", "SystemSummary", "TreeUsage", "merge_summaries", "tree_usage"]
