#!/usr/bin/env bash
# primer-image.sh builds Primer's own image, primer/primer:<digest>, from
# bin/primer and bin/primer-runtime (`make build`) without a registry, and
# with --import loads it into the test cluster of deploy/k8s. `make
# image-primer` and `make k8s-primer-image` run it.
#
#   deploy/images/primer-image.sh            build into Docker (skipped when it is there)
#   deploy/images/primer-image.sh --import   build, then import into the test cluster
#                                            (skipped when the cluster has it)
#
# The tag is the first 12 hex digits of the SHA-256 of both binaries, the
# Dockerfile and the base image's id: the image is built again only when one
# of them changes, and a node never runs a stale image under an old name.
# The image's name goes to bin/primer-image.ref, where the deployment test
# (e2e/kubernetes_deploy_test.go) reads it, and to stdout.
#
# bin/primer is stripped of its debug information in the image (243 MB to
# 173; binutils' strip, when there is one), the build's binary is left as
# it is. primer-runtime goes in
# unchanged: the Kubernetes backend names its runtime image after the
# runtime binary's digest, which `make k8s-runtime-image` imports.
set -euo pipefail
cd "$(dirname "$0")/../.."

REPO=primer/primer
BASE="${PRIMER_IMAGE_BASE:-primer/python:1.0}"
DOCKERFILE=deploy/images/primer/Dockerfile
REF_FILE=bin/primer-image.ref
STATE="${PRIMER_K8S_STATE:-/var/lib/primer-k8s}"

log() { echo "primer-image: $*" >&2; }
die() { log "$*"; exit 1; }

import=
case "${1:-}" in
--import) import=1 ;;
"") ;;
*) echo "usage: $0 [--import]" >&2; exit 2 ;;
esac

for f in bin/primer bin/primer-runtime; do
	[ -x "$f" ] || die "$f is missing: run make build"
done
docker info >/dev/null 2>&1 || die "no Docker engine answers (start one: deploy/ci/engines.sh)"
base_id="$(docker image inspect -f '{{.Id}}' "$BASE" 2>/dev/null)" ||
	die "base image $BASE is missing: run make images"

t0=$SECONDS
digest="$({ sha256sum bin/primer bin/primer-runtime "$DOCKERFILE" | cut -d' ' -f1; echo "$base_id"; } | sha256sum | cut -c1-12)"
ref="$REPO:$digest"

if docker image inspect "$ref" >/dev/null 2>&1; then
	log "$ref is built already"
else
	log "building $ref on $BASE"
	ctx="$(mktemp -d)"
	trap 'rm -rf "$ctx"' EXIT
	if command -v strip >/dev/null; then strip -o "$ctx/primer" bin/primer; else cp bin/primer "$ctx/primer"; fi
	cp bin/primer-runtime "$ctx/primer-runtime"
	# The legacy builder, as deploy/images/build.sh uses: no BuildKit needed.
	if ! out="$(DOCKER_BUILDKIT=0 docker build -q --build-arg "BASE=$BASE" -f "$DOCKERFILE" -t "$ref" "$ctx" 2>&1)"; then
		echo "$out" >&2
		die "docker build $ref failed"
	fi
	# Earlier builds are of binaries that are gone: drop them.
	docker image ls --format '{{.Repository}}:{{.Tag}}' "$REPO" | grep -vxF "$ref" | xargs -r docker rmi >/dev/null 2>&1 || true
	size="$(docker image inspect -f '{{.Size}}' "$ref")"
	log "built $ref: $((size / 1000000)) MB in $((SECONDS - t0)) s"
fi
echo "$ref" >"$REF_FILE"

if [ -n "$import" ]; then
	# containerd names Docker's short names docker.io/...
	if ctr -a "$STATE/containerd/containerd.sock" -n k8s.io images ls -q 2>/dev/null | grep -qxF "docker.io/$ref"; then
		log "the test cluster has $ref already"
	else
		t1=$SECONDS
		bash deploy/k8s/cluster.sh import "$ref"
		log "imported $ref into the test cluster, $((SECONDS - t1)) s"
	fi
fi
echo "$ref"
