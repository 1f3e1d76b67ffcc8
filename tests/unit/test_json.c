/* json: what tcfs prints as JSON parses, whatever bytes it quotes. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/json.h"
#include "index/base/utf8.h"
#include "tap.h"

static int all_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned cp;
	size_t n;

	while (*p) {
		n = tcfs_utf8_next(p, &cp);
		if (!n)
			return 0;
		p += n;
	}
	return 1;
}

int main(void)
{
	cJSON *doc = cJSON_CreateObject(), *arr, *back;
	char *out;

	cJSON_AddStringToObject(doc, "name", "caf\xe9 \xc3\xa9");
	cJSON_AddStringToObject(doc, "ok", "add_kernel \xf0\x9f\x98\x80");
	cJSON_AddStringToObject(doc, "bad\xff", "x");
	arr = cJSON_AddArrayToObject(doc, "deep");
	cJSON_AddItemToArray(arr, cJSON_CreateString("\xed\xa0\x80"));
	tap_eq(tcfs_json_sanitize(doc), 0, "sanitize a tree with bad bytes");
	out = cJSON_PrintUnformatted(doc);
	back = cJSON_Parse(out);
	tap_ok(back != NULL && all_utf8(out), "its text is UTF-8 and parses again");
	tap_ok(strcmp(cJSON_GetObjectItem(doc, "name")->valuestring,
		      "caf\\xe9 \xc3\xa9") == 0,
	       "a byte that is not UTF-8 becomes \\xNN, the rest stays");
	tap_ok(strcmp(cJSON_GetObjectItem(doc, "ok")->valuestring,
		      "add_kernel \xf0\x9f\x98\x80") == 0,
	       "valid UTF-8 is left as it is");
	tap_ok(cJSON_GetObjectItem(doc, "bad\\xff") != NULL,
	       "member names are fixed too");
	tap_ok(strcmp(cJSON_GetArrayItem(arr, 0)->valuestring,
		      "\\xed\\xa0\\x80") == 0,
	       "and strings deep in the tree (an encoded surrogate)");
	tap_eq(tcfs_json_sanitize(NULL), 0, "NULL is nothing to fix");
	free(out);
	cJSON_Delete(back);
	cJSON_Delete(doc);
	{
		cJSON *o = cJSON_CreateObject(), *v;
		char *text;

		tcfs_json_add_int(o, "big", INT64_C(5000000000));
		cJSON_AddNumberToObject(o, "n", 3);
		cJSON_AddStringToObject(o, "s", "7");
		text = cJSON_PrintUnformatted(o);
		tap_ok(text && !strcmp(text, "{\"big\":5000000000,\"n\":3,"
					      "\"s\":\"7\"}"),
		       "a number added as it is prints as it is: %s", text);
		free(text);
		v = cJSON_GetObjectItemCaseSensitive(o, "big");
		tap_ok(tcfs_json_number(v) == 5e9, "and reads back as a number");
		tap_ok(tcfs_json_number(cJSON_GetObjectItemCaseSensitive(o, "n")) == 3,
		       "as does cJSON's own");
		tap_ok(tcfs_json_number(cJSON_GetObjectItemCaseSensitive(o, "s")) == 0 &&
			       tcfs_json_number(NULL) == 0,
		       "a string or nothing is 0");
		cJSON_Delete(o);
	}
	{
		static const int64_t v[] = { 0, 7, -1, 1234567890123,
					     INT64_MAX, INT64_MIN };
		cJSON *o = cJSON_CreateObject();
		char want[256] = "{", *text;

		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			char name[8];

			snprintf(name, sizeof(name), "v%zu", i);
			tcfs_json_add_int(o, name, v[i]);
			snprintf(want + strlen(want), sizeof(want) - strlen(want),
				 "%s\"%s\":%" PRId64, i ? "," : "", name, v[i]);
		}
		strcat(want, "}");
		text = cJSON_PrintUnformatted(o);
		tap_ok(text && !strcmp(text, want),
		       "numbers print as printf would: 0, signs, both ends: %s",
		       text);
		free(text);
		cJSON_Delete(o);
	}
	{
		static const struct {
			int64_t ns;
			const char *text;
		} t[] = {
			{ 0, "0.000000" },
			{ 1500000999, "1.500000" },
			{ INT64_C(1764300000123456789), "1764300000.123456" },
			{ -1500000000, "-1.500000" },
			{ -2000000000, "-2.000000" },
		};

		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			cJSON *o = cJSON_CreateObject();
			char want[64], *text;

			tcfs_json_add_seconds(o, "t", t[i].ns);
			snprintf(want, sizeof(want), "{\"t\":%s}", t[i].text);
			text = cJSON_PrintUnformatted(o);
			tap_ok(text && !strcmp(text, want),
			       "%" PRId64 " ns prints as %s", t[i].ns,
			       t[i].text);
			free(text);
			cJSON_Delete(o);
		}
	}
	{
		/* The stream writer against cJSON's own print of the same
		 * members, sanitized: every byte alone, and strings that mix
		 * escapes, UTF-8 and bytes that are not. */
		static const char *const mixed[] = {
			"", "plain", "q\"uote\\back", "tab\tnl\ncr\rbs\bff\f",
			"\x01\x1f\x7f", "caf\xc3\xa9 \xf0\x9f\x98\x80",
			"caf\xe9", "\xed\xa0\x80", "\xc3", "\xc0\xaf",
			"\xf4\x90\x80\x80", ("a\xff" "b\xfe\""),
		};
		int same = 1;

		for (int pass = 0; pass < 2; pass++) {
			size_t n = pass ? sizeof(mixed) / sizeof(mixed[0]) : 255;

			for (size_t i = 0; i < n; i++) {
				char one[2] = { (char)(i + 1), 0 }, *text, *buf = NULL;
				const char *v = pass ? mixed[i] : one;
				size_t len = 0;
				cJSON *o = cJSON_CreateObject();
				struct tcfs_json_obj w;
				FILE *f = open_memstream(&buf, &len);

				cJSON_AddStringToObject(o, v, v);
				tcfs_json_add_int(o, "n", -42);
				tcfs_json_add_seconds(o, "t", -1500000000);
				cJSON_AddNullToObject(o, "z");
				tcfs_json_sanitize(o);
				text = cJSON_PrintUnformatted(o);
				tcfs_json_obj_begin(&w, f);
				tcfs_json_obj_str(&w, v, v);
				tcfs_json_obj_int(&w, "n", -42);
				tcfs_json_obj_seconds(&w, "t", -1500000000);
				tcfs_json_obj_str(&w, "z", NULL);
				tcfs_json_obj_end(&w);
				fclose(f);
				if (!text || strcmp(text, buf) != 0) {
					fprintf(stderr, "# %s\n# vs %s\n", text, buf);
					same = 0;
				}
				free(text);
				free(buf);
				cJSON_Delete(o);
			}
		}
		tap_ok(same, "the stream writer prints what cJSON prints, "
		       "sanitized, for every byte and mixed strings");
	}
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		struct tcfs_json_obj w;

		tcfs_json_obj_begin(&w, f);
		tcfs_json_obj_end(&w);
		tcfs_json_obj_begin(&w, f);
		tcfs_json_obj_null(&w, "a");
		tcfs_json_obj_int(&w, "b", INT64_MIN);
		tcfs_json_obj_end(&w);
		fclose(f);
		tap_ok(!strcmp(buf, "{}{\"a\":null,\"b\":-9223372036854775808}"),
		       "an empty object, and one after another: %s", buf);
		free(buf);
	}
	return tap_done();
}
