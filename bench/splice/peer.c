/* peer: the C ends of bench/splice/run.sh.
 *   peer sink PORT READYFD      accept one client, read to EOF, print "bytes seconds"
 *                               (from accept to EOF); writes "r\n" to READYFD once listening
 *   peer rw FILE HOST PORT      read(2)/write(2) loop, 64 KiB
 *   peer sendfile FILE HOST PORT  sendfile(2) loop
 *   peer server PORT READYFD    accept loop: read each client to EOF, answer "ok", close
 *   peer conns N HOST PORT      N short requests one after another (connect, 100 bytes,
 *                               shut down the write side, read the answer, close); prints
 *                               requests per second
 *   peer cpu OUT CMD ARG...     runs CMD and writes "elapsed user system" (seconds, to the
 *                               microsecond: getrusage of CMD and what it waited for) to OUT;
 *                               exits with CMD's status (/usr/bin/time rounds to 10 ms, which
 *                               is 10 % of a 1 GiB sendfile's CPU on the shaped link)
 * Clients retry connect for 5 s (the relay under test may still be starting). */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) { perror(what); exit(1); }

static int dial(const char *host, int port) {
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, host, &a.sin_addr);
	double until = now() + 5;
	for (;;) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(s, (void *)&a, sizeof a) == 0) return s;
		close(s);
		if (now() > until) die("connect");
		usleep(1000);
	}
}

int main(int argc, char **argv) {
	if (argc >= 4 && !strcmp(argv[1], "cpu")) {
		double t0 = now();
		pid_t pid = fork();
		if (pid < 0) die("fork");
		if (pid == 0) {
			execvp(argv[3], argv + 3);
			die("exec");
		}
		int status;
		struct rusage ru;
		if (wait4(pid, &status, 0, &ru) < 0) die("wait4");
		FILE *out = fopen(argv[2], "w");
		if (!out) die("open");
		fprintf(out, "%.6f %.6f %.6f\n", now() - t0, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
		        ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
		fclose(out);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	if (argc == 4 && !strcmp(argv[1], "sink")) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
		if (bind(l, (void *)&a, sizeof a) || listen(l, 16)) die("listen");
		int r = atoi(argv[3]);
		if (write(r, "r\n", 2) != 2) die("ready");
		close(r);
		int c = accept(l, 0, 0);
		if (c < 0) die("accept");
		double t0 = now();
		static char buf[256 << 10];
		long long total = 0;
		ssize_t n;
		while ((n = read(c, buf, sizeof buf)) > 0) total += n;
		printf("%lld %.6f\n", total, now() - t0);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "server")) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
		if (bind(l, (void *)&a, sizeof a) || listen(l, 128)) die("listen");
		int r = atoi(argv[3]);
		if (write(r, "r\n", 2) != 2) die("ready");
		close(r);
		for (;;) {
			int c = accept(l, 0, 0);
			if (c < 0) die("accept");
			char buf[4096];
			while (read(c, buf, sizeof buf) > 0)
				;
			if (write(c, "ok", 2) != 2) { /* the client went away */ }
			close(c);
		}
	}
	if (argc == 5 && !strcmp(argv[1], "conns")) {
		int n = atoi(argv[2]);
		char req[100] = {0}, buf[64];
		double t0 = now();
		for (int i = 0; i < n; i++) {
			int s = dial(argv[3], atoi(argv[4]));
			if (write(s, req, sizeof req) != sizeof req) die("write");
			shutdown(s, SHUT_WR);
			while (read(s, buf, sizeof buf) > 0)
				;
			close(s);
		}
		printf("%.1f\n", n / (now() - t0));
		return 0;
	}
	if (argc == 5) {
		int f = open(argv[2], O_RDONLY);
		if (f < 0) die("open");
		int s = dial(argv[3], atoi(argv[4]));
		if (!strcmp(argv[1], "rw")) {
			static char buf[64 << 10];
			ssize_t n;
			while ((n = read(f, buf, sizeof buf)) > 0)
				for (ssize_t o = 0; o < n;) {
					ssize_t w = write(s, buf + o, n - o);
					if (w < 0) die("write");
					o += w;
				}
		} else if (!strcmp(argv[1], "sendfile")) {
			struct stat st;
			fstat(f, &st);
			off_t off = 0;
			while (off < st.st_size)
				if (sendfile(s, f, &off, st.st_size - off) < 0) die("sendfile");
		} else {
			return 2;
		}
		close(s);
		return 0;
	}
	fprintf(stderr, "usage: peer sink PORT READYFD | peer rw|sendfile FILE HOST PORT\n");
	return 2;
}
