/* pt2: PyTorch's remote cache keys and values, rendered as its
 * json.dumps renders them and read back as the hostile bytes they are. */
#include "index/remote/pt2.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "index/base/err.h"

/* The key's fields are names, never separators of the format. */
static int plain(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s == ':' || *s == '/' || (unsigned char)*s <= ' ' ||
		    *s == 0x7f)
			return 0;
	return 1;
}

static int key_of(const char *cache_id, const char *key, const char *tail,
		  char *buf, size_t len)
{
	int n;

	if (!plain(cache_id) || !plain(key))
		return -EINVAL;
	n = snprintf(buf, len, "pt2:%s::%s:c1%s", cache_id, key, tail);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int tcfs_pt2_key(const char *cache_id, const char *key, char *buf,
		 size_t len)
{
	return key_of(cache_id, key, "", buf, len);
}

int tcfs_pt2_sidecar_key(const char *cache_id, const char *key, char *buf,
			 size_t len)
{
	return key_of(cache_id, key, ":tcfs", buf, len);
}

void tcfs_pt2_entry_name(const void *bytes, size_t len,
			 char name[TCFS_PT2_NAME_LEN + 1])
{
	static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
	unsigned char md[32];
	uint64_t acc = 0;
	int bits = 0;
	size_t o = 0;

	EVP_Digest(bytes, len, md, NULL, EVP_sha256(), NULL);
	/* RFC 4648 base32, lowercased: 52 characters of which the first 51
	 * are kept, as PyTorch's sha256_hash keeps them. */
	for (size_t i = 0; i < sizeof(md) && o < TCFS_PT2_NAME_LEN; i++) {
		acc = acc << 8 | md[i];
		bits += 8;
		while (bits >= 5 && o < TCFS_PT2_NAME_LEN) {
			name[o++] = b32[(acc >> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	assert(o == TCFS_PT2_NAME_LEN);
	name[o] = '\0';
}

uint64_t tcfs_pt2_value_max(uint64_t entry_max)
{
	/* The base64 of entry_max bytes and the JSON around it. */
	return (entry_max + 2) / 3 * 4 + 64;
}

int tcfs_pt2_value_render(const void *entry, size_t len,
			  uint64_t time_taken_ms, char **out, size_t *outlen)
{
	static const char head[] = "{\"data\": \"";
	char tail[64];
	size_t b64 = (len + 2) / 3 * 4, n;
	int tl = snprintf(tail, sizeof(tail), "\", \"time_taken_ms\": %" PRIu64
			  "}", time_taken_ms);
	char *p;

	assert(tl > 0 && (size_t)tl < sizeof(tail));
	n = sizeof(head) - 1 + b64 + (size_t)tl;
	p = malloc(n + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p, head, sizeof(head) - 1);
	/* EVP_EncodeBlock writes standard, padded base64 with no newlines:
	 * base64.b64encode's. */
	EVP_EncodeBlock((unsigned char *)p + sizeof(head) - 1, entry, (int)len);
	memcpy(p + sizeof(head) - 1 + b64, tail, (size_t)tl + 1);
	*out = p;
	*outlen = n;
	return 0;
}

/* The value of one base64 character, -1 for any other byte. */
static int b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Strict standard base64: a multiple of 4 characters, '=' only as the
 * last one or two.  0, or -EBADMSG. */
static int b64_decode(const char *s, size_t n, unsigned char *out,
		      size_t *outlen)
{
	size_t o = 0, pad = 0;

	if (n % 4)
		return -EBADMSG;
	if (n && s[n - 1] == '=')
		pad = n >= 2 && s[n - 2] == '=' ? 2 : 1;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		int last = i + 4 == n;

		for (int j = 0; j < 4; j++) {
			int pj = last && j >= 4 - (int)pad;

			v[j] = pj ? 0 : b64_val((unsigned char)s[i + j]);
			if (v[j] < 0)
				return -EBADMSG;
		}
		out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (!(last && pad == 2))
			out[o++] = (unsigned char)(v[1] << 4 | v[2] >> 2);
		if (!(last && pad))
			out[o++] = (unsigned char)(v[2] << 6 | v[3]);
	}
	*outlen = o;
	return 0;
}

int tcfs_pt2_value_parse(const char *val, size_t len, uint64_t max,
			 char **entry, size_t *entry_len)
{
	cJSON *doc = NULL, *data, *t;
	unsigned char *buf = NULL;
	size_t slen, n = 0;
	int rc = 0;

	*entry = NULL;
	*entry_len = 0;
	if (len > tcfs_pt2_value_max(max))
		return tcfs_err_set(-EFBIG, "a value of %zu bytes, over %llu",
				    len, (unsigned long long)
					      tcfs_pt2_value_max(max));
	doc = cJSON_ParseWithLength(val, len);
	if (!doc || !cJSON_IsObject(doc))
		rc = tcfs_err_set(-EBADMSG, "not a JSON object");
	data = rc ? NULL : cJSON_GetObjectItemCaseSensitive(doc, "data");
	t = rc ? NULL : cJSON_GetObjectItemCaseSensitive(doc, "time_taken_ms");
	if (!rc && !cJSON_IsString(data))
		rc = tcfs_err_set(-EBADMSG, "no \"data\" string");
	if (!rc && t && !cJSON_IsNumber(t))
		rc = tcfs_err_set(-EBADMSG, "\"time_taken_ms\" not a number");
	slen = rc ? 0 : strlen(data->valuestring);
	if (!rc && slen / 4 * 3 > max + 2)
		rc = tcfs_err_set(-EFBIG, "an entry over %llu bytes",
				  (unsigned long long)max);
	if (!rc && !(buf = malloc(slen / 4 * 3 + 1)))
		rc = -ENOMEM;
	if (!rc && b64_decode(data->valuestring, slen, buf, &n))
		rc = tcfs_err_set(-EBADMSG, "\"data\" is not base64");
	if (!rc && n > max)
		rc = tcfs_err_set(-EFBIG, "an entry of %zu bytes, over %llu",
				  n, (unsigned long long)max);
	cJSON_Delete(doc);
	if (rc) {
		free(buf);
		return rc;
	}
	*entry = (char *)buf;
	*entry_len = n;
	return 0;
}
