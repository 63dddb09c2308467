/*
 * fd4client: a native client for the tests. It asks libegress for a stream to HOST:PORT
 * over descriptor 4, sends a line and prints what comes back ("ok <echo>"), or prints the
 * reason of a refusal. Usage: fd4client HOST PORT
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EGRESS_ASAN_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define EGRESS_ASAN_BUILD 1
#endif
#ifdef EGRESS_ASAN_BUILD
/*
 * Sanitizer builds only: inside the sandbox ptrace is forbidden, and LeakSanitizer needs
 * it at exit; it would fail the exit status of a program that did nothing wrong.
 */
int __lsan_is_turned_off(void);
int
__lsan_is_turned_off(void)
{
	return 1;
}
#endif

int
main(int argc, char **argv)
{
	static const char ping[] = "ping over fd 4\n";
	char buf[64];
	size_t got = 0;
	int fd;

	if (argc != 3)
		return 2;
	fd = egress_fd4_connect(4, argv[1], (uint16_t)atoi(argv[2]), 10000);
	if (fd < 0) {
		printf("refused %s\n", egress_strerror(fd));
		return 1;
	}
	if (write(fd, ping, sizeof(ping) - 1) != (ssize_t)(sizeof(ping) - 1))
		return 1;
	while (got < sizeof(ping) - 1) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	printf("ok %s", buf);
	close(fd);
	return 0;
}
