/*
 * ctl: STORE/ctl.sock, the mount's control socket, both ends.
 *
 * While a store is mounted its daemon is its only writer, so a command
 * that must change the store (tcfs prune, gc) asks the daemon to do it: one
 * connection per request, a JSON object each way, the request ended by
 * shutting down the writing side.  The socket lives in the store
 * directory (mode 0700), so only its owner (or root) can connect; the
 * daemon checks the peer's uid too.  Even so a client may stall (a
 * stopped process, a stray connect): the daemon bounds each request in
 * size and time and never waits on one client alone.
 */
#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "fs.h"
#include "index/base/err.h"
#include "index/base/io.h"
#include "index/maint/gc.h"
#include "index/maint/prune.h"
#include "index/store/store.h"
#include "priv.h"

#define CTL_NAME "ctl.sock"
/* A request is a few filters: anything longer is not one. */
#define CTL_REQUEST_MAX (64u << 10)
/* A report names every kernel pruned: 100,000 of them fit. */
#define CTL_ANSWER_MAX (256u << 20)
/* How long a command waits for the daemon's answer. */
#define CTL_TIMEOUT_MS (10 * 60 * 1000)
/* How long the daemon waits for a whole request, and for a command to
 * take the whole answer: tcfs sends all at once and reads all at once,
 * so a client slower than this has stalled. */
#define CTL_REQUEST_MS (5 * 1000)
#define CTL_ANSWER_MS (60 * 1000)
/* Clients served at once: more wait in the listen backlog until one is
 * done or past its deadline. */
#define CTL_CONNS 8

/* One client: its request coming in, then the answer going out. */
struct ctl_conn {
	int fd;			/* -1: a free slot */
	int writing;		/* the request is in, the answer going out */
	int too_big;		/* the request ran past CTL_REQUEST_MAX */
	int64_t deadline;	/* ms of CLOCK_MONOTONIC */
	char *buf;		/* owned: the request, then the answer */
	size_t len;		/* bytes in buf */
	size_t sent;		/* of the answer */
};

struct fs_ctl {
	pthread_t thread;
	int fd;			/* listening */
	struct ctl_conn conns[CTL_CONNS];
	int wake[2];		/* a pipe: written to stop */
	int dirfd;		/* the store dir, for long paths */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/* The socket's address: STORE/ctl.sock, or by way of an open descriptor
 * of STORE when that path is too long for sun_path. */
static int ctl_addr(const char *store, int dirfd, struct sockaddr_un *a)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", store,
		     CTL_NAME);
	if (n > 0 && (size_t)n < sizeof(a->sun_path))
		return 0;
	n = snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/%s",
		     dirfd, CTL_NAME);
	return n > 0 && (size_t)n < sizeof(a->sun_path) ? 0 : -ENAMETOOLONG;
}

static const char *str_of(const cJSON *req, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The request's kernel filters: each a string when given. */
static int read_filter(const cJSON *req, struct tcfs_kernel_filter *f)
{
	static const char *const names[] = { "name", "backend", "arch" };
	const char **to[] = { &f->name, &f->backend, &f->arch };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(req,
								  names[i]);

		if (v && !cJSON_IsString(v))
			return tcfs_err_set(-EINVAL, "'%s' is not a string",
					    names[i]);
		*to[i] = v ? v->valuestring : NULL;
	}
	return 0;
}

/* The request's selection into sel and how: each filter a string when
 * given, unused_since a number, ir a boolean, and at least one of them
 * (as tcfs prune demands): a request that names none, or names one in a
 * form not read here, would otherwise take every kernel. */
static int read_select(const cJSON *req, struct tcfs_prune_select *sel,
		       enum tcfs_prune_how *how)
{
	const cJSON *since = cJSON_GetObjectItemCaseSensitive(req,
							      "unused_since");
	const cJSON *ir = cJSON_GetObjectItemCaseSensitive(req, "ir");

