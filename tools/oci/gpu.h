/*
 * gpu: the GPUs of this machine as Triton targets (backend, arch, warp
 * size), asked of nvidia-smi and rocminfo, so that tcfs unpack can say
 * which kernels of an image will load here.
 */
#ifndef TCFS_TOOLS_GPU_H
#define TCFS_TOOLS_GPU_H

#include <stddef.h>

#include "mcv.h"

/* The targets present, distinct, appended to out (n 0 when no GPU was
 * found).  $TCFS_GPUS, when set, is taken instead
 * ("cuda:90:32,hip:gfx942:64"; "" for none): for machines whose tools
 * cannot be run, and for tests. */
int gpu_detect(struct mcv_targets *out);

/* "cuda 90 (warp 32), hip gfx942 (warp 64)" into buf. */
void gpu_describe(const struct mcv_targets *t, char *buf, size_t len);

#endif
