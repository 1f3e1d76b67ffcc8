/* name: what a cache name is, from the name alone. */
#include "index/base/name.h"
#include <stdlib.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int all_of(const char *s, size_t n, const char *set)
{
	return strspn(s, set) == n;
}

int tcfs_name_is_key(const char *name)
{
	size_t n = strlen(name);

	switch (n) {
	case 64:
		return all_of(name, n, "0123456789abcdef");
	case 43:
		return all_of(name, n,
			      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			      "0123456789-_");
	case 52:
		return all_of(name, n, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
	default:
		return 0;
	}
}

int tcfs_name_is_temp(const char *name, int at_top)
{
	if (at_top)
		return strncmp(name, "tmp.", 4) == 0;
	return strncmp(name, "tmp.pid_", 8) == 0 ||
	       strstr(name, ".tmp.pid_") != NULL;
}

/* The length of KERNEL in name, __grp__KERNEL.json; 0 when it is not
 * one.  Sorting names asks for every pair: no copy, no strlen of a
 * suffix. */
static size_t group_kernel_len(const char *name, size_t n)
{
	static const char pre[] = "__grp__", suf[] = ".json";
	const size_t np = sizeof(pre) - 1, ns = sizeof(suf) - 1;

	if (n <= np + ns || memcmp(name, pre, np) != 0 ||
	    memcmp(name + n - ns, suf, ns) != 0)
		return 0;
	return n - np - ns;
}

int tcfs_name_group_kernel(const char *name, char *kname, size_t len)
{
	size_t k = group_kernel_len(name, strlen(name));

	if (k == 0 || k >= len)
		return 0;
	memcpy(kname, name + sizeof("__grp__") - 1, k);
	kname[k] = '\0';
	return 1;
}

enum tcfs_artifact tcfs_name_artifact(const char *name)
{
#define SUFFIX(s, kind) { s, sizeof(s) - 1, kind }
	static const struct {
		const char *suffix;
		size_t len;
		enum tcfs_artifact kind;
	} table[] = {
		SUFFIX(".autotune.json", TCFS_ART_AUTOTUNE),
		SUFFIX(".json", TCFS_ART_META),
		SUFFIX(".source", TCFS_ART_SOURCE),
		SUFFIX(".ttir", TCFS_ART_IR),
		SUFFIX(".ttgir", TCFS_ART_IR),
		SUFFIX(".llir", TCFS_ART_IR),
		SUFFIX(".ptx", TCFS_ART_IR),
		SUFFIX(".amdgcn", TCFS_ART_IR),
		SUFFIX(".cubin", TCFS_ART_BINARY),
		SUFFIX(".hsaco", TCFS_ART_BINARY),
		SUFFIX(".so", TCFS_ART_MODULE),
	};
#undef SUFFIX
	size_t n = strlen(name), k = group_kernel_len(name, n);

	/* As tcfs_name_group_kernel would find it, into a name's room. */
	if (k > 0 && k <= TCFS_NAME_MAX)
		return TCFS_ART_GROUP;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (n >= table[i].len &&
		    memcmp(name + n - table[i].len, table[i].suffix,
			   table[i].len) == 0)
			return table[i].kind;
	return TCFS_ART_OTHER;
}

enum tcfs_artifact tcfs_name_landing(const char *name)
{
	const char *tmp = strstr(name, ".tmp.pid_");
	char final[TCFS_NAME_MAX + 1];

	if (!tmp || (size_t)(tmp - name) >= sizeof(final))
		return tcfs_name_artifact(name);
	memcpy(final, name, (size_t)(tmp - name));
	final[tmp - name] = '\0';
	return tcfs_name_artifact(final);
}

int tcfs_name_check(const char *name)
{
	size_t n = strnlen(name, TCFS_NAME_MAX + 1);

	if (n > TCFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (n == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    memchr(name, '/', n))
		return -EINVAL;
	return 0;
}

int tcfs_name_cmp_commit_order(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int gx = tcfs_name_artifact(x) == TCFS_ART_GROUP;
	int gy = tcfs_name_artifact(y) == TCFS_ART_GROUP;

	return gx != gy ? gx - gy : strcmp(x, y);
}

int tcfs_name_private(const char *name, uint32_t *uid)
{
	const size_t plen = strlen(TCFS_NAME_PRIVATE_PREFIX);
	char *end;
	unsigned long v;

	if (strncmp(name, TCFS_NAME_PRIVATE_PREFIX, plen) != 0 ||
	    name[plen] < '0' || name[plen] > '9')
		return 0;
	errno = 0;
	v = strtoul(name + plen, &end, 10);
	if (*end || errno || v > UINT32_MAX)
		return 0;
	if (uid)
		*uid = (uint32_t)v;
	return 1;
}

void tcfs_name_path_as_user(char *path)
{
	char *r = path, *w = path;

	while (*r) {
		char *end = strchr(r, '/');
		size_t len = end ? (size_t)(end - r) : strlen(r);
		char part[TCFS_NAME_MAX + 1];

		snprintf(part, sizeof(part), "%.*s", (int)len, r);
		if (!tcfs_name_private(part, NULL)) {
			if (w != path)
				*w++ = '/';
			memmove(w, r, len);
			w += len;
		}
		r += len + (end != NULL);
	}
	*w = '\0';
}
