/* Prints the layout of fastpath.c's struct connect_answer and its
 * constants, for TestConnectAnswerLayout: offsets of kind, addr, netns,
 * type, protocol, options, user_timeout, the size, ANSWER_CONNECT,
 * ANSWER_MAKE, OPT_NODELAY, OPT_REUSABLE, CONNECT_MAGIC, SOCKET_MAGIC. */
#include "../fastpath/fastpath.c"
#include <stddef.h>
#include <stdio.h>

int main(void) {
	printf("%zu %zu %zu %zu %zu %zu %zu %zu %d %d %d %d %ld %ld\n",
		offsetof(struct connect_answer, kind), offsetof(struct connect_answer, addr),
		offsetof(struct connect_answer, netns), offsetof(struct connect_answer, type),
		offsetof(struct connect_answer, protocol), offsetof(struct connect_answer, options),
		offsetof(struct connect_answer, user_timeout), sizeof(struct connect_answer),
		ANSWER_CONNECT, ANSWER_MAKE, OPT_NODELAY, OPT_REUSABLE, CONNECT_MAGIC, SOCKET_MAGIC);
	return 0;
}