	if (read_filter(req, &sel->filter) < 0)
		return -EINVAL;
	if (since && (!cJSON_IsNumber(since) || !(since->valuedouble >= 0) ||
		      since->valuedouble > 9e18))
		return tcfs_err_set(-EINVAL, "'unused_since' is not a time "
				    "in ns");
	if (ir && !cJSON_IsBool(ir))
		return tcfs_err_set(-EINVAL, "'ir' is not true or false");
	sel->unused_since_ns = since ? (int64_t)since->valuedouble : -1;
	*how = cJSON_IsTrue(ir) ? TCFS_PRUNE_IR : TCFS_PRUNE_WHOLE;
	if (*how != TCFS_PRUNE_IR && sel->unused_since_ns < 0 &&
	    !sel->filter.name && !sel->filter.backend && !sel->filter.arch)
		return tcfs_err_set(-EINVAL, "say which kernels: name, "
				    "backend, arch, unused_since or ir");
	return 0;
}

/* {"op": "prune", name, backend, arch, unused_since (ns), ir}: the report
 * of tcfs_prune_report_json. */
static int do_prune(struct tcfs_fs *fs, const cJSON *req, cJSON **out)
{
	struct tcfs_prune_select sel = { { NULL, NULL, NULL }, -1 };
	enum tcfs_prune_how how = TCFS_PRUNE_WHOLE;
	struct tcfs_prune_victim *v = NULL;
	struct tcfs_prune_report r = { 0 };
	size_t n = 0;
	int rc = read_select(req, &sel, &how);

	if (rc == 0) {
		fs_files_flush_all(fs);
		rc = tcfs_prune_pick(fs->store, &sel, &v, &n);
	}
	if (rc == 0)
		rc = fs_evict_prune(fs, v, n, how, &r);
	if (rc == 0)
		rc = tcfs_store_sync(fs->store);
	if (rc == 0) {
		*out = tcfs_prune_report_json(&r, how, 0);
		rc = *out ? 0 : -ENOMEM;
	}
	tcfs_prune_report_free(&r);
	free(v);
	return rc;
}

/* Orphans a gc's answer names, at most: the rest are only counted. */
#define CTL_GC_NAMED 100000

struct gc_named {
	cJSON *list;
	size_t n;
	uint64_t unnamed;
};

static void gc_orphan(void *ctx, const char *relpath, uint64_t size)
{
	struct gc_named *g = ctx;
	cJSON *o = g->n < CTL_GC_NAMED ? cJSON_CreateObject() : NULL;

	if (o && cJSON_AddStringToObject(o, "path", relpath) &&
	    cJSON_AddNumberToObject(o, "bytes", (double)size) &&
	    cJSON_AddItemToArray(g->list, o)) {
		g->n++;
		return;
	}
	cJSON_Delete(o);
	g->unnamed++;
}

/* {"op": "gc", "dry_run", "verbose"}: tcfs gc through the mount, which
 * holds the writer lock.  Answers tcfs_gc_result_json's object, and when
 * verbose "orphans": [{path, bytes}] and "unnamed" (those left out). */
static int do_gc(struct tcfs_fs *fs, const cJSON *req, cJSON **out)
{
	const cJSON *dry = cJSON_GetObjectItemCaseSensitive(req, "dry_run");
	const cJSON *verbose = cJSON_GetObjectItemCaseSensitive(req,
								"verbose");
	struct gc_named g = { NULL, 0, 0 };
	struct tcfs_gc_result res;
	int rc = 0;

	if ((dry && !cJSON_IsBool(dry)) || (verbose && !cJSON_IsBool(verbose)))
		return tcfs_err_set(-EINVAL, "gc: 'dry_run' and 'verbose' are "
				    "true or false");
	if (cJSON_IsTrue(verbose) && !(g.list = cJSON_CreateArray()))
		return -ENOMEM;
	rc = fs_evict_gc(fs, cJSON_IsTrue(dry), g.list ? gc_orphan : NULL, &g,
			 &res);
	if (rc == 0 && !(*out = tcfs_gc_result_json(&res, cJSON_IsTrue(dry))))
		rc = -ENOMEM;
	if (rc == 0 && g.list) {
		if (cJSON_AddItemToObject(*out, "orphans", g.list))
			g.list = NULL;	/* the answer's now */
		if (g.list || !cJSON_AddNumberToObject(*out, "unnamed",
						       (double)g.unnamed))
			rc = -ENOMEM;
	}
	cJSON_Delete(g.list);
	return rc;
}

/* Kernels one remote-fetch request may name: each may take the remote's
 * timeouts, and the socket serves one request at a time. */
#define CTL_FETCH_MAX 16

