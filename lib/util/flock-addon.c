/*
 * berth-flock.node: flock(2) for the daemon's root locks (lib/util/dir-lock.ts), as a Node-API module the daemon
 * loads with process.dlopen instead of spawning a child to take them: the spawn cost a restart ~4 ms of the main
 * thread's CPU before /_ping (fork of a ~55 MB process, the child's pipe and exit) and a child's run on a busy machine
 * (tools/bench/README.md, "Restart, round six").
 *
 *   lock(fd) -> 0 when the open file description behind fd now holds an exclusive flock lock, -errno otherwise
 *               (-EWOULDBLOCK: another holds it). LOCK_EX | LOCK_NB: never waits.
 *
 * Built by tools/build-flock.mjs into dist/berth-flock.node; without it (no C compiler) the daemon spawns the
 * monitor binary's `lock` mode as before. No Node headers are needed: the few Node-API functions used are declared
 * here as Node's documentation gives them (Node-API is a stable C ABI; node exports them to the modules it loads).
 */
#include <errno.h>
#include <stddef.h>
#include <sys/file.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status; /* napi_ok is 0 */
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);

extern napi_status napi_get_cb_info(napi_env env, napi_callback_info cbinfo, size_t *argc, napi_value *argv,
				    napi_value *this_arg, void **data);
extern napi_status napi_get_value_int32(napi_env env, napi_value value, int *result);
extern napi_status napi_create_int32(napi_env env, int value, napi_value *result);
extern napi_status napi_create_function(napi_env env, const char *utf8name, size_t length, napi_callback cb,
					void *data, napi_value *result);
extern napi_status napi_set_named_property(napi_env env, napi_value object, const char *utf8name, napi_value value);

static napi_value lock(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value argv[1];
	napi_value out;
	int fd = -1;
	int rc;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != 0 || argc < 1 ||
	    napi_get_value_int32(env, argv[0], &fd) != 0 || fd < 0)
		rc = -EBADF;
	else {
		do
			rc = flock(fd, LOCK_EX | LOCK_NB);
		while (rc < 0 && errno == EINTR);
		if (rc < 0)
			rc = -errno;
	}
	if (napi_create_int32(env, rc, &out) != 0)
		return NULL;
	return out;
}

/* Node-API 1 is all this uses (Node asks a module for the version it was built for, when it says) */
int node_api_module_get_api_version_v1(void)
{
	return 1;
}

napi_value napi_register_module_v1(napi_env env, napi_value exports)
{
	napi_value fn;

	if (napi_create_function(env, "lock", 4, lock, NULL, &fn) != 0 ||
	    napi_set_named_property(env, exports, "lock", fn) != 0)
		return NULL;
	return exports;
}
