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
 * The handler prints "alarm". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void alarmed(int sig) {
	(void)sig;
	write(1, "alarm\n", 6);
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	int flags = O_RDWR;
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
	close(fd);
	return 0;
}