/* {"op": "remote-fetch", "items": [{"key", "name"}, ...]}: tcfs remote
 * pull through the mount.  Answers {"landed", "here", "missing",
 * "failed", "errors": [MSG...]}. */
static int do_fetch(struct tcfs_fs *fs, const cJSON *req, cJSON **out)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(req, "items");
	const cJSON *it;
	int counts[4] = { 0 }, rc;
	cJSON *errs;

	if (!cJSON_IsArray(items) ||
	    cJSON_GetArraySize(items) > CTL_FETCH_MAX)
		return tcfs_err_set(-EINVAL, "remote-fetch: items: an array "
				    "of at most %d", CTL_FETCH_MAX);
	*out = cJSON_CreateObject();
	errs = *out ? cJSON_AddArrayToObject(*out, "errors") : NULL;
	if (!errs)
		return -ENOMEM;
	cJSON_ArrayForEach(it, items) {
		const char *key = str_of(it, "key"), *name = str_of(it, "name");

		tcfs_err_clear();
		rc = key && name ? fs_remote_pull(fs, key, name)
				 : tcfs_err_set(-EINVAL, "an item without key "
						"and name");
		counts[rc == 1 ? 0 : rc == 0 ? 1 : rc == -ENOENT ? 2 : 3]++;
		if (rc < 0 && rc != -ENOENT)
			cJSON_AddItemToArray(errs, cJSON_CreateString(
				tcfs_err_msg()[0] ? tcfs_err_msg()
						  : strerror(-rc)));
		if (rc == -ENOTCONN)
			return rc;	/* no remote: none will do */
	}
	cJSON_AddNumberToObject(*out, "landed", counts[0]);
	cJSON_AddNumberToObject(*out, "here", counts[1]);
	cJSON_AddNumberToObject(*out, "missing", counts[2]);
	cJSON_AddNumberToObject(*out, "failed", counts[3]);
	return tcfs_store_sync(fs->store);
}

/* {"op": "remote-status", name, backend, arch}: tcfs remote status of
 * the mount's own remote.  Answers tcfs_remote_survey_status's object, or
 * {"url": null} when the mount has no remote. */
static int do_remote_status(struct tcfs_fs *fs, const cJSON *req,
			    cJSON **out)
{
	struct tcfs_kernel_filter f;
	int rc = read_filter(req, &f);

	return rc < 0 ? rc : fs_remote_status(fs, &f, out);
}

/* {"op": "remote-list", name, backend, arch}: the kernels the mount's own
 * remote holds that a tcfs remote pull takes.  Answers {"url", "items":
 * [{"key", "name"}, ...]}, or {"url": null} when it has none. */
static int do_remote_list(struct tcfs_fs *fs, const cJSON *req, cJSON **out)
{
	struct tcfs_kernel_filter f;
	int rc = read_filter(req, &f);

	return rc < 0 ? rc : fs_remote_list(fs, &f, out);
}

/* {"op": "promote", "key"?, "uid"?}: users' own kernels made shared
 * (tcfs trust promote).  Answers {"promoted": N}. */
static int do_promote(struct tcfs_fs *fs, const cJSON *req, cJSON **out)
{
	const cJSON *uid = cJSON_GetObjectItemCaseSensitive(req, "uid");
	const char *key = str_of(req, "key");
	size_t moved = 0;
	int rc;

	if (!fs->users)
		return tcfs_err_set(-EINVAL, "the mount is not shared (no -o "
				    "allow_other): no user has kernels of "
				    "their own");
	if (!key && !cJSON_IsNumber(uid))
		return tcfs_err_set(-EINVAL, "promote: say a key or a uid");
	rc = fs_users_promote(fs, key, cJSON_IsNumber(uid)
					       ? (int64_t)uid->valuedouble
					       : -1, &moved);
	*out = rc < 0 ? NULL : cJSON_CreateObject();
	if (rc == 0 && !*out)
		rc = -ENOMEM;
	if (rc == 0)
		cJSON_AddNumberToObject(*out, "promoted", (double)moved);
	return rc;
}

/* The answer to a request (len bytes of text; too_big when it ran past
 * CTL_REQUEST_MAX), as JSON text (owned by the caller, free()); NULL
 * when out of memory. */
