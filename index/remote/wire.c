/* wire: a kernel's values in Redis, rendered byte for byte as Triton's
 * json.dumps renders them, and read back as the hostile bytes they are. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "index/base/err.h"
#include "index/base/utf8.h"
#include "index/remote/wire.h"

#include "index/base/text.h"

/* The largest size a sidecar may state: what a JSON number (a double)
 * holds exactly. */
#define SIZE_MAX_JSON (UINT64_C(1) << 53)

int tcfs_wire_group_file(const char *name, char *buf, size_t len)
{
	int n;

	if (tcfs_name_check(name) == -EINVAL)
		return -EINVAL;
	n = snprintf(buf, len, "__grp__%s.json", name);
	return n < 0 || (size_t)n >= len || n > TCFS_NAME_MAX ? -ENAMETOOLONG
							      : 0;
}

int tcfs_wire_sidecar_file(const char *name_or_file, char *buf, size_t len)
{
	int n;

	if (tcfs_name_check(name_or_file) == -EINVAL)
		return -EINVAL;
	n = snprintf(buf, len, "__tcfs__%s.json", name_or_file);
	return n < 0 || (size_t)n >= len || n > TCFS_NAME_MAX ? -ENAMETOOLONG
							      : 0;
}

/* A growing text; err sticks at the first failure, so callers append
 * without checking and look once at the end. */
/* Hands o's text to the caller, or frees it on error. */
static int out_take(struct tcfs_text *o, const char *what, char **text,
		    size_t *len)
{
	if (o->err) {
		free(o->p);
		if (o->err == -E2BIG)
			return tcfs_err_set(-E2BIG, "%s: over %zu bytes", what,
					    o->max);
		if (o->err == -EILSEQ)
			return tcfs_err_set(-EILSEQ, "%s: a name that is not "
					    "UTF-8", what);
		return o->err;
	}
	*text = o->p;
	*len = o->len;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int tcfs_wire_group_render(const struct tcfs_wire_names *names, char **out,
			   size_t *len)
{
	const char *sorted[TCFS_WIRE_FILES_MAX];
	struct tcfs_text o = { .max = TCFS_WIRE_JSON_MAX };

	assert(names->n <= TCFS_WIRE_FILES_MAX);
	for (size_t i = 0; i < names->n; i++)
		sorted[i] = names->name[i];
	/* Python sorts str by code point; strcmp orders UTF-8 alike. */
	qsort(sorted, names->n, sizeof(*sorted), cmp_str);
	tcfs_text_str(&o, "{\"child_paths\": [");
	for (size_t i = 0; i < names->n; i++) {
		if (i)
			tcfs_text_str(&o, ", ");
		tcfs_text_pystr(&o, sorted[i]);
	}
	tcfs_text_str(&o, "]}");
	return out_take(&o, "group file", out, len);
}

/* 1 when s is UTF-8 throughout: what json.loads would have decoded. */
static int is_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned cp;
		size_t n = *p < 0x80 ? 1 : tcfs_utf8_next(p, &cp);

		if (n == 0)
			return 0;
		p += n;
	}
	return 1;
}

/* 1 when a string of the text escapes a NUL ("\u0000"): cJSON would
 * cut the name short there, and a shorter name than the writer's must
 * never be taken for it. */
static int escapes_nul(const char *s, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] == 'u' && i + 6 <= len &&
		    memcmp(s + i + 2, "0000", 4) == 0)
			return 1;
		i++;	/* the escaped character, maybe a backslash */
	}
	return 0;
}

/* Parses a whole value of len bytes, at most max (nothing after it but
 * blanks), into
 * *doc (the caller's, cJSON_Delete).  0, -EBADMSG or -ENOMEM. */
