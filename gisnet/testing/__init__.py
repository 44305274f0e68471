"""Helpers for testing and benchmarking gisnet; not used by gisnet at run time.

:mod:`gisnet.testing.synthetic` generates deterministic synthetic towns (the
bundled sample town ``layers/sample`` and benchmark cities).
"""
