#!/usr/bin/env bash
# build.sh builds what deploy/k8s/cluster.sh runs, into
# $PRIMER_K8S_CACHE/<version>/bin (default ~/.cache/primer-k8s/v1.34.4/bin),
# and prints that directory on stdout:
#
#   kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy
#       from the k8s.io/kubernetes release that go.mod beside this file pins
#   cri-clean   stops and removes every pod of the CRI runtime (./cri-clean)
#   pause       the pod sandbox program (./pause), also packed as the image
#               ../images/pause.tar (primer/pause:1.0, a docker-archive)
#
# Extra names on the command line (only `kubectl` is known) are built too.
# Whatever the cache already holds is reused: a cold build of the Kubernetes
# binaries takes about 10 minutes on 2 cores, 1.9 GB of memory and 3 GB of Go
# build cache; a warm run takes nothing.
#
#   PRIMER_K8S_CACHE      cache root (default ~/.cache/primer-k8s)
#   PRIMER_K8S_BUILDFLAGS extra `go build` flags, e.g. "-p 1" on a shared machine
#   PRIMER_K8S_REBUILD=1  build again even what the cache holds
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
GO="${GO:-go}"
PAUSE_IMAGE=primer/pause:1.0

log() { echo "k8s-build: $*" >&2; }

version="$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v1\./ {print $2; exit}' "$here/go.mod")"
[ -n "$version" ] || { log "no k8s.io/kubernetes version in $here/go.mod"; exit 1; }
cache="${PRIMER_K8S_CACHE:-$HOME/.cache/primer-k8s}"
bin="$cache/$version/bin"
images="$cache/$version/images"

# pkg_of prints the Go package that builds command $1.
pkg_of() {
	case "$1" in
	kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kube-proxy | kubectl)
		echo "k8s.io/kubernetes/cmd/$1" ;;
	pause | cri-clean) echo "./$1" ;;
	*) log "unknown command $1"; exit 2 ;;
	esac
}

want=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy cri-clean pause "$@")
missing=()
for c in "${want[@]}"; do
	pkg_of "$c" >/dev/null
	if [ "${PRIMER_K8S_REBUILD:-}" = 1 ] || [ ! -x "$bin/$c" ]; then missing+=("$c"); fi
done

if [ ${#missing[@]} -gt 0 ]; then
	# Version stamps, as hack/lib/version.sh sets them: the kubelet reports
	# gitVersion as the node's version, and clients compare it with the API
	# server's.
	minor="${version#v1.}"; minor="${minor%%.*}"
	ldflags="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
		ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	done
	pkgs=()
	for c in "${missing[@]}"; do pkgs+=("$(pkg_of "$c")"); done
	tmp="$cache/$version/bin.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp" "$bin"
	trap 'rm -rf "$tmp"' EXIT
	log "building ${missing[*]} ($version) into $bin; cold, the Kubernetes binaries take about 10 minutes on 2 cores"
	start=$SECONDS
	# shellcheck disable=SC2086 # PRIMER_K8S_BUILDFLAGS is a list of flags
	(cd "$here" && CGO_ENABLED=0 "$GO" build -trimpath ${PRIMER_K8S_BUILDFLAGS:-} \
		-ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
	for c in "${missing[@]}"; do mv -f "$tmp/$c" "$bin/$c"; done
	rm -rf "$tmp"
	trap - EXIT
	log "built in $((SECONDS - start)) s"
	if [[ " ${missing[*]} " == *" pause "* ]]; then rm -f "$images/pause.tar"; fi
fi

# The pause image: one layer holding /pause, as a docker-archive tarball
# (manifest.json, the config blob and layer.tar), which `ctr images import`
# reads. Fixed owners and times make it the same on every machine.
if [ ! -s "$images/pause.tar" ]; then
	mkdir -p "$images"
	work="$(mktemp -d)"
	trap 'rm -rf "$work"' EXIT
	mkdir "$work/rootfs" "$work/image"
	cp "$bin/pause" "$work/rootfs/pause"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
		-C "$work/rootfs" -cf "$work/layer.tar" pause
	layer_sha="$(sha256sum "$work/layer.tar" | cut -d' ' -f1)"
	mkdir "$work/image/$layer_sha"
	mv "$work/layer.tar" "$work/image/$layer_sha/layer.tar"
	printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Entrypoint":["/pause"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$layer_sha" >"$work/config.json"
	config_sha="$(sha256sum "$work/config.json" | cut -d' ' -f1)"
	mv "$work/config.json" "$work/image/$config_sha.json"
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' \
		"$config_sha" "$PAUSE_IMAGE" "$layer_sha" >"$work/image/manifest.json"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
		-C "$work/image" -cf "$images/pause.tar.tmp" manifest.json "$config_sha.json" "$layer_sha"
	mv "$images/pause.tar.tmp" "$images/pause.tar"
	rm -rf "$work"
	trap - EXIT
fi
echo "$bin"
