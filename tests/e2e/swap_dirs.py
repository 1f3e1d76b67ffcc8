#!/usr/bin/env python3
"""Swaps two directories with renameat2(RENAME_EXCHANGE) as fast as it can,
until killed: the race an attacker runs against a tool that checks a path
and then opens it again (tests/e2e/bad_input.sh).

    swap_dirs.py DIR_A DIR_B
"""
import ctypes
import os
import sys

RENAME_EXCHANGE = 2
AT_FDCWD = -100


def main():
    a, b = (os.fsencode(p) for p in sys.argv[1:3])
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = libc.renameat2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                          ctypes.c_char_p, ctypes.c_uint]
    while True:
        if renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
            err = ctypes.get_errno()
            sys.exit("swap_dirs: %s" % os.strerror(err))


if __name__ == "__main__":
    main()
