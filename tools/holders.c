/* holders: who keeps a mount point busy. */
#include "holders.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/base/utf8.h"

/* Whether path is mp or lies under it ("(deleted)" after a path counts:
 * the file is still open in the mount). */
static int under(const char *path, const char *mp)
{
	size_t n = strlen(mp);

	return strncmp(path, mp, n) == 0 && (path[n] == '\0' || path[n] == '/' ||
					      path[n] == ' ');
}

/* Whether the link at /proc/PID/name points under mp. */
static int link_under(const char *dir, const char *name, const char *mp)
{
	char path[PATH_MAX], to[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	n = readlink(path, to, sizeof(to) - 1);
	if (n < 0)
		return 0;
	to[n] = '\0';
	return under(to, mp);
}

static int fd_under(const char *dir, const char *mp)
{
	char path[64];	/* /proc/PID/fd */
	struct dirent *de;
	int yes = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/fd", dir);
	d = opendir(path);
	while (d && !yes && (de = readdir(d)))
		yes = de->d_name[0] != '.' && link_under(path, de->d_name, mp);
	if (d)
		closedir(d);
	return yes;
}

/* A mapped file's path is the maps line's sixth field. */
static int map_under(const char *dir, const char *mp)
{
	char path[64], line[PATH_MAX + 256], *p;
	int yes = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/maps", dir);
	f = fopen(path, "re");
	while (f && !yes && fgets(line, sizeof(line), f)) {
		p = strchr(line, '/');
		line[strcspn(line, "\n")] = '\0';
		yes = p && under(p, mp);
	}
	if (f)
		fclose(f);
	return yes;
}

static void print_one(const char *dir, long pid, FILE *out)
{
	char path[64], comm[64] = "?", shown[4 * sizeof(comm)];
	FILE *f;

	snprintf(path, sizeof(path), "%s/comm", dir);
	f = fopen(path, "re");
	if (f && fgets(comm, sizeof(comm), f))
		comm[strcspn(comm, "\n")] = '\0';
	if (f)
		fclose(f);
	fprintf(out, "%7ld %s\n", pid,
		tcfs_utf8_printable(comm, shown, sizeof(shown)));
}

size_t holders_print(const char *mp, pid_t self, FILE *out)
{
	DIR *proc = opendir("/proc");
	struct dirent *de;
	size_t n = 0;

	while (proc && (de = readdir(proc))) {
		char dir[32], *end;	/* /proc/PID */
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == (long)self)
			continue;
		snprintf(dir, sizeof(dir), "/proc/%ld", pid);
		if (!link_under(dir, "cwd", mp) && !link_under(dir, "root", mp) &&
		    !fd_under(dir, mp) && !map_under(dir, mp))
			continue;
		if (n++ == 0)
			fprintf(out, "%7s %s\n", "PID", "COMMAND");
		print_one(dir, pid, out);
	}
	if (proc)
		closedir(proc);
	return n;
}
