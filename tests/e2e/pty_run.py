#!/usr/bin/env python3
"""pty_run.py OUT TTY CMD...: runs CMD as from a terminal: its stderr on a
new pty, its stdout into the file OUT (or on the pty too when OUT is "-"),
stdin from /dev/null.  Everything the pty received is written to the file
TTY; exits with CMD's status."""
import os
import subprocess
import sys


def main():
    out, tty, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    master, slave = os.openpty()
    with open(os.devnull if out == "-" else out, "wb") as o:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                             stdout=slave if out == "-" else o,
                             stderr=slave)
    os.close(slave)
    got = bytearray()
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the pty
            break
        if not b:
            break
        got += b
    os.close(master)
    rc = p.wait()
    with open(tty, "wb") as t:
        t.write(got)
    sys.exit(rc)


main()