static int json_load(const char *json, size_t len, size_t max,
		     const char *what, cJSON **doc)
{
	const char *end = NULL;
	char *text;

	*doc = NULL;
	if (len > max)
		return tcfs_err_set(-EBADMSG, "%s: %zu bytes, over %zu", what,
				    len, max);
	if (memchr(json, '\0', len) || escapes_nul(json, len))
		return tcfs_err_set(-EBADMSG, "%s: holds a NUL", what);
	/* A copy that ends in a NUL: cJSON reads strings up to one. */
	text = malloc(len + 1);
	if (!text)
		return -ENOMEM;
	memcpy(text, json, len);
	text[len] = '\0';
	*doc = cJSON_ParseWithOpts(text, &end, 0);
	if (*doc && end[strspn(end, " \t\r\n")] != '\0') {
		cJSON_Delete(*doc);
		*doc = NULL;
	}
	free(text);
	if (!*doc)
		return tcfs_err_set(-EBADMSG, "%s: not one JSON value", what);
	return 0;
}

/* A file name as a group or sidecar may give it: plain and UTF-8. */
static int name_ok(const char *name, const char *what)
{
	char show[TCFS_UTF8_SHOW_MAX];

	if (tcfs_name_check(name) == 0 && is_utf8(name))
		return 0;
	tcfs_utf8_printable(name, show, sizeof(show));
	return tcfs_err_set(-EBADMSG, "%s: '%s' is not a plain file name",
			    what, show);
}

/* A name a key dir gives another meaning than a kernel's file: landed as
 * a child, it would be another kernel's group file (with whatever paths
 * its writer chose), a sidecar, or a write cut off that the mount
 * sweeps.  No Triton writes a group naming one. */
static int child_reserved(const char *name)
{
	return tcfs_name_artifact(name) == TCFS_ART_GROUP ||
	       strncmp(name, "__grp__", 7) == 0 ||
	       strncmp(name, "__tcfs__", 8) == 0 ||
	       tcfs_name_is_temp(name, 0);
}

/* Adds one child c of a group's child_paths (an array's string, or an
 * object's member whose value is a path string) to out. */
static int group_child(const cJSON *c, int obj, struct tcfs_wire_names *out)
{
	const char *name = obj ? c->string : c->valuestring;
	char show[TCFS_UTF8_SHOW_MAX];
	int rc;

	if (!cJSON_IsString(c))
		return tcfs_err_set(-EBADMSG, "group file: a child that is "
				    "not a string");
	if (out->n == TCFS_WIRE_FILES_MAX)
		return tcfs_err_set(-EBADMSG, "group file: over %d children",
				    TCFS_WIRE_FILES_MAX);
	rc = name_ok(name, "group file");
	if (rc < 0)
		return rc;
	if (child_reserved(name))
		return tcfs_err_set(-EBADMSG, "group file: a child named '%s',"
				    " a group file, sidecar or temp name",
				    tcfs_utf8_printable(name, show,
							sizeof(show)));
	for (size_t i = 0; i < out->n; i++)
		if (strcmp(out->name[i], name) == 0)
			return tcfs_err_set(-EBADMSG, "group file: '%s' twice",
					    tcfs_utf8_printable(name, show,
								sizeof(show)));
	snprintf(out->name[out->n++], sizeof(out->name[0]), "%s", name);
	return 0;
}

int tcfs_wire_group_parse(const char *json, size_t len,
			  struct tcfs_wire_names *out)
{
	const cJSON *cp = NULL;
	cJSON *doc;
	int rc;

	out->n = 0;
	rc = json_load(json, len, TCFS_WIRE_JSON_MAX, "group file", &doc);
	if (rc < 0)
		return rc;
	/* Exactly one member: a second child_paths would be read by
	 * Python (the last wins) and cJSON (the first) differently. */
	if (cJSON_IsObject(doc) && doc->child && !doc->child->next &&
	    strcmp(doc->child->string, "child_paths") == 0)
		cp = doc->child;
	if (!cJSON_IsArray(cp) && !cJSON_IsObject(cp))
		rc = tcfs_err_set(-EBADMSG, "group file: not "
				  "{\"child_paths\": [NAMES]} nor "
				  "{\"child_paths\": {NAME: PATH}}");
	for (const cJSON *c = cp ? cp->child : NULL; rc == 0 && c; c = c->next)
		rc = group_child(c, cJSON_IsObject(cp), out);
	cJSON_Delete(doc);
	if (rc < 0)
		out->n = 0;
	return rc;
}

