/*
 * gpu: the GPUs present, from nvidia-smi and rocminfo (gpu.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

static int add(struct mcv_targets *out, const char *backend, const char *arch,
	       int64_t warp)
{
	struct mcv_target t = { .warp_size = warp };

	snprintf(t.backend, sizeof(t.backend), "%s", backend);
	snprintf(t.arch, sizeof(t.arch), "%s", arch);
	return mcv_targets_add(out, &t);
}

/* "cuda:90:32,hip:gfx942:64" */
static int from_env(const char *spec, struct mcv_targets *out)
{
	char *copy = strdup(spec), *save = NULL;
	int rc = copy ? 0 : -ENOMEM;

	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; rc == 0 && t;
	     t = strtok_r(NULL, ",", &save)) {
		char backend[32], arch[32];
		long long warp;

		if (sscanf(t, "%31[^:]:%31[^:]:%lld", backend, arch, &warp) == 3)
			rc = add(out, backend, arch, warp);
	}
	free(copy);
	return rc;
}

/* Runs cmd (no shell input of ours in it) and hands each line to fn. */
static int each_line(const char *cmd, int (*fn)(const char *line, void *ctx),
		     void *ctx)
{
	FILE *p = popen(cmd, "re");
	char line[512];
	int rc = 0;

	if (!p)
		return 0;
	while (rc == 0 && fgets(line, sizeof(line), p))
		rc = fn(line, ctx);
	pclose(p);
	return rc;
}

struct found {
	struct mcv_targets *out;
	char arch[32];		/* rocminfo: the agent's gfx name */
};

/* nvidia-smi's compute capability, "9.0": Triton's arch 90, warps of 32. */
static int nvidia_line(const char *line, void *ctx)
{
	struct found *f = ctx;
	int major, minor;
	char arch[16];

	if (sscanf(line, "%d.%d", &major, &minor) != 2)
		return 0;
	snprintf(arch, sizeof(arch), "%d", major * 10 + minor);
	return add(f->out, "cuda", arch, 32);
}

/* rocminfo: an agent's "Name: gfx942", then its "Wavefront Size: 64". */
static int rocm_line(const char *line, void *ctx)
{
	struct found *f = ctx;
	const char *g = strstr(line, "gfx");
	long long warp;

	if (strstr(line, "Name:") && g) {
		snprintf(f->arch, sizeof(f->arch), "%.*s",
			 (int)strcspn(g, " \t\n"), g);
		return 0;
	}
	if (f->arch[0] &&
	    sscanf(line, " Wavefront Size: %lld", &warp) == 1) {
		int rc = add(f->out, "hip", f->arch, warp);

		f->arch[0] = '\0';
		return rc;
	}
	return 0;
}

int gpu_detect(struct mcv_targets *out)
{
	const char *env = getenv("TCFS_GPUS");
	struct found f = { out, "" };
	int rc;

	if (env)
		return from_env(env, out);
	rc = each_line("nvidia-smi --query-gpu=compute_cap --format=csv,noheader"
		       " 2>/dev/null",
		       nvidia_line, &f);
	if (rc == 0)
		rc = each_line("rocminfo 2>/dev/null", rocm_line, &f);
	return rc;
}

void gpu_describe(const struct mcv_targets *l, char *buf, size_t len)
{
	const struct mcv_target *t = l->v;
	const size_t n = l->n;
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used,
				 "%s%s %s (warp %" PRId64 ")", i ? ", " : "",
				 t[i].backend, t[i].arch, t[i].warp_size);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}
