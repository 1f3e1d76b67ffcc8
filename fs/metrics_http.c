/*
 * metrics_http: GET /metrics over HTTP (-o metrics=[ADDR:]PORT, or tcfs
 * config metrics), so that Prometheus scrapes the mount itself: the bytes
 * of .tcfs/metrics.prom, in its text exposition format.
 *
 * The port faces whoever can reach it, so every client is bounded: at most
 * HTTP_CONNS at once (one more is accepted and closed at once, so that no
 * crowd fills the listen backlog ahead of a scraper for longer than a
 * deadline), a request head of HTTP_HEAD_MAX bytes (431 past it), and
 * HTTP_DEADLINE_MS for the whole exchange, one request a connection
 * (Connection: close).  One thread serves them all, each read and written
 * without waiting, so a client that stalls holds up neither another nor
 * the unmount.  A rendering counts the store's objects/ dir: it is reused
 * for HTTP_RENDER_MS, so that a client asking in a loop costs no more
 * than a scraper does.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include "index/base/addr.h"
#include "index/base/err.h"
#include "index/model/event.h"
#include "priv.h"

/* Clients served at once: a Prometheus or two, and room to spare. */
#define HTTP_CONNS 16
/* A request's line and headers: a scraper sends about 300 bytes. */
#define HTTP_HEAD_MAX 8192
/* From accept to close: the request in, the answer out. */
#define HTTP_DEADLINE_MS 5000
/* How long a rendering answers for: Prometheus scrapes every 15 s by
 * default, and a second is as fresh as the events thread writes. */
#define HTTP_RENDER_MS 1000
/* Connections taken from the backlog in one round, at most, before the
 * clients already in are served again. */
#define HTTP_ACCEPTS 64
/* How long the backlog is left alone when accept fails for want of
 * descriptors or memory: polled meanwhile, it would spin. */
#define HTTP_ACCEPT_PAUSE_MS 100

enum http_state {
	HTTP_READING,	/* the request head coming in */
	HTTP_WRITING,	/* the answer going out */
	HTTP_DRAINING,	/* answered: what the client still sends is read
			 * and dropped until it closes, as closing on unread
			 * bytes would reset the connection and lose the
			 * answer (a 431 sent before the head ended) */
};

struct http_conn {
	int fd;			/* -1: a free slot */
	enum http_state state;
	int64_t deadline;	/* ms of CLOCK_MONOTONIC */
	size_t len;		/* of head */
	char *out;		/* owned: the answer */
	size_t out_len, sent;
	char head[HTTP_HEAD_MAX];
};

struct fs_http {
	pthread_t thread;
	int started;
	int fd;			/* listening */
	int wake[2];		/* a pipe: written to stop */
	struct tcfs_addr addr;
	char *render;		/* owned: the last rendering, or NULL */
	size_t render_len;
	int64_t render_ms;	/* when it was made */
	int64_t paused;		/* the backlog left alone until then (ms) */
	struct http_conn conns[HTTP_CONNS];
};

static void conn_close(struct http_conn *c)
{
	assert(c->fd >= 0);
	close(c->fd);
	free(c->out);
	c->out = NULL;
	c->fd = -1;
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	default: return "Internal Server Error";
	}
}

/* The answer: status, with body (len bytes) and an Allow line for 405.
 * 0, or -ENOMEM (the connection is then closed unanswered). */
static int answer(struct http_conn *c, int status, const char *body,
		  size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\n"
			 "Content-Type: text/plain; version=0.0.4; "
			 "charset=utf-8\r\n"
			 "Content-Length: %zu\r\n%s"
			 "Connection: close\r\n\r\n",
			 status, reason(status), len,
			 status == 405 ? "Allow: GET\r\n" : "");

	assert(n > 0 && (size_t)n < sizeof(head));
	c->out = malloc((size_t)n + len);
	if (!c->out)
		return -ENOMEM;
	memcpy(c->out, head, (size_t)n);
	memcpy(c->out + n, body, len);
	c->out_len = (size_t)n + len;
	c->sent = 0;
	c->state = HTTP_WRITING;
	return 0;
}

/* The metrics, rendered at most once per HTTP_RENDER_MS (owned by h).
 * 0, or -errno (said in syslog). */
