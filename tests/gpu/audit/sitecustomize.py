"""Loaded by Python at start (PYTHONPATH): logs every file operation the
audit hooks see on paths under TCFS_AUDIT_DIR to TCFS_AUDIT_LOG, one line
each ("event path [path2]"), with the cache dir written $CACHE.  For
studying how a program uses a cache (tests/gpu/inductor_trace.sh)."""
import os
import sys

_dir = os.environ.get("TCFS_AUDIT_DIR")
_log = os.environ.get("TCFS_AUDIT_LOG")
_events = {"open", "os.rename", "os.mkdir", "os.remove", "os.rmdir",
           "os.listdir", "os.scandir", "os.link", "os.symlink", "os.chmod",
           "os.utime", "shutil.move", "shutil.copyfile", "shutil.rmtree",
           "os.truncate"}

if _dir and _log:
    _f = open(_log, "a", buffering=1)

    def _hook(event, args):
        if event not in _events or not args:
            return
        parts = []
        for a in args[:2]:
            if isinstance(a, (str, bytes, os.PathLike)):
                try:
                    p = os.fsdecode(a)
                except Exception:
                    continue
                if _dir in p:
                    parts.append(p.replace(_dir, "$CACHE"))
        if parts:
            mode = ""
            if event == "open" and len(args) > 1 and isinstance(args[1], str):
                mode = " " + args[1]
            _f.write(f"{os.getpid()} {event}{mode} {' '.join(parts)}\n")

    sys.addaudithook(_hook)
