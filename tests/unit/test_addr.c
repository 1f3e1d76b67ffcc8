/* addr: [ADDR:]PORT, as -o metrics= and tcfs config metrics take it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include "index/base/addr.h"
#include "index/base/err.h"
#include "tap.h"

static void reads(const char *in, const char *show, int family)
{
	struct tcfs_addr a;
	int rc = tcfs_addr_parse(in, &a);

	if (!tap_ok(rc == 0 && strcmp(a.show, show) == 0 &&
			    a.sa.ss_family == family,
		    "'%s' is %s", in, show))
		printf("#   rc %d, '%s'\n", rc, rc == 0 ? a.show : tcfs_err_msg());
}

static void refuses(const char *in, const char *why)
{
	struct tcfs_addr a;
	int rc = tcfs_addr_parse(in, &a);

	if (!tap_ok(rc == -EINVAL && strstr(tcfs_err_msg(), why),
		    "'%s' refused: %s", in, why))
		printf("#   rc %d, '%s'\n", rc, tcfs_err_msg());
}

int main(void)
{
	struct tcfs_addr a;

	reads("9101", "127.0.0.1:9101", AF_INET);
	reads("0.0.0.0:1", "0.0.0.0:1", AF_INET);
	reads("10.1.2.3:65535", "10.1.2.3:65535", AF_INET);
	reads("[::1]:9101", "[::1]:9101", AF_INET6);
	reads("[::]:80", "[::]:80", AF_INET6);
	tap_ok(tcfs_addr_parse("9101", &a) == 0 &&
		       ((struct sockaddr_in *)&a.sa)->sin_port == htons(9101) &&
		       a.len == sizeof(struct sockaddr_in),
	       "the port in network order, the length an IPv4 one's");
	refuses("", "PORT must be a number from 1 to 65535");
	refuses("0", "PORT must be a number from 1 to 65535");
	refuses("65536", "PORT must be a number from 1 to 65535");
	refuses("+80", "PORT must be a number from 1 to 65535");
	refuses("80 ", "PORT must be a number from 1 to 65535");
	refuses("0x50", "PORT must be a number from 1 to 65535");
	refuses("localhost:80", "ADDR must be an IPv4 address");
	refuses("1.2.3:80", "ADDR must be an IPv4 address");
	refuses(":80", "ADDR must be an IPv4 address");
	refuses("::1:80", "ADDR must be an IPv4 address");
	refuses("[::1:80", "in brackets");
	refuses("[1.2.3.4]:80", "not an IPv6 address");
	refuses("[::1]", "PORT must be");
	refuses("\x1b[2J:80", "'\\x1b[2J:80'");
	return tap_done();
}
