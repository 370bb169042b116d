/* The PHP manual's EventHttp::bind() example in C against libevent 2.1 (the peer of tools/bench/evhttp.ts):
 * GET /about answers 200 "OK", anything else evhttp's 404. Usage: libevent-about PORT (prints "ready" once bound
 * on 127.0.0.1). Built by the bench with the system cc when libevent-dev is installed. */
#include <event2/event.h>
#include <event2/http.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>

static void about(struct evhttp_request *req, void *arg)
{
	struct evbuffer *out = evbuffer_new();
	(void)arg;
	evbuffer_add(out, "OK", 2);
	evhttp_send_reply(req, 200, "OK", out);
	evbuffer_free(out);
}

int main(int argc, char **argv)
{
	struct event_base *base = event_base_new();
	struct evhttp *http = evhttp_new(base);
	if (argc < 2 || base == NULL || http == NULL) return 2;
	evhttp_set_cb(http, "/about", about, NULL);
	if (evhttp_bind_socket(http, "127.0.0.1", (unsigned short)atoi(argv[1])) != 0) { perror("bind"); return 1; }
	printf("ready\n");
	fflush(stdout);
	event_base_dispatch(base);
	return 0;
}
