"""One timed run, probes as stage swaps, and child-process isolation."""