static char *answer(struct tcfs_fs *fs, const char *text, size_t len,
		    int too_big)
{
	cJSON *req = NULL, *resp = NULL;
	const char *op;
	char *out;
	int rc = 0;

	tcfs_err_clear();
	if (too_big)
		rc = tcfs_err_set(-EMSGSIZE, "a request over %u bytes",
				  CTL_REQUEST_MAX);
	if (rc == 0 && !(req = cJSON_ParseWithLength(text, len)))
		rc = tcfs_err_set(-EINVAL, "a request that is not JSON");
	op = req ? str_of(req, "op") : NULL;
	if (rc == 0 && op && strcmp(op, "prune") == 0)
		rc = do_prune(fs, req, &resp);
	else if (rc == 0 && op && strcmp(op, "remote-fetch") == 0)
		rc = do_fetch(fs, req, &resp);
	else if (rc == 0 && op && strcmp(op, "promote") == 0)
		rc = do_promote(fs, req, &resp);
	else if (rc == 0 && op && strcmp(op, "gc") == 0)
		rc = do_gc(fs, req, &resp);
	else if (rc == 0 && op && strcmp(op, "remote-status") == 0)
		rc = do_remote_status(fs, req, &resp);
	else if (rc == 0 && op && strcmp(op, "remote-list") == 0)
		rc = do_remote_list(fs, req, &resp);
	else if (rc == 0)
		rc = tcfs_err_set(-EINVAL, "unknown request '%s'",
				  op ? op : "");
	if (rc < 0) {
		const char *msg = tcfs_err_msg();

		cJSON_Delete(resp);
		resp = cJSON_CreateObject();
		if (resp)
			cJSON_AddStringToObject(resp, "error",
						msg[0] ? msg : strerror(-rc));
	}
	out = resp ? cJSON_PrintUnformatted(resp) : NULL;
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return out;
}