static int metrics(struct tcfs_fs *fs, const char **body, size_t *len)
{
	struct fs_http *h = fs->http;
	int64_t now = fs_now_ms();
	char *bytes = NULL;
	size_t n = 0;
	int rc;

	if (!h->render || now - h->render_ms >= HTTP_RENDER_MS) {
		tcfs_err_clear();
		rc = fs_report_render(fs, FS_VIEW_METRICS, TCFS_EVENT_ALL_USERS,
				      &bytes, &n);
		if (rc < 0) {
			syslog(LOG_ERR, "tcfs: GET /metrics: %s",
			       tcfs_err_msg()[0] ? tcfs_err_msg()
						 : strerror(-rc));
			return rc;
		}
		free(h->render);
		h->render = bytes;
		h->render_len = n;
		h->render_ms = now;
	}
	*body = h->render;
	*len = h->render_len;
	return 0;
}

/* What the request line of a whole head asks: its status, 200 for GET
 * /metrics (a query string is ignored, as Prometheus's own ?name[]= is
 * for a single exposition). */
static int route(const char *head)
{
	size_t line = strcspn(head, "\r\n"), m = strcspn(head, " ");
	const char *target = head + m + 1;
	size_t n = strcspn(target, " ");

	if (m == 0 || m + 1 + n + 6 > line ||
	    strncmp(target + n, " HTTP/", 6) != 0)
		return 400;
	if (m != 3 || strncmp(head, "GET", 3) != 0)
		return 405;
	n = strcspn(target, "? ");
	return n == 8 && strncmp(target, "/metrics", 8) == 0 ? 200 : 404;
}

/* The body of an answer that is not the metrics. */
static const char *refusal(int status)
{
	if (status == 431)
		return "a request head is 8 KiB at most\n";
	if (status == 500)
		return "the metrics cannot be read now\n";
	return "only GET /metrics is served here\n";
}

/* A whole head is in (or too much of one): answers it. */
static void conn_serve(struct tcfs_fs *fs, struct http_conn *c, int status)
{
	const char *body = NULL;
	size_t len = 0;

	if (status == 200 && metrics(fs, &body, &len) < 0)
		status = 500;
	if (status != 200) {
		body = refusal(status);
		len = strlen(body);
	}
	if (answer(c, status, body, len) < 0)
		conn_close(c);
}

/* The end of the head in c (a blank line, CRLF or bare LF), or NULL. */
static const char *head_end(const struct http_conn *c)
{
	const char *crlf = memmem(c->head, c->len, "\r\n\r\n", 4);

	return crlf ? crlf : memmem(c->head, c->len, "\n\n", 2);
}

/* Reads one piece of the head without waiting, so that a client that
 * never stops sending leaves the thread to the others. */
static void conn_read(struct tcfs_fs *fs, struct http_conn *c)
{
	ssize_t n = recv(c->fd, c->head + c->len, HTTP_HEAD_MAX - 1 - c->len,
			 MSG_DONTWAIT);
	const char *end;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {	/* gone, or half-closed without a whole request */
		conn_close(c);
		return;
	}
	c->len += (size_t)n;
	c->head[c->len] = '\0';
	end = head_end(c);
	if (end)
		conn_serve(fs, c, route(c->head));
	else if (c->len == HTTP_HEAD_MAX - 1)
		conn_serve(fs, c, 431);
}

/* Sends what it can of the answer; once all is out, ends the writing
 * side and drains. */