const struct tcfs_sidecar_file *tcfs_sidecar_find(const struct tcfs_sidecar *sc,
						  const char *name)
{
	for (size_t i = 0; i < sc->n; i++)
		if (strcmp(sc->f[i].name, name) == 0)
			return &sc->f[i];
	return NULL;
}

static int sha256(const void *bytes, size_t len, unsigned char md[32])
{
	return EVP_Digest(bytes, len, md, NULL, EVP_sha256(), NULL) == 1
		       ? 0
		       : -ENOMEM;
}

int tcfs_sidecar_add(struct tcfs_sidecar *sc, const char *name,
		     const void *bytes, size_t len)
{
	struct tcfs_sidecar_file *f;
	int rc;

	assert(sc->n <= TCFS_WIRE_FILES_MAX + 1);
	if (strlen(name) > TCFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (sc->n == TCFS_WIRE_FILES_MAX + 1)
		return -E2BIG;
	if (tcfs_sidecar_find(sc, name))
		return -EEXIST;
	f = &sc->f[sc->n];
	rc = sha256(bytes, len, f->sha256);
	if (rc < 0)
		return rc;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->size = len;
	sc->n++;
	return 0;
}

static void hex(const unsigned char *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static int cmp_file(const void *a, const void *b)
{
	const struct tcfs_sidecar_file *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/* sc's files in name order, into sorted (sc->n entries). */
static void sort_files(const struct tcfs_sidecar *sc,
		       const struct tcfs_sidecar_file **sorted)
{
	assert(sc->n <= TCFS_WIRE_FILES_MAX + 1);
	for (size_t i = 0; i < sc->n; i++)
		sorted[i] = &sc->f[i];
	qsort(sorted, sc->n, sizeof(*sorted), cmp_file);
}

/* Appends "LEN:BYTES" to o: a length first, so no name, whatever bytes
 * it holds, can pass for another line of the text. */
static void out_counted(struct tcfs_text *o, const char *s)
{
	char n[24];

	snprintf(n, sizeof(n), "%zu:", strlen(s));
	tcfs_text_str(o, n);
	tcfs_text_str(o, s);
}

void tcfs_sidecar_release(struct tcfs_sidecar *sc)
{
	struct tcfs_sidecar_inputs *in = sc->inputs;

	if (!in)
		return;
	for (size_t i = 0; i < in->n; i++) {
		free(in->v[i].name);
		free(in->v[i].hash);
	}
	free(in->v);
	free(in);
	sc->inputs = NULL;
}

/* A name or hash an input may be: not empty, bounded, no NUL (the text
 * is a C string on every side). */
static int input_ok(const char *s, size_t len, size_t max)
{
	return len > 0 && len <= max && !memchr(s, '\0', len) ? 0 : -EINVAL;
}

/* Room for one more input in sc, its array created on first use. */
static int inputs_grow(struct tcfs_sidecar *sc)
{
	struct tcfs_sidecar_inputs *in = sc->inputs;
	struct tcfs_sidecar_input *v;
	size_t cap;

	if (!in && !(in = sc->inputs = calloc(1, sizeof(*in))))
		return -ENOMEM;
	if (in->n == TCFS_WIRE_INPUTS_MAX)
		return -E2BIG;
	if (in->n < in->cap)
		return 0;
	cap = in->cap ? 2 * in->cap : 64;
	v = realloc(in->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	in->v = v;
	in->cap = cap;
	return 0;
}

int tcfs_sidecar_input_add(struct tcfs_sidecar *sc, const char *name,
			   size_t nlen, const char *hash, size_t hlen)
{
	struct tcfs_sidecar_input *e;
	int rc;

	if (input_ok(name, nlen, TCFS_WIRE_INPUT_NAME_MAX) < 0 ||
	    input_ok(hash, hlen, TCFS_WIRE_INPUT_HASH_MAX) < 0)
		return -EINVAL;
	rc = inputs_grow(sc);
	if (rc < 0)
		return rc;
	e = &sc->inputs->v[sc->inputs->n];
	e->name = strndup(name, nlen);
	e->hash = strndup(hash, hlen);
	if (!e->name || !e->hash) {
		free(e->name);
		free(e->hash);
		return -ENOMEM;
	}
	sc->inputs->n++;
	return 0;
}

/* The inputs' lines of the signed text; none without inputs, so that
 * every sidecar signed before inputs existed still verifies. */
static void out_inputs_signed(struct tcfs_text *o,
			      const struct tcfs_sidecar_inputs *in)
{
	char line[40];

	if (!in || in->n == 0)
		return;
	snprintf(line, sizeof(line), "inputs %zu\n", in->n);
	tcfs_text_str(o, line);
	for (size_t i = 0; i < in->n; i++) {
		out_counted(o, in->v[i].name);
		tcfs_text_str(o, " ");
		out_counted(o, in->v[i].hash);
		tcfs_text_str(o, "\n");
	}
}

int tcfs_sidecar_signed_text(const struct tcfs_sidecar *sc, char **text,
			     size_t *len)
{
	const struct tcfs_sidecar_file *sorted[TCFS_WIRE_FILES_MAX + 1];
	struct tcfs_text o = { .max = TCFS_WIRE_SIDECAR_MAX };
	char line[96], h[65];

	sort_files(sc, sorted);
	tcfs_text_str(&o, "tcfs-sidecar-v1\nkey ");
	out_counted(&o, sc->key);
	tcfs_text_str(&o, "\nname ");
	out_counted(&o, sc->name);
	snprintf(line, sizeof(line), "\nkind %s\nfiles %zu\n",
		 sc->group ? "group" : "file", sc->n);
	tcfs_text_str(&o, line);
	for (size_t i = 0; i < sc->n; i++) {
		hex(sorted[i]->sha256, 32, h);
		out_counted(&o, sorted[i]->name);
		snprintf(line, sizeof(line), " %" PRIu64 " %s\n",
			 sorted[i]->size, h);
		tcfs_text_str(&o, line);
	}
	out_inputs_signed(&o, sc->inputs);
	return out_take(&o, "sidecar", text, len);
}

/* HMAC-SHA256 of sc's signed text with key. */
static int sign(const struct tcfs_sidecar *sc, const unsigned char *key,
		size_t klen, unsigned char md[32])
{
	unsigned int mdlen = 0;
	char *text;
	size_t len;
	int rc;

	assert(klen > 0 && klen <= INT_MAX);
	rc = tcfs_sidecar_signed_text(sc, &text, &len);
	if (rc < 0)
		return rc;
	if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)text,
		  len, md, &mdlen) ||
	    mdlen != 32)
		rc = -ENOMEM;
	free(text);
	return rc;
}

/* One {"name": F, "size": N, "sha256": HEX} of the files list. */
static void out_file(struct tcfs_text *o, const struct tcfs_sidecar_file *f)
{
	char line[120], h[65];

	hex(f->sha256, 32, h);
	tcfs_text_str(o, "{\"name\": ");
	tcfs_text_pystr(o, f->name);
	snprintf(line, sizeof(line), ", \"size\": %" PRIu64
		 ", \"sha256\": \"%s\"}", f->size, h);
	tcfs_text_str(o, line);
}

/* , "inputs": [[NAME, HASH], ...], when sc has inputs. */
static void out_inputs(struct tcfs_text *o,
		       const struct tcfs_sidecar_inputs *in)
{
	if (!in || in->n == 0)
		return;
	tcfs_text_str(o, ", \"inputs\": [");
	for (size_t i = 0; i < in->n; i++) {
		tcfs_text_str(o, i ? ", [" : "[");
		tcfs_text_pystr(o, in->v[i].name);
		tcfs_text_str(o, ", ");
		tcfs_text_pystr(o, in->v[i].hash);
		tcfs_text_str(o, "]");
	}
	tcfs_text_str(o, "]");
}

int tcfs_sidecar_render(const struct tcfs_sidecar *sc,
			const unsigned char *key, size_t klen, char **out,
			size_t *len)
{
	const struct tcfs_sidecar_file *sorted[TCFS_WIRE_FILES_MAX + 1];
	struct tcfs_text o = { .max = TCFS_WIRE_SIDECAR_MAX };
	unsigned char md[32];
	char h[65];
	int rc;

	sort_files(sc, sorted);
	tcfs_text_str(&o, "{\"tcfs\": 1, \"key\": ");
	tcfs_text_pystr(&o, sc->key);
	tcfs_text_str(&o, ", \"name\": ");
	tcfs_text_pystr(&o, sc->name);
	tcfs_text_str(&o, sc->group ? ", \"kind\": \"group\", \"files\": ["
			      : ", \"kind\": \"file\", \"files\": [");
	for (size_t i = 0; i < sc->n; i++) {
		if (i)
			tcfs_text_str(&o, ", ");
		out_file(&o, sorted[i]);
	}
	tcfs_text_str(&o, "]");
	out_inputs(&o, sc->inputs);
	if (klen > 0 && !o.err) {
		rc = sign(sc, key, klen, md);
		if (rc < 0)
			o.err = rc;
		hex(md, sizeof(md), h);
		tcfs_text_str(&o, ", \"hmac\": \"");
		tcfs_text_str(&o, h);
		tcfs_text_str(&o, "\"");
	}
	tcfs_text_str(&o, "}");
	return out_take(&o, "sidecar", out, len);
}

/* Collects obj's members named in names (count of them) into m, each at
 * most once, no other: a member twice would be read differently by two
 * parsers, one unknown means another writer than this version. */
static int members(const cJSON *obj, const char *const *names, size_t count,
		   const cJSON **m, const char *what)
{
	char show[TCFS_UTF8_SHOW_MAX];

	if (!cJSON_IsObject(obj))
		return tcfs_err_set(-EBADMSG, "%s: not an object", what);
	memset(m, 0, count * sizeof(*m));
	for (const cJSON *c = obj->child; c; c = c->next) {
		size_t i = 0;

		while (i < count && strcmp(c->string, names[i]) != 0)
			i++;
		if (i == count || m[i])
			return tcfs_err_set(-EBADMSG, "%s: member '%s' %s",
					    what,
					    tcfs_utf8_printable(c->string, show,
								sizeof(show)),
					    i == count ? "unknown" : "twice");
		m[i] = c;
	}
	return 0;
}

/* Exactly 2 * n lowercase hex digits into b. */
static int unhex(const char *s, unsigned char *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < 2 * n; i++) {
		const char *d = s[i] ? strchr(digits, s[i]) : NULL;

		if (!d)
			return -1;
		if (i % 2 == 0)
			b[i / 2] = (unsigned char)((d - digits) << 4);
		else
			b[i / 2] |= (unsigned char)(d - digits);
	}
	return 0;
}

