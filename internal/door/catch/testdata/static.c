/* A static program (no libc wrappers to interpose on): opens argv[1], a
 * namespace name of an echo server, writes a line and prints the reply
 * and what the descriptor is. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 2) return 2;
	int fd = open(argv[1], O_RDWR);
	if (fd < 0) { perror(argv[1]); return 1; }
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) printf("socket\n");
	const char *msg = "static ping\n";
	if (write(fd, msg, strlen(msg)) != (ssize_t)strlen(msg)) { perror("write"); return 1; }
	char buf[256];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n <= 0) { perror("read"); return 1; }
	buf[n] = 0;
	printf("%s", buf);
	return 0;
}
