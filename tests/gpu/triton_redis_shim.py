"""Triton's own RedisRemoteCacheBackend, made to run on Triton 3.6.0, for
tests/gpu/remote.sh to compare tcfs's fleet tier with.

Triton 3.6.0's RedisRemoteCacheBackend.__init__ reads its settings from
knobs.cache.redis (host, port, key_format), but the Redis knobs are
triton.knobs.redis (TRITON_REDIS_HOST, TRITON_REDIS_PORT,
TRITON_REDIS_KEY_FORMAT) and cache_knobs has no attribute redis, so every
compile fails with AttributeError: 'cache_knobs' object has no attribute
'redis'.  Aliasing that one attribute is the whole fix; the rest is stock
Triton, round trips, missing timeouts and all.  Use:

  TRITON_CACHE_MANAGER=triton.runtime.cache:RemoteCacheManager
  TRITON_REMOTE_CACHE_BACKEND=triton_redis_shim:RedisBackend
  TRITON_REDIS_HOST=127.0.0.1 TRITON_REDIS_PORT=PORT
  PYTHONPATH=tests/gpu

Triton imports this module (knobs.cache.remote_manager_class) before it
builds the backend, so the alias is in place in time.  Where python3-redis
is not installed (the GPU machine), TCFS_GPU_PYTHON names the folder that
tests/gpu/bundle.sh copied it to (.device-bundle/python); it goes at the
end of sys.path, so that the packages installed there (packaging, wrapt)
keep their own versions and the bundle only fills in what is missing.
"""
import os
import sys

from triton import knobs
from triton.runtime.cache import RedisRemoteCacheBackend

_extra = os.environ.get("TCFS_GPU_PYTHON")
if _extra and _extra not in sys.path:
    sys.path.append(_extra)


def alias_redis_knobs():
    """knobs.cache.redis, as 3.6.0's backend reads it: the Redis knobs.
    Set on the class, so that copies of the cache knobs see it too; left
    alone where Triton has it already (a fixed release)."""
    cls = getattr(knobs, "cache_knobs", type(knobs.cache))
    if not hasattr(knobs.cache, "redis") and hasattr(knobs, "redis"):
        cls.redis = knobs.redis


alias_redis_knobs()


class RedisBackend(RedisRemoteCacheBackend):
    """Stock RedisRemoteCacheBackend, after the alias."""

    def __init__(self, key):
        alias_redis_knobs()
        super().__init__(key)