/* One entry of "files", checked and added to sc. */
static int sidecar_file(const cJSON *o, struct tcfs_sidecar *sc)
{
	static const char *const names[] = { "name", "size", "sha256" };
	const cJSON *m[3];
	struct tcfs_sidecar_file *f = &sc->f[sc->n];
	double size;
	int rc;

	if (sc->n == TCFS_WIRE_FILES_MAX + 1)
		return tcfs_err_set(-EBADMSG, "over %d files",
				    TCFS_WIRE_FILES_MAX + 1);
	rc = members(o, names, 3, m, "a file");
	if (rc < 0)
		return rc;
	if (!cJSON_IsString(m[0]) || !cJSON_IsNumber(m[1]) ||
	    !cJSON_IsString(m[2]))
		return tcfs_err_set(-EBADMSG, "a file without a name, size "
				    "and sha256");
	rc = name_ok(m[0]->valuestring, "a file");
	if (rc < 0)
		return rc;
	if (tcfs_sidecar_find(sc, m[0]->valuestring))
		return tcfs_err_set(-EBADMSG, "a file listed twice");
	size = m[1]->valuedouble;
	if (!(size >= 0 && size <= (double)SIZE_MAX_JSON) ||
	    (double)(uint64_t)size != size)
		return tcfs_err_set(-EBADMSG, "a size that is not a whole "
				    "number of bytes");
	if (unhex(m[2]->valuestring, f->sha256, 32) < 0)
		return tcfs_err_set(-EBADMSG, "a sha256 that is not 64 "
				    "lowercase hex digits");
	snprintf(f->name, sizeof(f->name), "%s", m[0]->valuestring);
	f->size = (uint64_t)size;
	sc->n++;
	return 0;
}

