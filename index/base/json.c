/* json: strings of a cJSON tree made valid UTF-8 before it is printed,
 * and objects written straight to a stream as cJSON would print them. */
#include "index/base/json.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/text.h"
#include "index/base/utf8.h"

/* A copy of s with each byte that starts no UTF-8 sequence written as
 * \xNN; NULL when s needs none (or memory ran out: *rc says which). */
static char *valid_copy(const char *s, int *rc)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t bad = 0, n = 0;
	char *out, *o;

	*rc = 0;
	/* Nearly every string is ASCII, which needs no decoding. */
	while (p[n] && p[n] < 0x80)
		n++;
	while (p[n]) {
		unsigned cp;
		size_t len = tcfs_utf8_next(p + n, &cp);

		bad += len == 0;
		n += len ? len : 1;
	}
	if (!bad)
		return NULL;
	out = malloc(n + 3 * bad + 1);
	if (!out) {
		*rc = -ENOMEM;
		return NULL;
	}
	for (o = out; *p;) {
		unsigned cp;
		size_t len = tcfs_utf8_next(p, &cp);

		if (len == 0) {
			o += sprintf(o, "\\x%02x", *p++);
		} else {
			memcpy(o, p, len);
			o += len;
			p += len;
		}
	}
	*o = '\0';
	return out;
}

/* c's own name and string, then its children's. */
static int fix(cJSON *c)
{
	char *fixed;
	int rc = 0;

	fixed = c->string ? valid_copy(c->string, &rc) : NULL;
	if (fixed) {
		/* cJSON owns a member name unless it was given a constant. */
		if (!(c->type & cJSON_StringIsConst))
			free(c->string);
		c->string = fixed;
		c->type &= ~cJSON_StringIsConst;
	}
	if (rc == 0 && cJSON_IsString(c) && c->valuestring &&
	    (fixed = valid_copy(c->valuestring, &rc)) != NULL) {
		free(c->valuestring);
		c->valuestring = fixed;
	}
	for (cJSON *kid = c->child; kid && rc == 0; kid = kid->next)
		rc = fix(kid);
	return rc;
}

int tcfs_json_sanitize(cJSON *doc)
{
	return doc ? fix(doc) : 0;
}

int tcfs_json_print(cJSON *doc, FILE *out)
{
	char *s = doc && tcfs_json_sanitize(doc) == 0 ? cJSON_Print(doc)
						       : NULL;

	cJSON_Delete(doc);
	if (!s)
		return -ENOMEM;
	fprintf(out, "%s\n", s);
	free(s);
	return 0;
}

cJSON *tcfs_json_cut(const char *p, size_t n, size_t max)
{
	size_t len = n < max ? n : max;
	char *buf;
	cJSON *s;

	if (!p)
		return cJSON_CreateNull();
	buf = malloc(len + 4);
	if (!buf)
		return NULL;
	memcpy(buf, p, len);
	for (size_t i = 0; i < len; i++)
		if (!buf[i])
			buf[i] = '?';
	if (len < n) {
		memcpy(buf + len, "...", 3);
		len += 3;
	}
	buf[len] = '\0';
	s = cJSON_CreateString(buf);
	free(buf);
	return s;
}

/* ns since the epoch as seconds to the microsecond, into buf. */
static const char *seconds(int64_t ns, char buf[48])
{
	int64_t us = ns / 1000;
	int64_t sec = us / 1000000, frac = us % 1000000;

	if (frac < 0) {		/* before the epoch: C's division truncates */
		sec -= 1;
		frac += 1000000;
	}
	if (sec < 0 && frac) {
		snprintf(buf, 48, "-%" PRId64 ".%06" PRId64,
			 -(sec + 1), 1000000 - frac);
	} else {
		char num[24];
		const char *d = tcfs_decimal(sec, num);
		size_t n = strlen(d);

		memcpy(buf, d, n);
		buf[n] = '.';
		for (size_t i = 6; i > 0; i--, frac /= 10)
			buf[n + i] = (char)('0' + frac % 10);
		buf[n + 7] = '\0';
	}
	return buf;
}

cJSON *tcfs_json_add_seconds(cJSON *o, const char *name, int64_t ns)
{
	char buf[48];

	return cJSON_AddRawToObject(o, name, seconds(ns, buf));
}

double tcfs_json_number(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return v->valuedouble;
	return cJSON_IsRaw(v) && v->valuestring ? strtod(v->valuestring, NULL)
						: 0;
}

cJSON *tcfs_json_add_int(cJSON *o, const char *name, int64_t v)
{
	char buf[24];

	return cJSON_AddRawToObject(o, name, tcfs_decimal(v, buf));
}

/* s quoted as cJSON 1.7.15 quotes a string (", \\ and the control
 * characters escaped, the rest as it is), after tcfs_json_sanitize: a
 * byte that starts no UTF-8 sequence as the text \xNN. */
static void quoted(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putc_unlocked('"', f);
	while (*p) {
		size_t run = 0, len;
		unsigned cp;

		/* Printable ASCII but for the two that need a backslash. */
		while (p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' &&
		       p[run] != '\\')
			run++;
		fwrite(p, 1, run, f);
		p += run;
		if (!*p)
			break;
		if (*p >= 0x80) {
			len = tcfs_utf8_next(p, &cp);
			if (len) {
				fwrite(p, 1, len, f);
				p += len;
			} else {
				fprintf(f, "\\\\x%02x", *p++);
			}
			continue;
		}
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default: fprintf(f, "\\u%04x", *p); break;
		}
		p++;
	}
	putc_unlocked('"', f);
}

/* The member's name, after a comma unless it is the first. */
static void member(struct tcfs_json_obj *o, const char *name)
{
	if (o->members++)
		putc_unlocked(',', o->f);
	quoted(o->f, name);
	putc_unlocked(':', o->f);
}

void tcfs_json_obj_begin(struct tcfs_json_obj *o, FILE *f)
{
	o->f = f;
	o->members = 0;
	putc_unlocked('{', f);
}

void tcfs_json_obj_str(struct tcfs_json_obj *o, const char *name,
		       const char *v)
{
	member(o, name);
	if (v)
		quoted(o->f, v);
	else
		fputs("null", o->f);
}

void tcfs_json_obj_int(struct tcfs_json_obj *o, const char *name, int64_t v)
{
	char buf[24];

	member(o, name);
	fputs(tcfs_decimal(v, buf), o->f);
}

void tcfs_json_obj_seconds(struct tcfs_json_obj *o, const char *name,
			   int64_t ns)
{
	char buf[48];

	member(o, name);
	fputs(seconds(ns, buf), o->f);
}

void tcfs_json_obj_null(struct tcfs_json_obj *o, const char *name)
{
	member(o, name);
	fputs("null", o->f);
}

void tcfs_json_obj_end(struct tcfs_json_obj *o)
{
	putc_unlocked('}', o->f);
}
