"""Helpers for testing and benchmarking gisnet; not used by gisnet at run time.

:mod:`gisnet.testing.synthetic` generates deterministic synthetic towns (the
bundled sample town ``gisnet/sample`` and benchmark cities).

:mod:`gisnet.testing.towns` builds small towns in code from raw rows, through
the loader's own canonical mapping (:func:`~gisnet.testing.towns.make_town`),
and writes sewer graphs by hand with flags decided by :mod:`gisnet.rules`
(:func:`~gisnet.testing.towns.hand_graph`).
"""
