"""Memory of a process and the processes it started, read from Linux's ``/proc``
(for the benchmarks and the memory test; not used at run time)."""

from __future__ import annotations

__all__ = ["process_tree", "rss_kb", "tree_pss_kb"]


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the GeoPackage writer, tile workers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo.extend(int(c) for c in f.read().split())
        except OSError:  # the process has ended
            pass
    return out


def rss_kb(pid: int) -> int | None:
    """The resident set size of ``pid`` (kB), None once it has ended."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def tree_pss_kb(pid: int) -> int:
    """Proportional set size of ``pid`` and its descendants (kB): pages a child
    shares with its parent after a fork count once, so this is the memory the
    processes hold together."""
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:  # the process ended between the two reads
            pass
    return total
