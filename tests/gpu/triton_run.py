#!/usr/bin/env python3
"""Real Triton kernels, compiled (cold) or loaded from TRITON_CACHE_DIR (warm),
each checked against PyTorch.  Prints one JSON line: the label, how many
kernels were launched, the seconds from the first launch until all results
were checked (compile or load time: the warm start), and whether every
result was right.  Besides: launch_seconds, the time spent inside the
kernel launches alone (each first launch is where Triton looks the kernel
up in its cache and compiles or loads it, launcher module included), free
of PyTorch's own work (inputs, reference results, cuBLAS's start);
import_seconds, what importing torch and triton took; and the pid, to find
the process in `tcfs stats`."""
import json
import os
import sys
import time

_t_import = time.perf_counter()
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
IMPORT_SECONDS = time.perf_counter() - _t_import
# Seconds spent inside kernel launches (see launch()).
LAUNCH_SECONDS = 0.0


def launch(kernel, grid, *args, **kwargs):
    """kernel[grid](*args, **kwargs), its time added to LAUNCH_SECONDS: a
    launch returns once the work is queued, so what it takes is the cache
    lookup and compile or load (on a kernel's first launch) and the launch
    itself, never the kernel's run."""
    global LAUNCH_SECONDS
    t = time.perf_counter()
    kernel[grid](*args, **kwargs)
    LAUNCH_SECONDS += time.perf_counter() - t


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask)
             + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols,
                other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0),
             mask=cols < n_cols)


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


@triton.jit
def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n, eps,
                     BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n
    y = d / tl.sqrt(var + eps) * tl.load(w_ptr + cols, mask=mask) \
        + tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, y, mask=mask)


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else "run"
    dev = "cuda"
    torch.manual_seed(0)
    ok = True
    launched = 0
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for block in (256, 512, 1024, 2048):
        x = torch.rand(100_000, device=dev)
        y = torch.rand(100_000, device=dev)
        out = torch.empty_like(x)
        launch(add_kernel, (triton.cdiv(x.numel(), block),), x, y, out,
               x.numel(), BLOCK=block)
        ok &= torch.allclose(out, x + y)
        launched += 1
    for cols in (781, 1823):
        x = torch.randn(512, cols, device=dev)
        out = torch.empty_like(x)
        launch(softmax_kernel, (x.shape[0],), out, x, x.stride(0), cols,
               BLOCK=triton.next_power_of_2(cols))
        ok &= torch.allclose(out, torch.softmax(x, dim=1), atol=1e-5)
        launched += 1
    for bm, bn, bk in ((64, 64, 32), (128, 64, 32), (64, 128, 64)):
        a = torch.randn(512, 512, device=dev, dtype=torch.float16)
        b = torch.randn(512, 512, device=dev, dtype=torch.float16)
        c = torch.empty(512, 512, device=dev, dtype=torch.float16)
        launch(matmul_kernel, (512 // bm, 512 // bn), a, b, c, 512, 512, 512,
               BM=bm, BN=bn, BK=bk)
        ok &= torch.allclose(c.float(), (a @ b).float(), atol=0.5, rtol=0.02)
        launched += 1
    x = torch.randn(256, 1000, device=dev)
    w = torch.rand(1000, device=dev)
    b = torch.rand(1000, device=dev)
    y = torch.empty_like(x)
    launch(layernorm_kernel, (256,), x, y, w, b, x.stride(0), 1000, 1e-5,
           BLOCK=1024)
    ok &= torch.allclose(y, torch.nn.functional.layer_norm(x, (1000,), w, b),
                         atol=1e-4)
    launched += 1
    torch.cuda.synchronize()
    print(json.dumps({"label": label, "kernels": launched,
                      "seconds": time.perf_counter() - t0, "correct": bool(ok),
                      "triton": triton.__version__,
                      "launch_seconds": LAUNCH_SECONDS,
                      "import_seconds": IMPORT_SECONDS,
                      "pid": os.getpid()}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
