/*
 * --remove-tree DIR (repeatable, container mode): an auto-removed container's writable layer and the overlay's work
 * and mount directories, deleted by its monitor once the process has exited and the root filesystem is unmounted
 * (after the exit was told, before exit.json): the daemon's removal then has little left to delete. The tree is the
 * container's own writing: no link is followed (each entry is removed relative to its directory's descriptor, every
 * directory opened O_NOFOLLOW), no mount is crossed (a directory on another device is left), and what lies deeper
 * than REMOVE_DEPTH_MAX or cannot be removed is left for the daemon, which deletes what remains. With
 * --keep-trees-if FILE, nothing is removed when FILE exists at the exit: a manual restart keeps the container.
 */
#define _GNU_SOURCE
#include "shim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REMOVE_TREES_MAX 4
#define REMOVE_DEPTH_MAX 32

static const char *trees[REMOVE_TREES_MAX];
static int ntrees;
/* --keep-trees-if FILE: the trees stay when FILE exists at the exit (the daemon restarts the container: docker restart) */
static const char *keep_marker;

bool remove_tree_option(const char *value)
{
	if (ntrees == REMOVE_TREES_MAX || value[0] != '/')
		return false;
	trees[ntrees++] = value;
	return true;
}

bool remove_tree_keep_option(const char *value)
{
	if (keep_marker != NULL || value[0] != '/')
		return false;
	keep_marker = value;
	return true;
}

bool remove_tree_wanted(void)
{
	return ntrees > 0;
}

/* Empties the directory open at fd (taken: closed here) on device dev; false when something stays. */
static bool empty_dir(int fd, dev_t dev, int depth)
{
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return false;
	}
	bool all = true;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		const char *name = e->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), name, 0) == 0)
			continue;
		if (errno != EISDIR && errno != EPERM) {
			all = false;
			continue;
		}
		int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (sub < 0 || fstat(sub, &st) < 0 || st.st_dev != dev || depth >= REMOVE_DEPTH_MAX) {
			if (sub >= 0)
				close(sub);
			all = false;
			continue;
		}
		if (!empty_dir(sub, dev, depth + 1) || unlinkat(dirfd(d), name, AT_REMOVEDIR) < 0)
			all = false;
	}
	closedir(d);
	return all;
}

static void remove_one(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return; /* gone already, or not a directory: the daemon's to see */
	}
	if (empty_dir(fd, st.st_dev, 1) && rmdir(path) < 0)
		diag("rmdir %s: %s", path, strerror(errno));
}

void remove_trees(void)
{
	if (keep_marker != NULL && access(keep_marker, F_OK) == 0)
		return;
	for (int i = 0; i < ntrees; i++)
		remove_one(trees[i]);
}
