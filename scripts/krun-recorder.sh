#!/bin/sh
# A stand-in OCI runtime named krun for the integration tests (no libkrun on the test
# machine): it records the argv and the OCI config podman gives it, then runs runc with
# the same arguments. Registered for the test user in containers.conf by
# setup-test-env.sh. Records: $DIR/<container id>.argv and .json.
dir=${DEVSANDBOX_KRUN_RECORD:-/var/tmp/devsandbox-krun-record}
bundle=
id=
create=
prev=
for a in "$@"; do
	case $prev in
	--bundle | -b) bundle=$a ;;
	esac
	case $a in
	--bundle=*) bundle=${a#--bundle=} ;;
	create) create=1 ;;
	esac
	prev=$a
	id=$a
done
if [ -n "$create" ] && [ -n "$bundle" ] && [ -d "$dir" ]; then
	(
		umask 077 # not runc's: it creates the container's mount points
		printf '%s\n' "$@" >"$dir/$id.argv"
		cp "$bundle/config.json" "$dir/$id.json"
	)
fi
exec runc "$@"
