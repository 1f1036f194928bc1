"""Moved to :mod:`gluonbench.data.s3` (beside :mod:`gluonbench.data.store`); this alias keeps old imports working."""

from gluonbench.data.s3 import S3Store, parse_s3_uri

__all__ = ["S3Store", "parse_s3_uri"]