/* What a sidecar's own fields must say: the version, key and name the
 * caller asked for, and a kind. */
static int sidecar_head(const cJSON *const *m, const char *key,
			const char *name, struct tcfs_sidecar *out)
{
	if (!cJSON_IsNumber(m[0]) || m[0]->valuedouble != 1)
		return tcfs_err_set(-EBADMSG, "not a tcfs sidecar of "
				    "version 1");
	if (!cJSON_IsString(m[1]) || strcmp(m[1]->valuestring, key) != 0)
		return tcfs_err_set(-EBADMSG, "names another key");
	if (!cJSON_IsString(m[2]) ||
	    (name ? strcmp(m[2]->valuestring, name) != 0
		  : name_ok(m[2]->valuestring, "its name") < 0))
		return tcfs_err_set(-EBADMSG, "names another kernel or file");
	if (!cJSON_IsString(m[3]) || (strcmp(m[3]->valuestring, "group") &&
				      strcmp(m[3]->valuestring, "file")))
		return tcfs_err_set(-EBADMSG, "kind is not group nor file");
	if (!cJSON_IsArray(m[4]))
		return tcfs_err_set(-EBADMSG, "no list of files");
	if (m[5] && (!cJSON_IsString(m[5]) ||
		     unhex(m[5]->valuestring, out->hmac, 32) < 0))
		return tcfs_err_set(-EBADMSG, "an hmac that is not 64 "
				    "lowercase hex digits");
	snprintf(out->key, sizeof(out->key), "%s", key);
	snprintf(out->name, sizeof(out->name), "%s", m[2]->valuestring);
	out->group = strcmp(m[3]->valuestring, "group") == 0;
	out->has_hmac = m[5] != NULL;
	return 0;
}

