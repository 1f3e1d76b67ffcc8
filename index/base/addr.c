/* addr: [ADDR:]PORT read into a socket address (addr.h). */
#include "index/base/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "index/base/err.h"
#include "index/base/utf8.h"

/* The port a text names, or 0 when it is none: digits only (no sign,
 * space or base prefix), 1 to 65535. */
static unsigned port_of(const char *s)
{
	unsigned long v = 0;
	size_t n = strspn(s, "0123456789");

	if (n == 0 || n > 5 || s[n])
		return 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned long)(s[i] - '0');
	return v <= 65535 ? (unsigned)v : 0;
}

static int bad(const char *text, const char *why)
{
	char show[TCFS_UTF8_SHOW_MAX];

	tcfs_utf8_printable(text, show, sizeof(show));
	return tcfs_err_set(-EINVAL, "'%s' is not [ADDR:]PORT: %s", show, why);
}

/* host (an address's text, n bytes, brackets taken off) into out. */
static int host_of(const char *host, size_t n, int v6, unsigned port,
		   struct tcfs_addr *out)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)&out->sa;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&out->sa;
	char text[INET6_ADDRSTRLEN];

	if (n >= sizeof(text))
		return -EINVAL;
	memcpy(text, host, n);
	text[n] = '\0';
	memset(out, 0, sizeof(*out));
	if (v6) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		out->len = sizeof(*a6);
		if (inet_pton(AF_INET6, text, &a6->sin6_addr) != 1)
			return -EINVAL;
	} else {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		out->len = sizeof(*a4);
		if (inet_pton(AF_INET, text, &a4->sin_addr) != 1)
			return -EINVAL;
	}
	snprintf(out->show, sizeof(out->show), "%s%s%s:%u", v6 ? "[" : "",
		 text, v6 ? "]" : "", port);
	return 0;
}

int tcfs_addr_parse(const char *text, struct tcfs_addr *out)
{
	const char *colon = strrchr(text, ':');
	int v6 = text[0] == '[';
	size_t n = colon ? (size_t)(colon - text) : 0;
	unsigned port = port_of(colon ? colon + 1 : text);

	if (!port)
		return bad(text, "PORT must be a number from 1 to 65535");
	if (!colon)
		return host_of("127.0.0.1", 9, 0, port, out);
	/* "[v6]:PORT": the brackets keep the address's own colons apart. */
	if (v6 && (n < 2 || text[n - 1] != ']'))
		return bad(text, "an IPv6 ADDR goes in brackets, as [::1]:PORT");
	if (host_of(text + v6, n - 2 * (size_t)v6, v6, port, out) < 0)
		return bad(text, v6 ? "ADDR is not an IPv6 address"
				    : "ADDR must be an IPv4 address, or an "
				      "IPv6 one in brackets");
	return 0;
}