static void conn_write(struct http_conn *c)
{
	ssize_t n = send(c->fd, c->out + c->sent, c->out_len - c->sent,
			 MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	c->sent += (size_t)n;
	if (c->sent < c->out_len)
		return;
	shutdown(c->fd, SHUT_WR);
	c->state = HTTP_DRAINING;
}

static void conn_drain(struct http_conn *c)
{
	char sink[4096];
	ssize_t n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
		conn_close(c);
}

static void conn_step(struct tcfs_fs *fs, struct http_conn *c)
{
	if (c->state == HTTP_READING)
		conn_read(fs, c);
	else if (c->state == HTTP_WRITING)
		conn_write(c);
	else
		conn_drain(c);
}

/* Past its deadline a connection is closed; one still sending its
 * request is told so first, in a line that never waits. */
static void conn_expire(struct http_conn *c, int64_t now)
{
	static const char late[] = "HTTP/1.1 408 Request Timeout\r\n"
				   "Content-Length: 0\r\n"
				   "Connection: close\r\n\r\n";

	if (c->fd < 0 || now < c->deadline)
		return;
	if (c->state == HTTP_READING)
		(void)!send(c->fd, late, sizeof(late) - 1,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
	conn_close(c);
}

/* Takes what waits in the backlog: into free slots, and beyond them
 * closed at once. */
static void http_accept(struct fs_http *h)
{
	for (int i = 0; i < HTTP_ACCEPTS; i++) {
		int fd = accept4(h->fd, NULL, NULL,
				 SOCK_CLOEXEC | SOCK_NONBLOCK), slot = 0;

		if (fd < 0 && errno != EAGAIN && errno != EINTR &&
		    errno != ECONNABORTED)
			h->paused = fs_now_ms() + HTTP_ACCEPT_PAUSE_MS;
		if (fd < 0)
			return;
		while (slot < HTTP_CONNS && h->conns[slot].fd >= 0)
			slot++;
		if (slot == HTTP_CONNS) {
			close(fd);
			continue;
		}
		h->conns[slot] = (struct http_conn){
			.fd = fd,
			.state = HTTP_READING,
			.deadline = fs_now_ms() + HTTP_DEADLINE_MS,
		};
	}
}

/* What to poll: the wake pipe, the socket (unless paused), every client;
 * and how long until the first deadline or the pause's end (-1: none). */
static int poll_set(struct fs_http *h, struct pollfd *p)
{
	int64_t first = h->paused > fs_now_ms() ? h->paused : -1;

	p[0] = (struct pollfd){ h->wake[0], POLLIN, 0 };
	p[1] = (struct pollfd){ first < 0 ? h->fd : -1, POLLIN, 0 };
	for (int i = 0; i < HTTP_CONNS; i++) {
		const struct http_conn *c = &h->conns[i];

		p[2 + i] = (struct pollfd){
			c->fd, c->state == HTTP_WRITING ? POLLOUT : POLLIN, 0
		};
		if (c->fd >= 0 && (first < 0 || c->deadline < first))
			first = c->deadline;
	}
	return fs_ms_until(first);
}

static void *server(void *arg)
{
	struct tcfs_fs *fs = arg;
	struct fs_http *h = fs->http;
	struct pollfd p[2 + HTTP_CONNS] = { { 0 } };
	int rc = 0;

	/* Until the wake pipe speaks (p[0], left at 0 by an EINTR). */
	while (!(rc < 0 && errno != EINTR) && !p[0].revents) {
		int timeout = poll_set(h, p);

		rc = poll(p, 2 + HTTP_CONNS, timeout);
		for (int i = 0; rc > 0 && i < HTTP_CONNS; i++) {
			struct http_conn *c = &h->conns[i];

			if (c->fd >= 0 && p[2 + i].revents)
				conn_step(fs, c);
		}
		for (int i = 0; i < HTTP_CONNS; i++)
			conn_expire(&h->conns[i], fs_now_ms());
		if (rc > 0 && (p[1].revents & POLLIN))
			http_accept(h);
	}
	return NULL;
}

/* A socket listening on a.  The fd, or -errno. */
static int listen_on(const struct tcfs_addr *a)
{
	int one = 1, rc = 0;
	int fd = socket(a->sa.ss_family,
			SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	/* A remount right after an unmount finds the port in TIME_WAIT. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (const struct sockaddr *)&a->sa, a->len) < 0 ||
	    listen(fd, 64) < 0)
		rc = -errno;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

int fs_http_listen(struct tcfs_fs *fs, const struct tcfs_addr *a)
{
	struct fs_http *h = calloc(1, sizeof(*h));
	int rc = 0;

	assert(!fs->http);
	if (!h)
		return -ENOMEM;
	h->addr = *a;
	h->wake[0] = h->wake[1] = -1;
	for (int i = 0; i < HTTP_CONNS; i++)
		h->conns[i].fd = -1;
	h->fd = listen_on(a);
	if (h->fd < 0)
		rc = tcfs_err_errno(h->fd, "metrics=%s: cannot listen",
				    a->show);
	else if (pipe2(h->wake, O_CLOEXEC) < 0)
		rc = tcfs_err_errno(-errno, "metrics: pipe");
	if (rc < 0) {
		if (h->fd >= 0)
			close(h->fd);
		free(h);
		return rc;
	}
	fs->http = h;
	return 0;
}

int fs_http_start(struct tcfs_fs *fs)
{
	struct fs_http *h = fs->http;
	int rc;

	if (!h)
		return 0;
	rc = fs_thread_start(&h->thread, server, fs);
	if (rc == 0) {
		h->started = 1;
		syslog(LOG_INFO, "serving http://%s/metrics", h->addr.show);
	}
	return rc;
}

void fs_http_stop(struct tcfs_fs *fs)
{
	struct fs_http *h = fs->http;

	if (!h)
		return;
	if (h->started) {
		(void)!write(h->wake[1], "x", 1);
		pthread_join(h->thread, NULL);
	}
	for (int i = 0; i < HTTP_CONNS; i++)
		if (h->conns[i].fd >= 0)
			conn_close(&h->conns[i]);
	close(h->fd);
	close(h->wake[0]);
	close(h->wake[1]);
	free(h->render);
	free(h);
	fs->http = NULL;
}
