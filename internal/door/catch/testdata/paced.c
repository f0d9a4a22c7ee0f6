/* paced HOST PORT: connects, prints the socket's SO_MAX_PACING_RATE and
 * that of a UDP socket, then a listening socket's. Built -static by
 * the tests: the catcher traps calls in the kernel, not in libc. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#ifndef SO_MAX_PACING_RATE
#define SO_MAX_PACING_RATE 47
#endif

static long long rate(int s) {
	unsigned long long v = 0;
	socklen_t n = sizeof v;
	if (getsockopt(s, SOL_SOCKET, SO_MAX_PACING_RATE, &v, &n) < 0) return -2;
	return n == 4 ? (long long)(int)(unsigned)v : (long long)v;
}

int main(int argc, char **argv) {
	if (argc != 3) return 2;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
	inet_pton(AF_INET, argv[1], &a.sin_addr);
	int t = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(t, (struct sockaddr *)&a, sizeof a) < 0) { perror("connect"); return 1; }
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	connect(u, (struct sockaddr *)&a, sizeof a);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in any = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.0.1", &any.sin_addr);
	bind(l, (struct sockaddr *)&any, sizeof any);
	listen(l, 1);
	printf("tcp %lld udp %lld listen %lld\n", rate(t), rate(u), rate(l));
	return 0;
}
