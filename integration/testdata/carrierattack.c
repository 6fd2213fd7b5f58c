/* carrierattack: what a sandboxed command, the container's uid 0 without a
 * capability (a rootless engine's), tries on the processes in its container that
 * carry the ssh agent (devsandbox-init --agent-mux=…, the docker isolator's), one
 * line per attempt (TestRootlessAgent reads them):
 *   CARRIER <pid> <uid>                  a carrier found, and its uid
 *   ATTACK <pid> <what> <ok|refused>     an attempt on it
 * Built static on the host (the test images are Debian, as the host). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(int pid, const char *what, int ok) {
	printf("ATTACK %d %s %s\n", pid, what, ok ? "ok" : "refused");
}

static int opens(int pid, const char *file, int flags) {
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
	int fd = open(path, flags);
	if (fd < 0) return 0;
	close(fd);
	return 1;
}

static void attack(int pid) {
	char path[64], buf[256];
	report(pid, "kill-0", kill(pid, 0) == 0);
	report(pid, "kill-STOP", kill(pid, SIGSTOP) == 0);
	if (ptrace(PTRACE_ATTACH, pid, 0, 0) == 0) {
		report(pid, "ptrace-attach", 1);
		waitpid(pid, 0, __WALL);
		ptrace(PTRACE_DETACH, pid, 0, 0);
	} else report(pid, "ptrace-attach", 0);
	if (ptrace(PTRACE_SEIZE, pid, 0, 0) == 0) {
		report(pid, "ptrace-seize", 1);
		ptrace(PTRACE_DETACH, pid, 0, 0);
	} else report(pid, "ptrace-seize", 0);
	report(pid, "mem-write", opens(pid, "mem", O_RDWR));
	report(pid, "mem-read", opens(pid, "mem", O_RDONLY));
	report(pid, "fd1-write", opens(pid, "fd/1", O_WRONLY));
	report(pid, "fd0-read", opens(pid, "fd/0", O_RDONLY));
	report(pid, "environ", opens(pid, "environ", O_RDONLY));
	report(pid, "fd-list", opens(pid, "fd", O_RDONLY | O_DIRECTORY));
	report(pid, "oom-write", opens(pid, "oom_score_adj", O_WRONLY));
	report(pid, "root-dir", opens(pid, "root", O_RDONLY | O_DIRECTORY));
	report(pid, "cwd-dir", opens(pid, "cwd", O_RDONLY | O_DIRECTORY));
	snprintf(path, sizeof path, "/proc/%d/exe", pid);
	report(pid, "exe-link", readlink(path, buf, sizeof buf) >= 0);
	struct iovec local = {buf, sizeof buf}, remote = {(void *)0x400000, sizeof buf};
	report(pid, "vm-read", syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0) >= 0 || errno == EFAULT);
	int pfd = syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0) {
		report(pid, "pidfd-getfd", syscall(SYS_pidfd_getfd, pfd, 1, 0) >= 0);
		report(pid, "pidfd-signal", syscall(SYS_pidfd_send_signal, pfd, SIGSTOP, 0, 0) == 0);
		close(pfd);
	}
	kill(pid, SIGCONT);
}

int main(void) {
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
		struct stat st;
		snprintf(path, sizeof path, "/proc/%d", pid);
		printf("CARRIER %d %d\n", pid, stat(path, &st) == 0 ? (int)st.st_uid : -1);
		attack(pid);
	}
	if (d) closedir(d);
	fflush(stdout);
	return 0;
}