static void conn_close(struct ctl_conn *c)
{
	assert(c->fd >= 0);
	close(c->fd);
	free(c->buf);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Sends what it can of the answer without waiting; closes the connection
 * once all of it is out, or the client is gone. */
static void conn_write(struct ctl_conn *c)
{
	while (c->sent < c->len) {
		ssize_t n = send(c->fd, c->buf + c->sent, c->len - c->sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			syslog(LOG_WARNING, "tcfs: %s: a command left before "
			       "its answer", CTL_NAME);
			break;
		}
		c->sent += (size_t)n;
	}
	conn_close(c);
}

/* The request is in: answers it, and starts sending the answer. */
static void conn_serve(struct tcfs_fs *fs, struct ctl_conn *c)
{
	char *text = answer(fs, c->buf, c->len, c->too_big);

	free(c->buf);
	c->buf = text;
	c->len = text ? strlen(text) : 0;
	c->sent = 0;
	c->writing = 1;
	c->deadline = fs_now_ms() + CTL_ANSWER_MS;
	conn_write(c);
}

/* Reads what has come of the request without waiting; past
 * CTL_REQUEST_MAX bytes it reads on to the end, keeping none, so that
 * the client, which writes all before it reads, gets the answer.  Of
 * that it reads one piece a call: a client that never stops writing
 * leaves the listener free for the others and runs into its deadline. */
static void conn_read(struct tcfs_fs *fs, struct ctl_conn *c)
{
	char sink[4096];

	for (;;) {
		int keep = !c->too_big && c->len < CTL_REQUEST_MAX;
		ssize_t n = keep ? recv(c->fd, c->buf + c->len,
					CTL_REQUEST_MAX - c->len, MSG_DONTWAIT)
				 : recv(c->fd, sink, sizeof(sink),
					MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) {
			conn_close(c);
			return;
		}
		if (n == 0)
			break;
		if (!keep) {
			c->too_big = 1;
			return;
		}
		c->len += (size_t)n;
	}
	conn_serve(fs, c);
}

static void conn_step(struct tcfs_fs *fs, struct ctl_conn *c)
{
	if (c->writing)
		conn_write(c);
	else
		conn_read(fs, c);
}

/* Closes a connection past its deadline, after a last look at what came
 * meanwhile (another's prune may have kept the listener busy): a client
 * that stalls holds up neither the others nor the unmount for longer. */
static void conn_expire(struct tcfs_fs *fs, struct ctl_conn *c, int64_t now)
{
	static const char late[] = "{\"error\":\"no whole request within "
				   "the time allowed\"}";

	if (c->fd < 0 || now < c->deadline)
		return;
	conn_step(fs, c);
	if (c->fd < 0 || fs_now_ms() < c->deadline)
		return;
	if (!c->writing)
		(void)!send(c->fd, late, sizeof(late) - 1,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
	else
		syslog(LOG_WARNING, "tcfs: %s: a command did not take its "
		       "answer in time", CTL_NAME);
	conn_close(c);
}

/* Takes a waiting client into a free slot.  One that is not the store's
 * owner (or root) gets its answer at once: the socket's directory should
 * have kept it out. */
static void ctl_accept(struct tcfs_fs *fs, struct ctl_conn *c)
{
	static const char refused[] = "{\"error\":\"not the store's owner\"}";
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd = accept4(fs->ctl->fd, NULL, NULL,
			 SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (cred.uid != 0 && cred.uid != fs->uid)) {
		(void)!send(fd, refused, sizeof(refused) - 1,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		return;
	}
	c->buf = malloc(CTL_REQUEST_MAX);
	if (!c->buf) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->deadline = fs_now_ms() + CTL_REQUEST_MS;
}

/* What to poll: the wake pipe, the socket while a slot is free, every
 * client; and how long until the first deadline (-1: none). */
static int poll_set(struct fs_ctl *ctl, struct pollfd *p, int *free_slot)
{
	int64_t first = -1;

	*free_slot = -1;
	p[0] = (struct pollfd){ ctl->wake[0], POLLIN, 0 };
	for (int i = 0; i < CTL_CONNS; i++) {
		const struct ctl_conn *c = &ctl->conns[i];

		p[2 + i] = (struct pollfd){ c->fd,
					    c->writing ? POLLOUT : POLLIN, 0 };
		if (c->fd < 0 && *free_slot < 0)
			*free_slot = i;
		if (c->fd >= 0 && (first < 0 || c->deadline < first))
			first = c->deadline;
	}
	p[1] = (struct pollfd){ *free_slot >= 0 ? ctl->fd : -1, POLLIN, 0 };
	return fs_ms_until(first);
}

/* One thread serves every client, none waited on alone: each is read and
 * written without blocking, with a deadline, so one that stalls delays
 * neither another nor the unmount (fs_ctl_stop). */
static void *listener(void *arg)
{
	struct tcfs_fs *fs = arg;
	struct fs_ctl *ctl = fs->ctl;
	struct pollfd p[2 + CTL_CONNS];

	for (;;) {
		int slot, timeout = poll_set(ctl, p, &slot);

		if (poll(p, 2 + CTL_CONNS, timeout) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		for (int i = 0; i < CTL_CONNS; i++)
			if (p[2 + i].revents && ctl->conns[i].fd >= 0)
				conn_step(fs, &ctl->conns[i]);
		for (int i = 0; i < CTL_CONNS; i++)
			conn_expire(fs, &ctl->conns[i], fs_now_ms());
		if (slot >= 0 && (p[1].revents & POLLIN))
			ctl_accept(fs, &ctl->conns[slot]);
	}
	for (int i = 0; i < CTL_CONNS; i++)
		if (ctl->conns[i].fd >= 0)
			conn_close(&ctl->conns[i]);
	return NULL;
}

int fs_ctl_start(struct tcfs_fs *fs)
{
	struct fs_ctl *ctl = calloc(1, sizeof(*ctl));
	const char *store = tcfs_store_path(fs->store);
	struct sockaddr_un a;
	int rc;

	if (!ctl)
		return -ENOMEM;
	ctl->fd = ctl->wake[0] = ctl->wake[1] = -1;
	for (int i = 0; i < CTL_CONNS; i++)
		ctl->conns[i].fd = -1;
	ctl->dirfd = open(store, O_PATH | O_DIRECTORY | O_CLOEXEC);
	rc = ctl->dirfd < 0 ? -errno : ctl_addr(store, ctl->dirfd, &a);
	if (rc == 0 && pipe2(ctl->wake, O_CLOEXEC) < 0)
		rc = -errno;
	if (rc == 0) {
		/* Non-blocking: a client that left between poll and
		 * accept must not stop the listener in accept. */
		ctl->fd = socket(AF_UNIX,
				 SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		rc = ctl->fd < 0 ? -errno : 0;
	}
	/* A socket left by a daemon that died: this one holds the writer
	 * lock, so no other is using it. */
	if (rc == 0) {
		snprintf(ctl->path, sizeof(ctl->path), "%s", a.sun_path);
		unlink(ctl->path);
	}
	if (rc == 0 && (bind(ctl->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
			listen(ctl->fd, 16) < 0))
		rc = -errno;
	fs->ctl = ctl;
	if (rc == 0)
		rc = fs_thread_start(&ctl->thread, listener, fs);
	if (rc < 0) {
		fs->ctl = NULL;
		if (ctl->fd >= 0)
			close(ctl->fd);
		if (ctl->wake[0] >= 0) {
			close(ctl->wake[0]);
			close(ctl->wake[1]);
		}
		if (ctl->dirfd >= 0)
			close(ctl->dirfd);
		free(ctl);
	}
	return rc;
}

void fs_ctl_stop(struct tcfs_fs *fs)
{
	struct fs_ctl *ctl = fs->ctl;

	if (!ctl)
		return;
	(void)!write(ctl->wake[1], "x", 1);
	pthread_join(ctl->thread, NULL);
	unlink(ctl->path);
	close(ctl->fd);
	close(ctl->wake[0]);
	close(ctl->wake[1]);
	close(ctl->dirfd);
	free(ctl);
	fs->ctl = NULL;
}

/* Whether the listener on fd (connected) may be the store's daemon: it
 * runs as root or as the store's owner.  Another user who can write the
 * store's dir could have put a socket of theirs in its place, to be sent
 * the request and to answer it.  0, or -EPERM with a message. */
static int ctl_peer_trusted(const char *store, int dirfd, int fd)
{
	struct ucred peer;
	socklen_t len = sizeof(peer);
	struct stat st;

	if (fstat(dirfd, &st) < 0)
		return tcfs_err_errno(-errno, "%s", store);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0)
		return tcfs_err_errno(-errno, "%s/%s", store, CTL_NAME);
	if (peer.uid == 0 || peer.uid == st.st_uid)
		return 0;
	return tcfs_err_set(-EPERM, "%s/%s: its listener runs as uid %u, "
			    "which is neither root nor the store's owner "
			    "(uid %u): not the mount's daemon, not asked",
			    store, CTL_NAME, (unsigned)peer.uid,
			    (unsigned)st.st_uid);
}

int tcfs_fs_ctl_call(const char *store, const cJSON *req, cJSON **resp)
{
	int dirfd = open(store, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = -1, rc;
	struct sockaddr_un a;
	struct pollfd p;
	char *text = NULL;
	size_t len = 0;

	*resp = NULL;
	rc = dirfd < 0 ? -errno : ctl_addr(store, dirfd, &a);
	if (rc == 0) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		rc = fd < 0 ? -errno : 0;
	}
	if (rc == 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		rc = tcfs_err_errno(-errno, "%s/%s: cannot reach the mount's "
				    "daemon", store, CTL_NAME);
	if (rc == 0)
		rc = ctl_peer_trusted(store, dirfd, fd);
	if (rc == 0) {
		text = cJSON_PrintUnformatted(req);
		rc = text ? tcfs_io_write_all(fd, text, strlen(text)) : -ENOMEM;
		free(text);
		text = NULL;
	}
	if (rc == 0 && shutdown(fd, SHUT_WR) < 0)
		rc = -errno;
	p.fd = fd;
	p.events = POLLIN;
	if (rc == 0 && poll(&p, 1, CTL_TIMEOUT_MS) <= 0)
		rc = tcfs_err_set(-ETIMEDOUT, "%s/%s: no answer from the "
				  "mount's daemon", store, CTL_NAME);
	if (rc == 0)
		rc = tcfs_io_read_small(fd, CTL_ANSWER_MAX, &text, &len);
	if (rc == -EFBIG)
		rc = tcfs_err_set(-EMSGSIZE, "%s/%s: the daemon's answer is "
				  "over %u bytes", store, CTL_NAME,
				  CTL_ANSWER_MAX);
	if (rc == 0 && !(*resp = cJSON_ParseWithLength(text, len)))
		rc = tcfs_err_set(-EPROTO, "%s/%s: the daemon's answer is "
				  "not JSON", store, CTL_NAME);
	free(text);
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	return rc;
}
