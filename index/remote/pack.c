/* pack: a dir's files as one value, and back, the value hostile. */
#include "index/remote/pack.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/err.h"
#include "index/base/text.h"

static const char magic[] = "tcfs-pack-v1\n";

int tcfs_pack_path_check(const char *path)
{
	char part[TCFS_NAME_MAX + 1];
	const char *p = path;
	int depth = 0;

	if (!*path || strlen(path) > TCFS_NAME_MAX)
		return -EINVAL;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 0 || n > TCFS_NAME_MAX || ++depth > TCFS_PACK_DEPTH)
			return -EINVAL;
		memcpy(part, p, n);
		part[n] = '\0';
		if (tcfs_name_check(part) || tcfs_name_is_temp(part, 0) ||
		    tcfs_name_private(part, NULL))
			return -EINVAL;
		p += n;
		if (*p == '/' && !*++p)
			return -EINVAL;	/* a trailing '/' */
	}
	return 0;
}

static int key_of(const char *prefix, const char *key, const char *name,
		  const char *tail, char *buf, size_t len)
{
	int n;

	if (tcfs_name_check(prefix) || strchr(prefix, ':') ||
	    tcfs_name_check(name) || tcfs_pack_path_check(key))
		return -EINVAL;
	n = snprintf(buf, len, "tcfs:%s:%s/%s%s", prefix, key, name, tail);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int tcfs_pack_key(const char *prefix, const char *key, const char *name,
		  char *buf, size_t len)
{
	return key_of(prefix, key, name, "", buf, len);
}

int tcfs_pack_sidecar_key(const char *prefix, const char *key,
			  const char *name, char *buf, size_t len)
{
	return key_of(prefix, key, name, ":tcfs", buf, len);
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct tcfs_pack_file *)a)->path,
		      ((const struct tcfs_pack_file *)b)->path);
}

int tcfs_pack_render(struct tcfs_pack_file *files, size_t n, char **out,
		     size_t *len)
{
	struct tcfs_text o = { 0 };
	char line[TCFS_NAME_MAX + 64];

	if (n > TCFS_PACK_FILES_MAX)
		return -E2BIG;
	qsort(files, n, sizeof(*files), by_path);
	for (size_t i = 0; i < n; i++)
		if (tcfs_pack_path_check(files[i].path) ||
		    (i && strcmp(files[i - 1].path, files[i].path) == 0))
			return tcfs_err_set(-EINVAL, "pack: '%s': not a path "
					    "a pack may hold, or twice",
					    files[i].path);
	tcfs_text_str(&o, magic);
	snprintf(line, sizeof(line), "%zu\n", n);
	tcfs_text_str(&o, line);
	for (size_t i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "%zu:%s %zu\n",
			 strlen(files[i].path), files[i].path, files[i].len);
		tcfs_text_str(&o, line);
	}
	for (size_t i = 0; i < n; i++)
		tcfs_text_add(&o, files[i].bytes, files[i].len);
	if (o.err) {
		free(o.p);
		return o.err;
	}
	*out = o.p;
	*len = o.len;
	return 0;
}

/* A decimal number at buf[*at] ending in end, at most max: 0 or -1. */
static int number(const char *buf, size_t len, size_t *at, char end,
		  uint64_t max, uint64_t *v)
{
	size_t i = *at;

	*v = 0;
	if (i >= len || buf[i] < '0' || buf[i] > '9' ||
	    (buf[i] == '0' && i + 1 < len && buf[i + 1] != end))
		return -1;
	for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
		if (*v > (max - (uint64_t)(buf[i] - '0')) / 10)
			return -1;
		*v = *v * 10 + (uint64_t)(buf[i] - '0');
	}
	if (i >= len || buf[i] != end)
		return -1;
	*at = i + 1;
	return 0;
}

/* Line i of the head, at buf[*at], into f (its path copied to path). */
static int head_line(const char *buf, size_t len, size_t *at,
		     struct tcfs_pack_file *f, char *path)
{
	uint64_t plen, size;

	if (number(buf, len, at, ':', TCFS_NAME_MAX, &plen) ||
	    len - *at < plen)
		return -1;
	memcpy(path, buf + *at, plen);
	path[plen] = '\0';
	*at += plen;
	if (*at >= len || buf[(*at)++] != ' ' ||
	    number(buf, len, at, '\n', len, &size) ||
	    strlen(path) != plen || tcfs_pack_path_check(path))
		return -1;
	f->path = path;
	f->len = size;
	return 0;
}

int tcfs_pack_parse(const char *buf, size_t len, struct tcfs_pack_file **files,
		    char **paths, size_t *n)
{
	struct tcfs_pack_file *f = NULL;
	char *p = NULL;
	size_t at = sizeof(magic) - 1;
	uint64_t count = 0, total = 0;

	*files = NULL;
	*paths = NULL;
	*n = 0;
	if (len < at || memcmp(buf, magic, at) ||
	    number(buf, len, &at, '\n', TCFS_PACK_FILES_MAX, &count))
		return tcfs_err_set(-EBADMSG, "not a tcfs pack");
	f = calloc(count ? count : 1, sizeof(*f));
	p = malloc((count ? count : 1) * (TCFS_NAME_MAX + 1));
	if (!f || !p) {
		free(f);
		free(p);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		char *path = p + i * (TCFS_NAME_MAX + 1);

		if (head_line(buf, len, &at, &f[i], path) ||
		    (i && strcmp(f[i - 1].path, path) >= 0)) {
			free(f);
			free(p);
			return tcfs_err_set(-EBADMSG, "pack: file %zu of %llu:"
					    " a bad line, or not in order", i,
					    (unsigned long long)count);
		}
		total += f[i].len;
	}
	if (total != len - at) {
		free(f);
		free(p);
		return tcfs_err_set(-EBADMSG, "pack: %llu bytes of files, "
				    "%zu left", (unsigned long long)total,
				    len - at);
	}
	for (size_t i = 0; i < count; i++) {
		f[i].bytes = buf + at;
		at += f[i].len;
	}
	*files = f;
	*paths = p;
	*n = count;
	return 0;
}
