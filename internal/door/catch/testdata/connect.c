/* Opens argv[1], a namespace name of a TCP client, and prints how the open
 * ended: "open ok" or "open ENAME" (ECONNREFUSED, ETIMEDOUT, EINTR...).
 * Built dynamic (under the fast path the library connects in this thread)
 * and static (the supervisor connects). Options after the name:
 *   watch     another thread prints which system call the opening thread
 *             waits in half a second into the open: "waits in connect"
 *             or "waits in openat"
 *   intr      SIGALRM 300 ms into the open, its handler without SA_RESTART
 *   restart   the same, with SA_RESTART
 *   nonblock  the open asks for O_NONBLOCK; prints "nonblocking" if the
 *             descriptor is
 *   cloexec   the open asks for O_CLOEXEC; prints "cloexec" if the
 *             descriptor is
 *   echo      writes a line to the connection and reads it back (an echo
 *             server): prints "echo ok" or why not
 *   owner     prints "owner UID": the user that owns the socket, as
 *             /proc/net/tcp shows it (whoever made it)
 *   again     then opens the name three times more, each with the same
 *             flags and closed (echoed first under echo): prints
 *             "again ok" or "again: open ENAME"
 * The handler prints "alarm". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static pid_t opener;

static void *watch(void *arg) {
	(void)arg;
	char name[64], buf[64];
	snprintf(name, sizeof name, "/proc/self/task/%d/syscall", opener);
	int fd = open(name, O_RDONLY);
	if (fd < 0)
		return NULL;
	usleep(500000); /* well into a connect that times out after a second */
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n > 0) {
		buf[n] = 0;
		long nr = strtol(buf, NULL, 10);
		if (nr == 42 || nr == 257) { /* x86-64 connect, openat */
			printf("waits in %s\n", nr == 42 ? "connect" : "openat");
			fflush(stdout);
		}
	}
	close(fd);
	return NULL;
}

/* echo writes a line to fd and reads it back. */
static void echo(int fd) {
	const char line[] = "ping through the socket\n";
	char buf[sizeof line];
	size_t got = 0;
	if (write(fd, line, sizeof line - 1) != (ssize_t)(sizeof line - 1)) {
		printf("echo: write: %s\n", strerrorname_np(errno));
		return;
	}
	while (got < sizeof line - 1) {
		ssize_t n = read(fd, buf + got, sizeof line - 1 - got);
		if (n <= 0) {
			printf("echo: read: %zd %s\n", n, n < 0 ? strerrorname_np(errno) : "EOF");
			return;
		}
		got += n;
	}
	printf(memcmp(buf, line, got) == 0 ? "echo ok\n" : "echo: other bytes\n");
}

/* owner prints the uid /proc/net/tcp shows for the socket fd. */
static void owner(int fd) {
	struct sockaddr_in sa;
	socklen_t len = sizeof sa;
	if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 || sa.sin_family != AF_INET) {
		printf("owner: not an IPv4 socket\n");
		return;
	}
	char want[16], line[256];
	snprintf(want, sizeof want, ":%04X", ntohs(sa.sin_port));
	FILE *f = fopen("/proc/net/tcp", "r");
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		char local[64];
		unsigned uid;
		/* sl local rem st tx:rx tr:when retrnsmt uid */
		if (sscanf(line, "%*s %63s %*s %*s %*s %*s %*s %u", local, &uid) == 2 &&
			strlen(local) > strlen(want) && strcmp(local + strlen(local) - strlen(want), want) == 0) {
			printf("owner %u\n", uid);
			fclose(f);
			return;
		}
	}
	printf("owner: not in /proc/net/tcp\n");
	if (f != NULL)
		fclose(f);
}

static void alarmed(int sig) {
	(void)sig;
	write(1, "alarm\n", 6);
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	int flags = O_RDWR, echoes = 0, owners = 0, again = 0;
	opener = gettid();
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "watch") == 0) {
			pthread_t t;
			pthread_create(&t, NULL, watch, NULL);
			pthread_detach(t);
		} else if (strcmp(argv[i], "intr") == 0 || strcmp(argv[i], "restart") == 0) {
			struct sigaction sa = {.sa_handler = alarmed};
			if (strcmp(argv[i], "restart") == 0)
				sa.sa_flags = SA_RESTART;
			sigaction(SIGALRM, &sa, NULL);
			struct itimerval it = {.it_value = {.tv_usec = 300000}};
			setitimer(ITIMER_REAL, &it, NULL);
		} else if (strcmp(argv[i], "nonblock") == 0) {
			flags |= O_NONBLOCK;
		} else if (strcmp(argv[i], "cloexec") == 0) {
			flags |= O_CLOEXEC;
		} else if (strcmp(argv[i], "echo") == 0) {
			echoes = 1;
		} else if (strcmp(argv[i], "owner") == 0) {
			owners = 1;
		} else if (strcmp(argv[i], "again") == 0) {
			again = 1;
		} else {
			return 2;
		}
	}
	int fd = open(argv[1], flags);
	int e = errno;
	fflush(stdout);
	if (fd < 0) {
		printf("open %s\n", strerrorname_np(e));
		return 0;
	}
	printf("open ok\n");
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
		printf("not a socket\n");
	if (fcntl(fd, F_GETFL) & O_NONBLOCK)
		printf("nonblocking\n");
	if (fcntl(fd, F_GETFD) & FD_CLOEXEC)
		printf("cloexec\n");
	if (echoes)
		echo(fd);
	if (owners)
		owner(fd);
	close(fd);
	if (again) {
		for (int i = 0; i < 3; i++) {
			fd = open(argv[1], flags);
			if (fd < 0) {
				printf("again: open %s\n", strerrorname_np(errno));
				return 0;
			}
			if (echoes)
				echo(fd);
			close(fd);
		}
		printf("again ok\n");
	}
	return 0;
}
