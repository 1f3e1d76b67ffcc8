/* remote_pt2: PyTorch's remote cache keys and values, byte for byte as
 * torch 2.11 writes them (the expected strings are Python's own output:
 * json.dumps, base64, hashlib), and hostile values refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index/remote/pt2.h"
#include "tap.h"

/* A pickle's first bytes, a NUL and a 0xff: every byte must survive. */
static const char entry[] = "\x80\x04\x95hello pickle\x00\xff";
#define ENTRY_LEN (sizeof(entry) - 1)

static void keys(void)
{
	char buf[256];

	tap_eq(tcfs_pt2_key("fx-graph-v1", "fabc", buf, sizeof(buf)), 0,
	       "an FX graph's key");
	tap_ok(strcmp(buf, "pt2:fx-graph-v1::fabc:c1") == 0, "is %s", buf);
	tap_eq(tcfs_pt2_sidecar_key("autograd-experimental", "aabc", buf,
				    sizeof(buf)), 0, "a sidecar's key");
	tap_ok(strcmp(buf, "pt2:autograd-experimental::aabc:c1:tcfs") == 0,
	       "is %s", buf);
	tap_eq(tcfs_pt2_key("fx-graph-v1", "f:x", buf, sizeof(buf)), -EINVAL,
	       "a key holding ':' is refused");
	tap_eq(tcfs_pt2_key("fx-graph-v1", "", buf, sizeof(buf)), -EINVAL,
	       "an empty key is refused");
	tap_eq(tcfs_pt2_key("fx graph", "fabc", buf, sizeof(buf)), -EINVAL,
	       "a cache id holding a space is refused");
	tap_eq(tcfs_pt2_key("fx-graph-v1", "fabc", buf, 10), -ENAMETOOLONG,
	       "a key longer than its buffer");
}

static void names(void)
{
	char name[TCFS_PT2_NAME_LEN + 1];

	tcfs_pt2_entry_name(entry, ENTRY_LEN, name);
	tap_ok(strcmp(name, "qrdmp72iqoykogrrawojoym7lpai4ecf4jcqj5gkf2dagzok5eq")
		       == 0, "sha256_hash of an entry: %s", name);
	tcfs_pt2_entry_name("", 0, name);
	tap_ok(strcmp(name, "4oymiquy7qobjgx36tejs35zeqt24qpemsnzgtfeswmrw6csxbk")
		       == 0, "sha256_hash of nothing: %s", name);
}

static void values(void)
{
	static const char want[] =
		"{\"data\": \"gASVaGVsbG8gcGlja2xlAP8=\", \"time_taken_ms\": 0}";
	char *v = NULL, *e = NULL;
	size_t vlen = 0, elen = 0;

	tap_eq(tcfs_pt2_value_render(entry, ENTRY_LEN, 0, &v, &vlen), 0,
	       "a value rendered");
	tap_ok(vlen == strlen(want) && memcmp(v, want, vlen) == 0,
	       "as json.dumps renders it: %.*s", (int)vlen, v);
	tap_eq(tcfs_pt2_value_parse(v, vlen, 1024, &e, &elen), 0,
	       "and parsed back");
	tap_ok(elen == ENTRY_LEN && memcmp(e, entry, elen) == 0,
	       "to the same %zu bytes", elen);
	free(e);
	free(v);
	for (size_t n = 0; n <= 5; n++) {
		int ok;

		tcfs_pt2_value_render("abcde", n, 1234, &v, &vlen);
		ok = tcfs_pt2_value_parse(v, vlen, 16, &e, &elen) == 0 &&
		     elen == n && memcmp(e, "abcde", n) == 0;
		tap_ok(ok, "%zu bytes round-trip (%.*s)", n, (int)vlen, v);
		free(e);
		free(v);
	}
}

static void refusals(void)
{
	static const struct {
		const char *val;
		int rc;
		const char *what;
	} bad[] = {
		{ "[1, 2]", -EBADMSG, "not an object" },
		{ "{\"data\": 1}", -EBADMSG, "data not a string" },
		{ "{\"time_taken_ms\": 0}", -EBADMSG, "no data" },
		{ "{\"data\": \"YWJj\", \"time_taken_ms\": \"x\"}", -EBADMSG,
		  "time_taken_ms not a number" },
		{ "{\"data\": \"YWJ\"}", -EBADMSG, "base64 cut short" },
		{ "{\"data\": \"YW=j\"}", -EBADMSG, "'=' inside" },
		{ "{\"data\": \"YW\\njYw==\"}", -EBADMSG, "a newline inside" },
		{ "{\"data\": \"YW*j\"}", -EBADMSG, "a byte not base64" },
		{ "{\"data\": \"YWJjZGVmZ2hpamtsbW5vcHFy\"}", -EFBIG,
		  "an entry over the bound" },
		{ "{\"data\": \"YWJj\"", -EBADMSG, "JSON cut short" },
	};
	char *e = (char *)1;
	size_t elen = 1;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		tap_eq(tcfs_pt2_value_parse(bad[i].val, strlen(bad[i].val), 8,
					    &e, &elen), bad[i].rc,
		       "refused: %s", bad[i].what);
		tap_ok(!e && !elen, "and nothing handed back");
	}
	tap_eq(tcfs_pt2_value_parse("{\"data\": \"\"}", 12, 8, &e, &elen), 0,
	       "an empty entry is one");
	free(e);
	tap_eq(tcfs_pt2_value_parse("{\"data\": \"YWJj\", \"other\": [1]}", 30,
				    8, &e, &elen), 0,
	       "members PyTorch does not read are ignored");
	free(e);
	tap_eq(tcfs_pt2_value_parse("{\"data\": \"YWJj\"}", 16, 8, &e, &elen),
	       0, "a value with no time_taken_ms");
	tap_ok(elen == 3 && memcmp(e, "abc", 3) == 0, "holds its bytes");
	free(e);
	{
		char big[tcfs_pt2_value_max(8) + 2];

		memset(big, ' ', sizeof(big));
		tap_eq(tcfs_pt2_value_parse(big, sizeof(big), 8, &e, &elen),
		       -EFBIG, "a value over the bound is not parsed at all");
	}
}

int main(void)
{
	keys();
	names();
	values();
	refusals();
	return tap_done();
}
