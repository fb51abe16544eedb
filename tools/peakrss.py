#!/usr/bin/env python3
"""peakrss.py OUT CMD...: run CMD, then write "wall_s parent_kb children_kb max_kb" to OUT.

parent_kb is CMD's own peak RSS and children_kb the largest peak RSS among its child
processes (picker-fetch, for picker refresh), both VmHWM polled from /proc every 5 ms
(the last few ms before a process exits can be missed); max_kb is getrusage's
RUSAGE_CHILDREN ru_maxrss, exact: the max over CMD and its reaped descendants, which is
what GNU time's %M reports. CMD's stdout and stderr are passed through; the exit status
is CMD's. Linux only.
"""
import os, resource, subprocess, sys, time


def hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def main():
    out, cmd = sys.argv[1], sys.argv[2:]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd)
    parent, kids = 0, {}
    while p.poll() is None:
        parent = max(parent, hwm(p.pid))
        for c in children(p.pid):
            kids[c] = max(kids.get(c, 0), hwm(c))
        time.sleep(0.005)
    wall = time.monotonic() - t0
    both = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(out, "w") as f:
        f.write(f"{wall:.2f} {parent} {max(kids.values(), default=0)} {both}\n")
    sys.exit(p.returncode)


if __name__ == "__main__":
    main()
