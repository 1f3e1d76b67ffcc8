#!/usr/bin/env python3
"""A small torch.compile program: a model and a compiled function, run
once, its result checked against eager.  Prints one JSON line: the label,
whether results were right, the seconds the compiled calls took, and
Inductor's cache counters (FX graph and AOTAutograd hits and misses, local
or remote: tests/gpu/inductor_remote.sh tells a hit from a compile by them).
Cache dirs come from the environment (TORCHINDUCTOR_CACHE_DIR,
TRITON_CACHE_DIR)."""
import json
import os
import sys
import time

import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(256, 512)
        self.l2 = torch.nn.Linear(512, 256)
        self.norm = torch.nn.LayerNorm(256)

    def forward(self, x):
        return self.norm(self.l2(torch.nn.functional.gelu(self.l1(x))) + x)


def fn(a, b):
    return torch.softmax(a * b + torch.sin(a), dim=-1).sum(dim=0)


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else "run"
    torch.manual_seed(0)
    dev = "cuda"
    model = MLP().to(dev)
    x = torch.randn(64, 256, device=dev)
    a = torch.randn(128, 1024, device=dev)
    b = torch.randn(128, 1024, device=dev)
    t0 = time.time()
    cm = torch.compile(model)
    cf = torch.compile(fn)
    with torch.no_grad():
        y = cm(x)
    z = cf(a, b)
    torch.cuda.synchronize()
    secs = time.time() - t0
    with torch.no_grad():
        ok = torch.allclose(y, model(x), atol=1e-3, rtol=1e-3)
    ok = ok and torch.allclose(z, fn(a, b), atol=1e-3, rtol=1e-3)
    from torch._dynamo.utils import counters
    cache = {k: v for g in ("inductor", "aot_autograd")
             for k, v in counters[g].items() if "cache" in k}
    print(json.dumps({"label": label, "correct": bool(ok),
                      "compile_and_run_seconds": secs, "counters": cache,
                      "torch": torch.__version__, "pid": os.getpid()}))


if __name__ == "__main__":
    main()
