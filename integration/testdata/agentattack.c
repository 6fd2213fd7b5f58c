/* agentattack: what a hostile sandbox tries on the ssh agent it is given
 * ($SSH_AUTH_SOCK), one line of output per attempt (TestSSHAgentOptIn reads them):
 *   RAW <type> <answer type or CLOSED>   a request of that type sent as it is
 *   HUGE <ANSWERED|CLOSED>               a frame longer than the protocol allows
 *   MANY <answered> <of>                 connections held open at once, each listing
 *   AFTER <ok|FAILED>                    a listing once those are closed
 *   HIJACK <pid> <wrote|failed>          requests written straight onto the output of
 *                                        the process in the container that carries the
 *                                        agent's connections (the docker isolator's),
 *                                        bypassing its socket
 * Built static on the host (the test images are Debian, as the host). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static int dial(void) {
	const char *p = getenv("SSH_AUTH_SOCK");
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 10};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || !p) return -1;
	strncpy(a.sun_path, p, sizeof a.sun_path - 1);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { close(fd); return -1; }
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

/* answer reads one answer and returns its type, or -1 when the connection ended. */
static int answer(int fd) {
	unsigned char h[5];
	size_t got = 0;
	while (got < sizeof h) {
		ssize_t n = read(fd, h + got, sizeof h - got);
		if (n <= 0) return -1;
		got += n;
	}
	unsigned len = (unsigned)h[0] << 24 | h[1] << 16 | h[2] << 8 | h[3];
	char sink[4096];
	for (unsigned left = len - 1; left > 0;) {
		ssize_t n = read(fd, sink, left < sizeof sink ? left : sizeof sink);
		if (n <= 0) return -1;
		left -= n;
	}
	return h[4];
}

static void raw(int type) {
	unsigned char m[] = {0, 0, 0, 1, (unsigned char)type};
	int fd = dial();
	if (fd < 0) { printf("RAW %d NODIAL\n", type); return; }
	int t = write(fd, m, sizeof m) == sizeof m ? answer(fd) : -1;
	if (t < 0) printf("RAW %d CLOSED\n", type); else printf("RAW %d %d\n", type, t);
	close(fd);
}

static void hijack(void) {
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[64], cmd[512] = {0};
		int pid = atoi(e->d_name);
		if (pid <= 0 || pid == getpid()) continue;
		snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
		int fd = open(path, O_RDONLY);
		if (fd < 0) continue;
		ssize_t n = read(fd, cmd, sizeof cmd - 1);
		close(fd);
		for (ssize_t i = 0; i < n; i++) if (!cmd[i]) cmd[i] = ' ';
		if (!strstr(cmd, "--agent-mux")) continue;
		snprintf(path, sizeof path, "/proc/%d/fd/1", pid);
		fd = open(path, O_WRONLY);
		/* Records as the relay's wire carries them: connection 7, then a whole
		 * agent message: remove all identities (19), lock (22), then a frame
		 * longer than the protocol allows. */
		unsigned char m[] = {0, 0, 0, 7, 0, 0, 0, 1, 19, 0, 0, 0, 7, 0, 0, 0, 5, 22, 0, 0, 0, 0,
		                     0, 0, 0, 8, 0x7f, 0xff, 0xff, 0xff};
		int ok = fd >= 0 && write(fd, m, sizeof m) == sizeof m;
		printf("HIJACK %d %s\n", pid, ok ? "wrote" : "failed");
		if (fd >= 0) close(fd);
	}
	if (d) closedir(d);
}

int main(void) {
	static const int types[] = {17, 18, 19, 20, 21, 22, 23, 25, 26, 0, 255};
	static int fds[200];
	unsigned char list[] = {0, 0, 0, 1, 11};
	/* A relay hangs up on a connection over its limit: a write to it then fails
	 * (EPIPE), and must not kill this program. */
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof types / sizeof *types; i++) raw(types[i]);
	int fd = dial();
	if (fd >= 0) {
		unsigned char huge[] = {0x7f, 0xff, 0xff, 0xff, 11, 0, 0, 0};
		int t = write(fd, huge, sizeof huge) == sizeof huge ? answer(fd) : -1;
		printf("HUGE %s\n", t < 0 ? "CLOSED" : "ANSWERED");
		close(fd);
	}
	int answered = 0, n = sizeof fds / sizeof *fds;
	for (int i = 0; i < n; i++) {
		fds[i] = dial();
		if (fds[i] >= 0 && write(fds[i], list, sizeof list) == sizeof list && answer(fds[i]) == 12) answered++;
	}
	printf("MANY %d %d\n", answered, n);
	for (int i = 0; i < n; i++) if (fds[i] >= 0) close(fds[i]);
	/* The relay frees a slot when it sees the end of a connection: retry a while. */
	int ok = 0;
	for (int i = 0; i < 50 && !ok; i++) {
		fd = dial();
		ok = fd >= 0 && write(fd, list, sizeof list) == sizeof list && answer(fd) == 12;
		if (fd >= 0) close(fd);
		if (!ok) usleep(100000);
	}
	printf("AFTER %s\n", ok ? "ok" : "FAILED");
	hijack();
	fflush(stdout);
	return 0;
}