/* A group's sidecar lists its group file; a file's, that file alone. */
static int sidecar_whole(const struct tcfs_sidecar *sc)
{
	char grp[TCFS_NAME_MAX + 1];

	if (!sc->group)
		return sc->n == 1 && strcmp(sc->f[0].name, sc->name) == 0
			       ? 0
			       : tcfs_err_set(-EBADMSG, "lists other files "
					      "than its one file");
	if (tcfs_wire_group_file(sc->name, grp, sizeof(grp)) < 0 ||
	    !tcfs_sidecar_find(sc, grp))
		return tcfs_err_set(-EBADMSG, "does not list its group file");
	return 0;
}

/* The "inputs" member: a non-empty list of [NAME, HASH] string pairs,
 * bounded as tcfs_sidecar_input_add bounds them. */
static int sidecar_inputs(const cJSON *list, struct tcfs_sidecar *sc)
{
	int rc;

	if (!cJSON_IsArray(list) || !list->child)
		return tcfs_err_set(-EBADMSG, "inputs is not a list of "
				    "pairs");
	for (const cJSON *c = list->child; c; c = c->next) {
		const cJSON *n = cJSON_IsArray(c) ? c->child : NULL;
		const cJSON *h = n ? n->next : NULL;

		if (!cJSON_IsString(n) || !cJSON_IsString(h) || h->next)
			return tcfs_err_set(-EBADMSG, "an input that is not "
					    "a [name, hash] pair");
		rc = tcfs_sidecar_input_add(sc, n->valuestring,
					    strlen(n->valuestring),
					    h->valuestring,
					    strlen(h->valuestring));
		if (rc == -ENOMEM)
			return rc;
		if (rc == -E2BIG)
			return tcfs_err_set(-EBADMSG, "over %d inputs",
					    TCFS_WIRE_INPUTS_MAX);
		if (rc < 0)
			return tcfs_err_set(-EBADMSG, "an input's name or "
					    "hash empty or too long");
	}
	return 0;
}

