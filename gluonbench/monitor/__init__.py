"""Samplers for system metrics during a run."""

from gluonbench.monitor.system import SystemMonitor, SystemSummary

__all__ = ["SystemMonitor", "SystemSummary"]
