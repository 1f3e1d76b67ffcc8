/*
 * addr: a TCP address to listen on, as people write it: [ADDR:]PORT
 * (-o metrics=, tcfs config metrics).  Numeric only: a name would need a
 * resolver at mount time, and "which address did it bind" would depend
 * on it.
 */
#ifndef TCFS_ADDR_H
#define TCFS_ADDR_H

#include <sys/socket.h>

/* What listening needs, and the text to show. */
struct tcfs_addr {
	struct sockaddr_storage sa;
	socklen_t len;
	char show[64];		/* "127.0.0.1:9101", "[::1]:9101" */
};

/* Reads text: PORT (1 to 65535) on 127.0.0.1, or ADDR:PORT with ADDR an
 * IPv4 address or an IPv6 one in brackets ([::1]).  0, or -EINVAL with a
 * message naming text and what is wrong with it. */
int tcfs_addr_parse(const char *text, struct tcfs_addr *out);

#endif
