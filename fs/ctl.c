/*
 * ctl: STORE/ctl.sock, the mount's control socket, both ends.
 *
 * While a store is mounted its daemon is its only writer, so a command
 * that must change the store (tcfs prune) asks the daemon to do it: one
 * connection per request, a JSON object each way, the request ended by
 * shutting down the writing side.  The socket lives in the store
 * directory (mode 0700), so only its owner (or root) can connect; the
 * daemon checks the peer's uid too.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "fs.h"
#include "index/err.h"
#include "index/io.h"
#include "index/prune.h"
#include "index/store.h"
#include "priv.h"

#define CTL_NAME "ctl.sock"
/* A request is a few filters: anything longer is not one. */
#define CTL_REQUEST_MAX (64u << 10)
/* A report names every kernel pruned: 100,000 of them fit. */
#define CTL_ANSWER_MAX (256u << 20)
/* How long a command waits for the daemon's answer. */
#define CTL_TIMEOUT_MS (10 * 60 * 1000)

struct fs_ctl {
	pthread_t thread;
	int fd;			/* listening */
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

/* {"op": "prune", name, backend, arch, unused_since (ns), ir}: the report
 * of tcfs_prune_report_json. */
static cJSON *do_prune(struct tcfs_fs *fs, const cJSON *req)
{
	const cJSON *since = cJSON_GetObjectItemCaseSensitive(req,
							      "unused_since");
	struct tcfs_prune_select sel = {
		{ str_of(req, "name"), str_of(req, "backend"),
		  str_of(req, "arch") },
		cJSON_IsNumber(since) ? (int64_t)since->valuedouble : -1,
	};
	enum tcfs_prune_how how =
		cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "ir"))
			? TCFS_PRUNE_IR
			: TCFS_PRUNE_WHOLE;
	struct tcfs_prune_victim *v = NULL;
	struct tcfs_prune_report r = { 0 };
	cJSON *out = NULL;
	size_t n = 0;
	int rc;

	fs_files_flush_all(fs);
	rc = tcfs_prune_pick(fs->store, &sel, &v, &n);
	if (rc == 0)
		rc = fs_evict_prune(fs, v, n, how, &r);
	if (rc == 0)
		rc = tcfs_store_sync(fs->store);
	if (rc == 0)
		out = tcfs_prune_report_json(&r, how, 0);
	tcfs_prune_report_free(&r);
	free(v);
	return rc < 0 || !out ? NULL : out;
}

/* Serves one connection: a request in, an answer out. */
static void serve_one(struct tcfs_fs *fs, int c)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	cJSON *req = NULL, *resp = NULL;
	const char *op;
	char *text = NULL;
	size_t len_in = 0;
	int rc;

	tcfs_err_clear();
	rc = getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ? -errno
									 : 0;
	if (rc == 0 && cred.uid != 0 && cred.uid != fs->uid)
		rc = tcfs_err_set(-EPERM, "not the store's owner");
	if (rc == 0)
		rc = tcfs_io_read_small(c, CTL_REQUEST_MAX, &text, &len_in);
	if (rc == -EFBIG)
		rc = tcfs_err_set(-EMSGSIZE, "a request over %u bytes",
				  CTL_REQUEST_MAX);
	if (rc == 0 && !(req = cJSON_ParseWithLength(text, len_in)))
		rc = tcfs_err_set(-EINVAL, "a request that is not JSON");
	op = req ? str_of(req, "op") : NULL;
	if (rc == 0 && (!op || strcmp(op, "prune") != 0))
		rc = tcfs_err_set(-EINVAL, "unknown request '%s'",
				  op ? op : "");
	if (rc == 0 && !(resp = do_prune(fs, req)))
		rc = -EIO;
	if (rc < 0) {
		const char *msg = tcfs_err_msg();

		cJSON_Delete(resp);
		resp = cJSON_CreateObject();
		if (resp)
			cJSON_AddStringToObject(resp, "error",
						msg[0] ? msg : strerror(-rc));
	}
	free(text);
	text = resp ? cJSON_PrintUnformatted(resp) : NULL;
	if (text && tcfs_io_write_all(c, text, strlen(text)) < 0)
		syslog(LOG_WARNING, "tcfs: %s: a command left before its "
		       "answer", CTL_NAME);
	free(text);
	cJSON_Delete(req);
	cJSON_Delete(resp);
}

static void *listener(void *arg)
{
	struct tcfs_fs *fs = arg;
	struct fs_ctl *ctl = fs->ctl;

	for (;;) {
		struct pollfd p[2] = { { ctl->fd, POLLIN, 0 },
				       { ctl->wake[0], POLLIN, 0 } };
		int c;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		c = accept4(ctl->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		serve_one(fs, c);
		close(c);
	}
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
	ctl->dirfd = open(store, O_PATH | O_DIRECTORY | O_CLOEXEC);
	rc = ctl->dirfd < 0 ? -errno : ctl_addr(store, ctl->dirfd, &a);
	if (rc == 0 && pipe2(ctl->wake, O_CLOEXEC) < 0)
		rc = -errno;
	if (rc == 0) {
		ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
