"""Files in and out: Parquet schemas, atomic writes, provenance, tables, figures, vs_paper."""


class DataUnavailableError(RuntimeError):
    """A study's input data cannot be had here (e.g. a Hub data set neither reachable nor in the cache)."""
