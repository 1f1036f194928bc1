"""The results store (JSON lines) and everything rebuilt from it: csv, md, plots."""