int tcfs_sidecar_parse(const char *json, size_t len, const char *key,
		       const char *name, struct tcfs_sidecar *out)
{
	static const char *const names[] = { "tcfs", "key", "name", "kind",
					     "files", "hmac", "inputs" };
	char what[2 * TCFS_UTF8_SHOW_MAX + 16], k[TCFS_UTF8_SHOW_MAX];
	char n[TCFS_UTF8_SHOW_MAX];
	const cJSON *m[7];
	cJSON *doc;
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(what, sizeof(what), "sidecar of %s/%s",
		 tcfs_utf8_printable(key, k, sizeof(k)),
		 tcfs_utf8_printable(name ? name : "*", n, sizeof(n)));
	rc = json_load(json, len, TCFS_WIRE_SIDECAR_MAX, what, &doc);
	if (rc < 0)
		return rc;
	rc = members(doc, names, 7, m, what);
	if (rc < 0)
		goto out;
	rc = sidecar_head(m, key, name, out);
	for (const cJSON *c = rc ? NULL : m[4]->child; c && rc == 0;
	     c = c->next)
		rc = sidecar_file(c, out);
	if (rc == 0)
		rc = sidecar_whole(out);
	if (rc == 0 && m[6])
		rc = sidecar_inputs(m[6], out);
	if (rc < 0)
		rc = tcfs_err_prefix(rc, "%s", what);
out:
	cJSON_Delete(doc);
	if (rc < 0) {
		tcfs_sidecar_release(out);
		memset(out, 0, sizeof(*out));
	}
	return rc;
}

int tcfs_sidecar_verify(const struct tcfs_sidecar *sc,
			const unsigned char *key, size_t klen)
{
	char show[TCFS_UTF8_SHOW_MAX];
	unsigned char md[32];
	int rc;

	tcfs_utf8_printable(sc->name, show, sizeof(show));
	if (!sc->has_hmac)
		return tcfs_err_set(-EPERM, "sidecar of %s/%s: not signed",
				    sc->key, show);
	if (klen == 0)
		return tcfs_err_set(-EPERM, "sidecar of %s/%s: no key to "
				    "check its signature with",
				    sc->key, show);
	rc = sign(sc, key, klen, md);
	if (rc < 0)
		return rc;
	/* In constant time: how much of a forged HMAC matches must not
	 * show in how long the check takes. */
	if (CRYPTO_memcmp(md, sc->hmac, sizeof(md)) != 0)
		return tcfs_err_set(-EPERM, "sidecar of %s/%s: signed with "
				    "another key, or changed since",
				    sc->key, show);
	return 0;
}

int tcfs_sidecar_check(const struct tcfs_sidecar *sc, const char *name,
		       const void *bytes, size_t len)
{
	const struct tcfs_sidecar_file *f = tcfs_sidecar_find(sc, name);
	char show[TCFS_UTF8_SHOW_MAX];
	unsigned char md[32];
	int rc;

	tcfs_utf8_printable(name, show, sizeof(show));
	if (!f)
		return tcfs_err_set(-EBADMSG, "%s/%s: not in the sidecar",
				    sc->key, show);
	if (f->size != len)
		return tcfs_err_set(-EBADMSG, "%s/%s: %zu bytes, the sidecar "
				    "says %" PRIu64, sc->key, show, len,
				    f->size);
	rc = sha256(bytes, len, md);
	if (rc < 0)
		return rc;
	if (memcmp(md, f->sha256, sizeof(md)) != 0)
		return tcfs_err_set(-EBADMSG, "%s/%s: its SHA-256 is not the "
				    "sidecar's", sc->key, show);
	return 0;
}
