/* kernel: metadata of every shape parses into what it holds, never fails. */
#include <errno.h>

#include "index/model/kernel.h"
#include "tap.h"

static int parse(const char *json, struct tcfs_kernel *k)
{
	memset(k, 0, sizeof(*k));
	return tcfs_kernel_parse_meta(json, strlen(json), k);
}

int main(void)
{
	struct tcfs_kernel k;
	struct tcfs_kernel_filter f = { 0 };

	parse("{\"hash\": \"4972\", \"target\": {\"backend\": \"cuda\", "
	      "\"arch\": 90, \"warp_size\": 32}, \"num_warps\": 4, "
	      "\"num_ctas\": 1, \"num_stages\": 3, \"arch\": \"sm90\", "
	      "\"triton_version\": \"3.6.0\", \"name\": \"add_kernel\"}",
	      &k);
	tap_ok(k.meta == TCFS_META_OK && !strcmp(k.backend, "cuda") &&
		       !strcmp(k.arch, "90"),
	       "CUDA target: backend cuda, numeric arch 90 as text");
	tap_ok(k.warp_size == 32 && k.num_warps == 4 && k.num_stages == 3 &&
		       k.num_ctas == 1,
	       "CUDA warp size, warps, stages, ctas");
	tap_ok(!strcmp(k.triton_version, "3.6.0"), "triton_version");

	parse("{\"target\": {\"backend\": \"hip\", \"arch\": \"gfx942\", "
	      "\"warp_size\": 64}, \"num_warps\": 8}",
	      &k);
	tap_ok(!strcmp(k.backend, "hip") && !strcmp(k.arch, "gfx942") &&
		       k.warp_size == 64 && k.num_warps == 8,
	       "AMD target with a string arch");
	tap_ok(k.num_stages == -1 && k.triton_version[0] == '\0',
	       "absent fields stay unknown");

	parse("{\"backend_name\": \"cuda\", \"arch\": \"sm80\", "
	      "\"warp_size\": 32}",
	      &k);
	tap_ok(!strcmp(k.backend, "cuda") && !strcmp(k.arch, "sm80") &&
		       k.warp_size == 32,
	       "older flat fields are used when there is no target");

	tap_eq(parse("{not json", &k), -EINVAL, "invalid JSON is EINVAL");
	tap_eq(k.meta, TCFS_META_INVALID, "and recorded as invalid");
	tap_eq(parse("[1, 2]", &k), -EINVAL, "a JSON array is not metadata");
	tap_eq(parse("{\"target\": 5, \"num_warps\": \"four\"}", &k), 0,
	       "fields of the wrong type are ignored, not fatal");
	tap_ok(k.backend[0] == '\0' && k.num_warps == -1,
	       "and left unknown");

	strcpy(k.name, "softmax_kernel");
	strcpy(k.backend, "cuda");
	strcpy(k.arch, "90");
	f.arch = "sm90";
	tap_ok(tcfs_kernel_match(&k, &f), "filter arch sm90 matches 90");
	f.arch = "sm_90";
	tap_ok(tcfs_kernel_match(&k, &f), "filter arch sm_90 matches 90");
	f.arch = "80";
	tap_ok(!tcfs_kernel_match(&k, &f), "filter arch 80 does not");
	f.arch = "cuda-90";
	tap_ok(tcfs_kernel_match(&k, &f), "filter arch cuda-90 (list's TARGET) matches");
	f.arch = "cuda-sm_90";
	tap_ok(tcfs_kernel_match(&k, &f), "filter arch cuda-sm_90 matches");
	f.arch = "hip-90";
	tap_ok(!tcfs_kernel_match(&k, &f), "filter arch hip-90 does not");
	f.arch = "cuda-80";
	tap_ok(!tcfs_kernel_match(&k, &f), "filter arch cuda-80 does not");
	f.arch = NULL;
	f.name = "softmax*";
	tap_ok(tcfs_kernel_match(&k, &f), "name glob matches");
	f.name = "add*";
	tap_ok(!tcfs_kernel_match(&k, &f), "name glob excludes");
	f.name = NULL;
	f.backend = "hip";
	tap_ok(!tcfs_kernel_match(&k, &f), "backend filter excludes");
	return tap_done();
}
