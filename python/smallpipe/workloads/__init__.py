"""Workload helpers written in Python: synthetic Squid access logs for replay."""

from smallpipe.workloads.squidlog import write_synthetic_access_log

__all__ = ["write_synthetic_access_log"]
