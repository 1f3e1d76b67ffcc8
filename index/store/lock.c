/* lock: the one writer of a store (flock on STORE/lock). */
#include "index/store/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/base/io.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The pid holding an flock on fd's file, from /proc/locks: the pid tcfs
 * wrote into the file may be a writer long gone, and the holder may not be
 * tcfs at all (flock(1), a backup tool). */
static long flock_holder(int fd)
{
	char line[256];
	struct stat st;
	long pid = -1;
	FILE *f;

	if (fstat(fd, &st) < 0 || !(f = fopen("/proc/locks", "re")))
		return -1;
	while (pid < 0 && fgets(line, sizeof(line), f)) {
		unsigned long long ino;
		unsigned maj, min;
		long p;

		if (sscanf(line, "%*d: FLOCK %*s %*s %ld %x:%x:%llu", &p, &maj,
			   &min, &ino) == 4 &&
		    ino == (unsigned long long)st.st_ino &&
		    makedev(maj, min) == st.st_dev)
			pid = p;
	}
	fclose(f);
	return pid;
}

/* "pid N (command)" of the holder, for the message. */
static void read_holder(int fd, char *buf, size_t len)
{
	long pid = flock_holder(fd);
	char comm[64] = "", path[64];
	FILE *f;

	if (pid < 0) {
		snprintf(buf, len, "unknown pid");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	snprintf(buf, len, "pid %ld%s%s%s", pid, comm[0] ? " (" : "", comm,
		 comm[0] ? ")" : "");
}

static void write_holder(int fd)
{
	char self[256] = "", line[300];
	FILE *f = fopen("/proc/self/cmdline", "re");
	size_t got = 0;

	if (f) {
		got = fread(self, 1, sizeof(self) - 1, f);
		fclose(f);
		for (size_t i = 0; i + 1 < got; i++)
			if (self[i] == '\0')
				self[i] = ' ';
		self[got] = '\0';
	}
	snprintf(line, sizeof(line), "%ld %s\n", (long)getpid(), self);
	if (ftruncate(fd, 0) == 0)
		tcfs_io_pwrite_all(fd, line, strlen(line), 0);
}

/* Whether flock's failure is another's hold (0), or -errno. */
static int held_elsewhere(const char *storepath)
{
	if (errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	return tcfs_err_errno(-errno, "%s/lock", storepath);
}

int tcfs_lock_writer(int storefd, const char *storepath, double wait_s,
		     tcfs_lock_busy_fn *busy, void *ctx)
{
	double deadline = now_s() + wait_s;
	char holder[256];
	int fd, rc, told = 0;

	fd = openat(storefd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return tcfs_err_errno(-errno, "%s/lock", storepath);
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = held_elsewhere(storepath);
		if (rc == 0 && !told && busy) {
			read_holder(fd, holder, sizeof(holder));
			rc = busy(ctx, holder);
		}
		told = 1;
		if (rc == 0 && now_s() >= deadline) {
			read_holder(fd, holder, sizeof(holder));
			rc = tcfs_err_set(-EBUSY, "%s: store is in use by "
					  "another writer, %s; waited %.0f s",
					  storepath, holder, wait_s);
		}
		if (rc < 0) {
			close(fd);
			return rc;
		}
		usleep(50 * 1000);
	}
	write_holder(fd);
	return fd;
}
