#!/usr/bin/env bash
# Pack a built executable with the shared libraries it needs (all but glibc's own) and fusermount3
# into a folder of the project checkout, so that it can travel to a GPU machine that has none of
# tcfs's libraries and run there (doc/testing.md, "Real Triton on a GPU machine").
# With them go, for tests/gpu/remote.sh, Debian's redis-server and redis-cli in DEST/redis/
# with the libraries they need that DEST lacks (run them with
# LD_LIBRARY_PATH=DEST/redis:DEST; a folder of their own keeps libsystemd and its kin out of
# the way of the programs run with LD_LIBRARY_PATH=DEST), and python3-redis with the
# pure-Python packages it imports in DEST/python/ (for PYTHONPATH).
#   tests/gpu/bundle.sh build/tools/tcfs [.device-bundle]
# Then, on the GPU machine, from the checkout:
#   export LD_LIBRARY_PATH=$PWD/.device-bundle PATH=$PWD/.device-bundle:$PATH
set -eu
exe=${1:?usage: bundle.sh EXECUTABLE [DEST]}
dest=${2:-.device-bundle}
# What python3-redis 4.3.4 imports when loaded ("import redis"): packaging
# (redis.connection), deprecated (redis.commands.json) and wrapt under it;
# async_timeout for redis.asyncio.  wrapt's C extension stays behind: it is
# built for Debian's Python, and wrapt falls back to pure Python without it.
pydeps="redis deprecated wrapt packaging async_timeout"
dist=/usr/lib/python3/dist-packages

# copy_with_libs EXE DIR [HAVE]: EXE and every library it needs but glibc's into DIR, but
# those the folder HAVE holds already, the same bytes (the bundle travels, and is big).
copy_with_libs() {
  cp -L "$1" "$2/"
  ldd "$1" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
      *) [ -n "${3:-}" ] && cmp -s "$lib" "$3/$(basename "$lib")" || cp -L "$lib" "$2/" ;;
    esac
  done
}

mkdir -p "$dest"
copy_with_libs "$exe" "$dest"
command -v fusermount3 >/dev/null && cp -L "$(command -v fusermount3)" "$dest/"

# redis-server is a link to redis-check-rdb, which picks its part by the
# name it runs under: the copy keeps the name redis-server.
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
  mkdir -p "$dest/redis"
  copy_with_libs "$(command -v redis-server)" "$dest/redis" "$dest"
  copy_with_libs "$(command -v redis-cli)" "$dest/redis" "$dest"
else
  echo "bundle.sh: no redis-server or redis-cli here (Debian redis-server, redis-tools):" \
    "tests/gpu/remote.sh will not run" >&2
fi

if [ -d "$dist/redis" ]; then
  rm -rf "$dest/python"
  mkdir -p "$dest/python"
  for p in $pydeps; do
    [ -d "$dist/$p" ] || { echo "bundle.sh: $dist/$p missing (python3-$p)" >&2; exit 1; }
    cp -r "$dist/$p" "$dest/python/"
    # Metadata, so that redis.__version__ reads 4.3.4.
    cp -r "$dist/$p"-*.*-info "$dest/python/" 2>/dev/null || true
  done
  find "$dest/python" \( -name __pycache__ -o -name '*.so' \) -prune -exec rm -rf {} +
  # Proof that it imports from the bundle alone: no site, no dist-packages.
  python3 -S -c 'import sys; sys.path[:] = [sys.argv[1]] + [p for p in sys.path
      if p and "-packages" not in p]
import redis, redis.asyncio, redis.commands.json
assert redis.__file__.startswith(sys.argv[1]), redis.__file__
print("bundled python3-redis", redis.__version__, "imports alone")' "$(cd "$dest/python" && pwd)"
else
  echo "bundle.sh: no python3-redis here: tests/gpu/remote.sh will not run" >&2
fi
ls -la "$dest" "$dest/redis" 2>/dev/null
du -sh "$dest"
