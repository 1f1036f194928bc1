"""Data set formats (IDX, RecordIO) and discovery."""
