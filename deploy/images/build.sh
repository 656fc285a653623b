#!/usr/bin/env bash
# build.sh builds the images Primer's tests and examples use, without a
# registry, from Debian's packages, and loads each into every engine that
# answers (Docker, and Podman through its own store). An image already present
# in an engine is skipped. `make images` runs this.
#
#   primer/busybox:1.0            busybox-static applets only (about 2 MB)
#   primer/python:1.0             Debian bookworm minbase + python3 (`python` too)
#   primer/workspace-runtime:1.0  primer/python + primer-runtime as entrypoint
#                                 (deploy/images/workspace-runtime/Dockerfile)
#   primer/sshd-host:1.0          Debian bookworm minbase + openssh-server,
#                                 python3, procps, iproute2: a test machine for
#                                 the vm backend (deploy/images/sshd-host/)
#
# Users with a registry need none of this: a template may name any image with
# a shell (debian:bookworm-slim, python:3.12-slim, ...); the platform adds
# primer-runtime to it itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

BUSYBOX=primer/busybox:1.0
PYTHON=primer/python:1.0
RUNTIME=primer/workspace-runtime:1.0
SSHD_HOST=primer/sshd-host:1.0
SUITE=bookworm
GO="${GO:-go}"

log() { echo "images: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
updated=
apt_install() {
	[ -n "$updated" ] || { as_root apt-get update -qq >&2; updated=1; }
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

have_docker() { docker info >/dev/null 2>&1; }
have_podman() { command -v podman >/dev/null && podman --runtime runc info >/dev/null 2>&1; }
in_docker() { docker image inspect "$1" >/dev/null 2>&1; }
in_podman() { podman image exists "$1" 2>/dev/null; }

have_docker || { log "no Docker engine answers (start one: deploy/ci/engines.sh)"; exit 1; }

# apt_mirror prints the Debian mirror apt itself uses, so debootstrap needs no
# address of its own.
apt_mirror() {
	local m
	m=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n1 || true)
	[ -n "$m" ] || m=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | grep -v security | head -n1 || true)
	[ -n "$m" ] || { log "no Debian mirror found in apt's sources"; exit 1; }
	echo "$m"
}

work=$(mktemp -d)
trap 'as_root rm -rf "$work"' EXIT

if ! in_docker "$BUSYBOX"; then
	dpkg -s busybox-static >/dev/null 2>&1 || { log "installing busybox-static"; apt_install busybox-static; }
	log "building $BUSYBOX"
	root="$work/busybox"
	mkdir -p "$root"/{bin,tmp,etc,workspace,root}
	cp "$(command -v busybox)" "$root/bin/busybox"
	for applet in $("$root/bin/busybox" --list); do
		[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
	done
	chmod 1777 "$root/tmp"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	tar -C "$root" -c . | docker import -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/bin' - "$BUSYBOX" >/dev/null
fi

if ! in_docker "$PYTHON"; then
	command -v debootstrap >/dev/null || { log "installing debootstrap"; apt_install debootstrap; }
	log "building $PYTHON with debootstrap (about 35 s)"
	root="$work/python"
	as_root debootstrap --variant=minbase --include=python3-minimal "$SUITE" "$root" "$(apt_mirror)" >"$work/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
	as_root ln -sf /usr/bin/python3 "$root/usr/local/bin/python"
	as_root mkdir -p "$root/workspace"
	as_root rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
	as_root tar -C "$root" -c . | docker import -c 'CMD ["/bin/bash"]' \
		-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$PYTHON" >/dev/null
fi

if ! in_docker "$RUNTIME"; then
	log "building $RUNTIME"
	ctx="$work/runtime"
	mkdir -p "$ctx"
	CGO_ENABLED=0 "$GO" build -trimpath -ldflags '-s -w' -o "$ctx/primer-runtime" ./cmd/primer-runtime
	cp deploy/images/workspace-runtime/Dockerfile "$ctx/"
	DOCKER_BUILDKIT=0 docker build -q --build-arg "BASE=$PYTHON" -t "$RUNTIME" "$ctx" >/dev/null
fi

if ! in_docker "$SSHD_HOST"; then
	command -v debootstrap >/dev/null || { log "installing debootstrap"; apt_install debootstrap; }
	log "building $SSHD_HOST with debootstrap (about 60 s)"
	root="$work/sshd-host"
	as_root debootstrap --variant=minbase --include=openssh-server,python3,procps,iproute2,passwd \
		"$SUITE" "$root" "$(apt_mirror)" >"$work/debootstrap-sshd.log" 2>&1 ||
		{ tail -n 20 "$work/debootstrap-sshd.log" >&2; exit 1; }
	# Each container makes host keys of its own when it starts.
	as_root sh -c "rm -f '$root'/etc/ssh/ssh_host_*"
	as_root install -m 0644 deploy/images/sshd-host/sshd_config "$root/etc/ssh/sshd_config.d/primer.conf"
	as_root install -m 0755 deploy/images/sshd-host/entrypoint.sh "$root/usr/local/sbin/primer-sshd-host"
	as_root ln -sf /usr/bin/python3 "$root/usr/local/bin/python"
	as_root rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
	as_root tar -C "$root" -c . | docker import -c 'ENTRYPOINT ["/usr/local/sbin/primer-sshd-host"]' \
		-c 'EXPOSE 22' -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$SSHD_HOST" >/dev/null
fi

if have_podman; then
	for img in "$BUSYBOX" "$PYTHON" "$RUNTIME"; do # the vm tests use $SSHD_HOST in Docker only
		if ! in_podman "$img"; then
			log "loading $img into podman"
			docker save "$img" | podman --runtime runc load -q >/dev/null
			# podman load keeps the docker.io/ prefix Docker gives local names;
			# tag the short name too so templates can use the same reference.
			in_podman "$img" || podman tag "docker.io/$img" "$img"
		fi
	done
else
	log "podman not usable here; loaded into Docker only"
fi
log "ready: $BUSYBOX $PYTHON $RUNTIME $SSHD_HOST"
