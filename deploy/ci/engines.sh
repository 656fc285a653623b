#!/usr/bin/env bash
# engines.sh makes the container engines the tests use ready on a Debian
# machine (as root): Docker (dockerd, socket /var/run/docker.sock) and Podman
# (its Docker-compatible API service, socket /run/podman/podman.sock).
# It is idempotent: it installs a package only when its binary is missing and
# starts an engine only when nothing answers on its socket. Progress goes to
# stderr. Set PRIMER_ENGINES=docker (or podman) to prepare only one.
set -euo pipefail

ENGINES="${PRIMER_ENGINES:-docker podman}"
LOG_DIR="${PRIMER_ENGINE_LOG_DIR:-/var/log/primer-ci}"
DOCKER_SOCK=/var/run/docker.sock
PODMAN_SOCK=/run/podman/podman.sock

log() { echo "engines.sh: $*" >&2; }
want() { [[ " $ENGINES " == *" $1 "* ]]; }

need=()
want docker && ! command -v dockerd >/dev/null && need+=(docker.io)
want podman && ! command -v podman >/dev/null && need+=(podman)
command -v runc >/dev/null || need+=(runc)
command -v iptables >/dev/null || need+=(iptables)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi
mkdir -p "$LOG_DIR"

# wait_for runs "$@" until it succeeds, for up to $1 seconds.
wait_for() {
	local secs=$1; shift
	for _ in $(seq 1 $((secs * 5))); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	return 1
}

docker_up() { curl -sf --unix-socket "$DOCKER_SOCK" http://d/_ping; }
podman_up() { curl -sf --unix-socket "$PODMAN_SOCK" http://d/_ping; }

if want docker; then
	if docker_up >/dev/null 2>&1; then
		log "dockerd already answers on $DOCKER_SOCK"
	else
		log "starting dockerd"
		# setsid: dockerd outlives this script and the CI step's process group.
		# Started from /, not the caller's directory: a service whose working
		# directory is removed (a CI checkout) breaks conmon and shims.
		# Docker's default address pools hold about 30 bridge networks, and
		# every tenant has one while it has workspaces: the tests make many
		# tenants and installations. 10.210.0.0/16 in /24s holds 256, apart
		# from Podman's (10.88-89) and the test cluster's (10.244, 10.96).
		pool=(--default-address-pool base=10.210.0.0/16,size=24)
		grep -qs default-address-pools /etc/docker/daemon.json && pool=()
		(cd / && exec setsid dockerd --host "unix://$DOCKER_SOCK" "${pool[@]}" >"$LOG_DIR/dockerd.log" 2>&1 < /dev/null) &
		echo $! >"$LOG_DIR/dockerd.pid"
		wait_for 60 docker_up || { tail -n 30 "$LOG_DIR/dockerd.log" >&2; log "dockerd did not start"; exit 1; }
	fi
fi

if want podman; then
	# crun refuses this machine's hybrid cgroups; runc works. Containers also
	# need explicit nofile/nproc limits at or below the host's (Podman's
	# defaults ask for a capability the machine may lack); the backend sets
	# them on every container it creates, and these defaults cover the rest.
	mkdir -p /etc/containers/containers.conf.d
	nofile=$(ulimit -n); nproc=$(ulimit -u)
	[ "$nofile" = unlimited ] && nofile=1048576
	[ "$nproc" = unlimited ] && nproc=65536
	[ "$nofile" -gt 1048576 ] && nofile=1048576
	# A service already running keeps the limits it started with: the
	# defaults must not ask for more than it has, or every container start
	# fails with "error setting rlimit ... operation not permitted".
	svc=""
	[ -f "$LOG_DIR/podman.pid" ] && svc=$(cat "$LOG_DIR/podman.pid")
	if [ -n "$svc" ] && [ -r "/proc/$svc/limits" ]; then
		svc_nproc=$(awk '/^Max processes/ {print $4}' "/proc/$svc/limits")
		svc_nofile=$(awk '/^Max open files/ {print $5}' "/proc/$svc/limits")
		case "$svc_nproc" in ''|unlimited) ;; *) [ "$svc_nproc" -lt "$nproc" ] && nproc=$svc_nproc ;; esac
		case "$svc_nofile" in ''|unlimited) ;; *) [ "$svc_nofile" -lt "$nofile" ] && nofile=$svc_nofile ;; esac
	fi
	cat >/etc/containers/containers.conf.d/50-primer-ci.conf <<CONF
[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]

[engine]
runtime = "runc"
CONF
	if podman_up >/dev/null 2>&1; then
		log "podman API already answers on $PODMAN_SOCK"
	else
		log "starting podman system service"
		mkdir -p "$(dirname "$PODMAN_SOCK")"
		rm -f "$PODMAN_SOCK"
		(cd / && exec setsid podman --runtime runc system service --time=0 "unix://$PODMAN_SOCK" >"$LOG_DIR/podman.log" 2>&1 < /dev/null) &
		echo $! >"$LOG_DIR/podman.pid"
		wait_for 60 podman_up || { tail -n 30 "$LOG_DIR/podman.log" >&2; log "podman service did not start"; exit 1; }
	fi
fi
log "ready: $ENGINES"
