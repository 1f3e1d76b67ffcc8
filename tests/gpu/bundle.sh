#!/usr/bin/env bash
# Pack a built executable with the shared libraries it needs (all but glibc's own) and fusermount3
# into a folder of the project checkout, so that it can travel to a GPU machine that has none of
# tcfs's libraries and run there (doc/testing.md, "Real Triton on a GPU machine").
#   tests/gpu/bundle.sh build/tools/tcfs [.device-bundle]
# Then, on the GPU machine, from the checkout:
#   export LD_LIBRARY_PATH=$PWD/.device-bundle PATH=$PWD/.device-bundle:$PATH
set -eu
exe=${1:?usage: bundle.sh EXECUTABLE [DEST]}
dest=${2:-.device-bundle}
mkdir -p "$dest"
cp -L "$exe" "$dest/"
ldd "$exe" | awk '/=> \//{print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
    *) cp -L "$lib" "$dest/" ;;
  esac
done
command -v fusermount3 >/dev/null && cp -L "$(command -v fusermount3)" "$dest/"
ls -la "$dest"
