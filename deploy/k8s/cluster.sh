#!/usr/bin/env bash
# cluster.sh runs a real single-node Kubernetes cluster on this machine, for
# tests: etcd, a private containerd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet and kube-proxy, as background processes of root.
#
#   cluster.sh up       install what is missing, build (or reuse) the binaries,
#                       start everything, wait until the node is Ready and a
#                       test pod with a volume runs
#   cluster.sh down     stop everything and undo what `up` did to the host
#   cluster.sh status   what runs, its memory, the node
#   cluster.sh env      print `export KUBECONFIG=...`
#   cluster.sh import IMAGE|TARBALL...
#                       load images into the cluster's containerd: a Docker
#                       image name (taken with `docker save`) or a
#                       docker-archive / OCI tarball
#   cluster.sh kubelet stop
#                       stop only the kubelet: containerd, the shims and the
#                       pods keep running (to test what happens to a node
#                       whose kubelet is gone)
#   cluster.sh kubelet start
#                       start the kubelet again as `up` does and wait until
#                       the node is Ready again
#
# See README.md beside this file. `up`, `down` and `kubelet stop|start` are
# idempotent. All
# state, logs and PID files live under $PRIMER_K8S_STATE (default
# /var/lib/primer-k8s); the binaries under ~/.cache/primer-k8s/<version>.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
STATE="${PRIMER_K8S_STATE:-/var/lib/primer-k8s}"
CACHE="${PRIMER_K8S_CACHE:-$HOME/.cache/primer-k8s}"
NODE_NAME="${PRIMER_K8S_NODE_NAME:-primer-k8s}"
# The node's pods get NODE_SUBNET (a /24) on bridge BRIDGE, whose address
# (.1) is also the node's address: the API server and the kubelet listen
# there, so nothing of the cluster listens on the machine's own interfaces.
CLUSTER_CIDR="${PRIMER_K8S_CLUSTER_CIDR:-10.244.0.0/16}"
NODE_SUBNET="${PRIMER_K8S_NODE_SUBNET:-10.244.0.0/24}"
SERVICE_CIDR="${PRIMER_K8S_SERVICE_CIDR:-10.96.0.0/16}"
BRIDGE="${PRIMER_K8S_BRIDGE:-primer-k8s0}"
ETCD_PORT="${PRIMER_K8S_ETCD_PORT:-12379}"
API_PORT="${PRIMER_K8S_API_PORT:-6443}"
EXTRA_IMAGES="${PRIMER_K8S_IMAGES-primer/busybox:1.0}"
SMOKE="${PRIMER_K8S_SMOKE:-1}"

NODE_IP="${NODE_SUBNET%.*}.1"
SERVICE_NET="${SERVICE_CIDR%/*}"
API_SERVICE_IP="${SERVICE_NET%.*}.1"
CGROUP_ROOT=primer-k8s
CNI_NETWORK=primer-k8s
CNI_BIN=/usr/lib/cni
PAUSE_IMAGE=primer/pause:1.0

PKI="$STATE/pki"
ETC="$STATE/etc"
RUN="$STATE/run"
LOGS="$STATE/logs"
HOST="$STATE/host"
CTRD="$STATE/containerd"
SOCK="$CTRD/containerd.sock"
KUBECONFIG_ADMIN="$STATE/admin.kubeconfig"
# Start order (`down` stops the node and controllers first, then the rest).
COMPONENTS=(etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
# Kernel settings that the kubelet, kube-proxy or the CNI plugins may change:
# `up` records them and `down` puts them back.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
	kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
	net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables
	net.bridge.bridge-nf-call-ip6tables net.netfilter.nf_conntrack_max)
# Host paths that the cluster creates outside $STATE when they are missing
# (the CNI cache, the kubelet's container log links, the host-path
# provisioner's volumes): `down` removes those that `up` found missing.
# /var/lib/kubelet/device-plugins is the one path the kubelet does not take
# from --root-dir.
HOST_PATHS=(/var/lib/cni /var/log/containers /var/log/pods /tmp/hostpath_pv /etc/kubernetes /var/lib/kubelet)

log() { echo "cluster.sh: $*" >&2; }
die() { log "$*"; exit 1; }
t0=$SECONDS
elapsed() { echo "$((SECONDS - t0)) s"; }

[ "$(id -u)" -eq 0 ] || die "run as root"

# wait_for SECS DESC CMD... runs CMD until it succeeds, for up to SECS seconds.
wait_for() {
	local secs=$1 desc=$2; shift 2
	local end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || { log "timed out after ${secs} s waiting for $desc"; return 1; }
		sleep 0.2
	done
}

# ---------------------------------------------------------------- processes

# pid_of NAME prints the PID of component NAME if it runs: the PID file must
# name a live process whose command line mentions $STATE (so a reused PID is
# never taken for ours). `start` writes the file only once the process runs
# the component's program (see there).
pid_of() {
	local f="$RUN/$1.pid" pid
	[ -s "$f" ] || return 1
	pid="$(cat "$f")"
	ours "$pid" && alive "$pid" || return 1
	echo "$pid"
}

# ours PID: the command line of process PID mentions $STATE.
ours() {
	[ -r "/proc/$1/cmdline" ] || return 1
	local args
	mapfile -d '' args 2>/dev/null <"/proc/$1/cmdline" || return 1
	[[ "${args[*]}" == *"$STATE"* ]]
}

# start NAME CMD... starts CMD in its own session, logging to $LOGS/NAME.log,
# and writes NAME's PID file once CMD runs.
#
# The PID that `&` gives is first a copy of this script, which becomes CMD
# only when it has run exec: until then its command line is this script's
# and does not mention $STATE, so pid_of would say that NAME is not running.
# On a loaded machine that window lasts long enough for wait_started to see
# it and take the component for dead ("etcd did not become ready" with
# nothing but etcd's startup in its log). So start waits for the exec (or
# the process's end) before it writes the PID file. setsid runs CMD in the
# same process (a background job of a script is no process group leader, so
# setsid does not fork).
start() {
	local name=$1; shift
	log "starting $name"
	echo "--- cluster.sh: starting $name at $(date -u +%H:%M:%S)" >>"$LOGS/$name.log"
	setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
	local pid=$! end=$((SECONDS + 30))
	until ours "$pid"; do
		if ! alive "$pid"; then
			log "$name exited at once"
			break
		fi
		if [ $SECONDS -ge $end ]; then
			log "$name ($pid) has not run its program after 30 s"
			break
		fi
		sleep 0.05
	done
	echo "$pid" >"$RUN/$name.pid"
}

# rotate_log NAME keeps NAME's log of the previous run as NAME.log.prev.
rotate_log() {
	[ ! -s "$LOGS/$1.log" ] || mv -f "$LOGS/$1.log" "$LOGS/$1.log.prev"
}

# alive PID: the process exists and is not a zombie (init here reaps only
# about once a second).
alive() {
	local stat
	stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
	stat="${stat##*) }"
	[ "${stat%% *}" != Z ]
}

# stop [-t SECS] NAME... sends SIGTERM to the named components, waits up to
# SECS (default 10) for them to exit, then sends SIGKILL to what is left.
stop() {
	local grace=10
	if [ "$1" = -t ]; then grace=$2; shift 2; fi
	local name pid pids=()
	for name in "$@"; do
		if pid="$(pid_of "$name")"; then
			log "stopping $name ($pid)"
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
	done
	local end=$((SECONDS + grace)) left
	while :; do
		left=()
		for pid in "${pids[@]}"; do alive "$pid" && left+=("$pid"); done
		[ ${#left[@]} -gt 0 ] || break
		if [ $SECONDS -ge $end ]; then
			log "killing ${left[*]}"
			kill -KILL "${left[@]}" 2>/dev/null || true
		fi
		sleep 0.1
	done
	for name in "$@"; do rm -f "$RUN/$name.pid"; done
}

# ---------------------------------------------------------------- packages

install_packages() {
	local need=()
	command -v etcd >/dev/null || need+=(etcd-server)
	command -v containerd >/dev/null && command -v ctr >/dev/null || need+=(containerd)
	command -v runc >/dev/null || need+=(runc)
	local p
	for p in bridge host-local portmap loopback firewall; do
		[ -x "$CNI_BIN/$p" ] || { need+=(containernetworking-plugins); break; }
	done
	command -v iptables >/dev/null || need+=(iptables)
	command -v conntrack >/dev/null || need+=(conntrack)
	command -v openssl >/dev/null || need+=(openssl)
	command -v curl >/dev/null || need+=(curl)
	command -v ip >/dev/null || need+=(iproute2)
	[ ${#need[@]} -gt 0 ] || return 0
	log "installing ${need[*]}"
	# Keep the packages' own services (a system etcd on port 2379, a system
	# containerd) from starting: this script runs private instances.
	local guard=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		guard=1
	fi
	local rc=0
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } >&2 || rc=$?
	[ -z "$guard" ] || rm -f /usr/sbin/policy-rc.d
	[ $rc -eq 0 ] || die "apt-get install ${need[*]} failed"
}

# binaries sets BIN (the cached Kubernetes binaries) and KUBECTL.
binaries() {
	local extra=()
	if command -v kubectl >/dev/null; then KUBECTL="$(command -v kubectl)"; else extra=(kubectl); fi
	BIN="$(nice -n 10 "$here/build/build.sh" "${extra[@]}")"
	IMAGES="$(dirname "$BIN")/images"
	[ -n "${KUBECTL:-}" ] || KUBECTL="$BIN/kubectl"
}

kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

# ---------------------------------------------------------------- host snapshot

iptables_variants() {
	local v
	for v in iptables ip6tables; do command -v "$v-save" >/dev/null && "$v-save" >/dev/null 2>&1 && echo "$v"; done
}

# snapshot records, once per up/down cycle, what `down` must put back.
snapshot_host() {
	[ -e "$HOST/taken" ] && return 0
	mkdir -p "$HOST"
	local k v p
	: >"$HOST/sysctl"
	for k in "${SYSCTLS[@]}"; do
		v="$(sysctl -n "$k" 2>/dev/null)" && printf '%s=%s\n' "$k" "$v" >>"$HOST/sysctl"
	done
	: >"$HOST/absent"
	for p in "${HOST_PATHS[@]}"; do [ -e "$p" ] || echo "$p" >>"$HOST/absent"; done
	ls -A /tmp/hostpath_pv 2>/dev/null >"$HOST/hostpath_pv" || true
	for v in $(iptables_variants); do
		"$v-save" | awk '/^\*/{t=substr($1,2)} /^:/{print t, substr($1,2)}' >"$HOST/chains.$v"
	done
	# With iptables-nft, the first rule in a table creates the nftables table.
	if command -v nft >/dev/null; then nft list tables >"$HOST/nft-tables" 2>/dev/null || true; fi
	touch "$HOST/taken"
}

# ---------------------------------------------------------------- certificates

gen_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# gen_ca NAME CN makes the self-signed CA $PKI/NAME.crt.
gen_ca() {
	gen_key "$PKI/$1.key"
	openssl req -x509 -new -key "$PKI/$1.key" -subj "/CN=$2" -days 3650 \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
		-out "$PKI/$1.crt" 2>/dev/null
}

# gen_cert NAME SUBJECT USAGE [SANS] signs $PKI/NAME.crt with the CA $CA
# (default: the cluster CA).
gen_cert() {
	local name=$1 subj=$2 usage=$3 sans=${4:-}
	gen_key "$PKI/$name.key"
	openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$usage"
		[ -z "$sans" ] || echo "subjectAltName=$sans"
	} >"$PKI/$name.ext"
	openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/${CA:-ca}.crt" -CAkey "$PKI/${CA:-ca}.key" \
		-set_serial "0x$(openssl rand -hex 16)" -days 3650 -extfile "$PKI/$name.ext" \
		-out "$PKI/$name.crt" 2>/dev/null
	rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

# gen_pki makes the CAs, certificates and service account key, unless $PKI
# already holds them for the same node name and addresses (`down` keeps them).
gen_pki() {
	local params="$NODE_NAME $NODE_IP $API_SERVICE_IP"
	if [ -f "$PKI/params" ] && [ "$(cat "$PKI/params")" = "$params" ]; then return 0; fi
	rm -rf "$PKI"
	mkdir -p "$PKI"
	chmod 700 "$PKI"
	gen_ca ca primer-k8s-ca
	# The aggregation layer's own CA and client (as kubeadm makes them): the
	# controller-manager and the scheduler read it to authenticate requests.
	gen_ca front-proxy-ca primer-k8s-front-proxy-ca
	CA=front-proxy-ca gen_cert front-proxy-client "/CN=front-proxy-client" clientAuth
	gen_cert apiserver "/CN=kube-apiserver" serverAuth \
		"DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,DNS:$NODE_NAME,IP:127.0.0.1,IP:$NODE_IP,IP:$API_SERVICE_IP"
	gen_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
	gen_cert kubelet-server "/CN=$NODE_NAME" serverAuth "DNS:$NODE_NAME,IP:$NODE_IP"
	gen_cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
	gen_cert admin "/O=system:masters/CN=primer-admin" clientAuth
	gen_cert controller-manager "/CN=system:kube-controller-manager" clientAuth
	gen_cert scheduler "/CN=system:kube-scheduler" clientAuth
	gen_cert kube-proxy "/CN=system:kube-proxy" clientAuth
	gen_key "$PKI/sa.key"
	openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
	echo "$params" >"$PKI/params"
}

# kubeconfig FILE CERTNAME writes a kubeconfig for client certificate CERTNAME.
kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: primer-k8s
  cluster:
    server: https://$NODE_IP:$API_PORT
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$2.crt")
    client-key-data: $(base64 -w0 "$PKI/$2.key")
contexts:
- name: primer-k8s
  context:
    cluster: primer-k8s
    user: $2
current-context: primer-k8s
EOF
	chmod 600 "$1"
}

# ---------------------------------------------------------------- configuration

write_configs() {
	mkdir -p "$ETC/cni" "$CTRD" "$STATE/cni/networks" "$STATE/kubelet" "$STATE/pod-logs" "$STATE/etcd"
	chmod 700 "$STATE/etcd"
	kubeconfig "$KUBECONFIG_ADMIN" admin
	kubeconfig "$ETC/controller-manager.kubeconfig" controller-manager
	kubeconfig "$ETC/scheduler.kubeconfig" scheduler
	kubeconfig "$ETC/kubelet.kubeconfig" kubelet
	kubeconfig "$ETC/kube-proxy.kubeconfig" kube-proxy

	# The private containerd: own socket, root, state and runc root, so it
	# shares nothing with Docker's. restrict_oom_score_adj: the machine lacks
	# CAP_SYS_RESOURCE, and without it runc cannot start the pause container.
	cat >"$ETC/containerd.toml" <<EOF
version = 2
root = "$CTRD/root"
state = "$CTRD/state"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$CTRD/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  tolerate_missing_hugetlb_controller = true
  disable_hugetlb_controller = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$CTRD/runc"
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$ETC/cni"
    max_conf_num = 1
EOF

	# bridge + host-local on the node's /24, portmap for hostPort, and the
	# firewall plugin, which lets pod traffic through a FORWARD chain whose
	# policy is DROP (as Docker sets it).
	cat >"$ETC/cni/10-primer-k8s.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$STATE/cni/networks",
        "ranges": [[{"subnet": "$NODE_SUBNET", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "firewall", "backend": "iptables"}
  ]
}
EOF

	cat >"$ETC/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
tlsCertFile: $PKI/kubelet-server.crt
tlsPrivateKeyFile: $PKI/kubelet-server.key
containerRuntimeEndpoint: unix://$SOCK
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_ROOT
failSwapOn: false
failCgroupV1: false
podCIDR: $NODE_SUBNET
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podLogsDir: $STATE/pod-logs
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
  imagefs.inodesFree: "1%"
evictionPressureTransitionPeriod: 30s
EOF

	cat >"$ETC/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $ETC/kube-proxy.kubeconfig
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $CLUSTER_CIDR
nodePortAddresses: ["$NODE_IP/32"]
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
iptables:
  localhostNodePorts: false
  minSyncPeriod: 100ms
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
}

# ---------------------------------------------------------------- host setup

cgroup_dirs() {
	# One directory per cgroup v1 hierarchy (and the v2 one, in hybrid mode).
	awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i+1) == "cgroup" || $(i+1) == "cgroup2") print $5; break } }' \
		/proc/self/mountinfo | while read -r m; do echo "$m/$CGROUP_ROOT"; done
}

setup_host() {
	if [ ! -d /proc/sys/net/bridge ] && command -v modprobe >/dev/null; then
		modprobe br_netfilter 2>/dev/null || true
	fi
	sysctl -qw net.ipv4.ip_forward=1
	[ ! -d /proc/sys/net/bridge ] || sysctl -qw net.bridge.bridge-nf-call-iptables=1
	# The bridge exists before the API server, which listens on its address.
	if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
		ip link add "$BRIDGE" type bridge
	fi
	ip addr replace "$NODE_IP/${NODE_SUBNET#*/}" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	# The pods' cgroup root, in every hierarchy the kubelet checks.
	local d
	while read -r d; do
		case "$d" in */unified/*) continue ;; esac
		mkdir -p "$d"
		case "$d" in
		*/cpuset/*)
			[ -n "$(cat "$d/cpuset.cpus")" ] || cat "$(dirname "$d")/cpuset.cpus" >"$d/cpuset.cpus"
			[ -n "$(cat "$d/cpuset.mems")" ] || cat "$(dirname "$d")/cpuset.mems" >"$d/cpuset.mems"
			;;
		esac
	done < <(cgroup_dirs)
	return 0
}

# ---------------------------------------------------------------- images

ctr_() { ctr --address "$SOCK" --namespace k8s.io "$@"; }

# import_image NAME|TARBALL loads one image into the cluster's containerd.
import_image() {
	local img=$1
	if [ -f "$img" ]; then
		ctr_ images import "$img" >/dev/null
	elif command -v docker >/dev/null && docker image inspect "$img" >/dev/null 2>&1; then
		docker save "$img" | ctr_ images import - >/dev/null
	else
		return 1
	fi
	log "imported $img"
}

# ---------------------------------------------------------------- health

api_ok() {
	curl -sSf --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
		"https://$NODE_IP:$API_PORT/readyz" >/dev/null
}
# etcd_ok: etcd answers that it is healthy; else it prints what it said.
etcd_ok() {
	local body
	body="$(curl -sS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" 2>&1)" || { echo "$body"; return 1; }
	[[ "$body" == *'"health":"true"'* ]] || { echo "/health answered $body"; return 1; }
}
node_ready() {
	[ "$(kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

all_running() {
	local c
	for c in "${COMPONENTS[@]}"; do pid_of "$c" >/dev/null || return 1; done
}

any_running() {
	local c
	for c in "${COMPONENTS[@]}"; do pid_of "$c" >/dev/null && return 0; done
	return 1
}

# wait_started NAME SECS DESC CHECK... waits for CHECK, failing with why (the
# process is gone, or what CHECK said last) and NAME's log if NAME dies or
# CHECK does not succeed in time.
wait_started() {
	local name=$1 secs=$2 desc=$3; shift 3
	local end=$((SECONDS + secs)) out why
	until out="$("$@" 2>&1)"; do
		why=
		if ! pid_of "$name" >/dev/null; then
			why="its process is gone"
		elif [ $SECONDS -ge $end ]; then
			why="${secs} s passed"
		fi
		if [ -n "$why" ]; then
			log "$name did not become ready ($desc): $why; the last check ($*) said: ${out:-nothing}"
			log "last lines of $LOGS/$name.log:"
			tail -n 25 "$LOGS/$name.log" >&2 || true
			return 1
		fi
		sleep 0.2
	done
}

# TRIES is how many times `up` starts a component that does not become ready.
TRIES="${PRIMER_K8S_START_TRIES:-3}"

# ready NAME SECS DESC CHECK... waits for NAME as wait_started does and, when
# NAME does not become ready, stops it and starts it again (run_NAME), up to
# TRIES starts in all: a component that failed once on a loaded machine
# (etcd's first election, the API server's first connection to etcd) most
# often comes up the next time.
ready() {
	local name=$1 try
	for ((try = 1; ; try++)); do
		wait_started "$@" && return 0
		[ "$try" -lt "$TRIES" ] || return 1
		stop "$name"
		# What made it fail (a port still held, a slow disk) may take a
		# moment to pass.
		log "starting $name again in $((2 * try)) s (start $((try + 1)) of $TRIES)"
		sleep $((2 * try))
		"run_$name"
	done
}

# ---------------------------------------------------------------- up

# run_NAME starts component NAME (`up`, and `ready` when it starts one again).
run_etcd() {
	start etcd etcd --name "$NODE_NAME" --data-dir "$STATE/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
		--initial-cluster "$NODE_NAME=http://127.0.0.1:$((ETCD_PORT + 1))" --initial-cluster-state new \
		--logger zap --log-outputs stderr --log-level warn
}
run_containerd() {
	start containerd containerd --config "$ETC/containerd.toml"
}
run_kube-apiserver() {
	start kube-apiserver "$BIN/kube-apiserver" \
		--advertise-address="$NODE_IP" --bind-address="$NODE_IP" --secure-port="$API_PORT" \
		--etcd-servers="http://127.0.0.1:$ETCD_PORT" \
		--service-cluster-ip-range="$SERVICE_CIDR" \
		--client-ca-file="$PKI/ca.crt" \
		--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
		--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$PKI/ca.crt" \
		--kubelet-preferred-address-types=InternalIP,Hostname \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
		--requestheader-client-ca-file="$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
		--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
		--requestheader-extra-headers-prefix=X-Remote-Extra- \
		--proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--allow-privileged=true --profiling=false --v=1
}
run_kube-controller-manager() {
	start kube-controller-manager "$BIN/kube-controller-manager" \
		--kubeconfig="$ETC/controller-manager.kubeconfig" \
		--authentication-kubeconfig="$ETC/controller-manager.kubeconfig" \
		--authorization-kubeconfig="$ETC/controller-manager.kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false \
		--service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
		--cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
		--use-service-account-credentials=true \
		--service-cluster-ip-range="$SERVICE_CIDR" --cluster-cidr="$CLUSTER_CIDR" --allocate-node-cidrs=false \
		--enable-hostpath-provisioner=true \
		--kube-api-qps=100 --kube-api-burst=200 --profiling=false --v=1
}
run_kube-scheduler() {
	start kube-scheduler "$BIN/kube-scheduler" \
		--kubeconfig="$ETC/scheduler.kubeconfig" \
		--authentication-kubeconfig="$ETC/scheduler.kubeconfig" \
		--authorization-kubeconfig="$ETC/scheduler.kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false \
		--kube-api-qps=100 --kube-api-burst=200 --profiling=false --v=1
}
run_kubelet() { start_kubelet; }
run_kube-proxy() {
	start kube-proxy "$BIN/kube-proxy" --config="$ETC/kube-proxy.yaml" --v=1
}


# start_kubelet starts the kubelet on the configuration that `up` wrote. Both
# `up` and `kubelet start` call it, so a restarted kubelet runs with the same
# flags as the first.
start_kubelet() {
	start kubelet "$BIN/kubelet" --config="$ETC/kubelet.yaml" --kubeconfig="$ETC/kubelet.kubeconfig" \
		--root-dir="$STATE/kubelet" --cert-dir="$PKI" \
		--hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=1
}

smoke_test() {
	local image=$PAUSE_IMAGE cmd=
	if ctr_ images ls -q | grep -x 'docker.io/primer/busybox:1.0' >/dev/null; then
		image=primer/busybox:1.0
		cmd='    command: ["sh", "-c", "echo ok >/data/ok && exec sleep 3600"]'
	fi
	kc delete pod primer-smoke --ignore-not-found --wait=true >/dev/null 2>&1 || true
	kc delete pvc primer-smoke --ignore-not-found --wait=false >/dev/null 2>&1 || true
	kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: primer-smoke
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 16Mi
---
apiVersion: v1
kind: Pod
metadata:
  name: primer-smoke
  namespace: default
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: $image
    imagePullPolicy: IfNotPresent
$cmd
    volumeMounts:
    - name: data
      mountPath: /data
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: primer-smoke
EOF
	if ! kc wait pod/primer-smoke --for=condition=Ready --timeout=120s >/dev/null; then
		kc describe pod primer-smoke >&2 || true
		die "the test pod did not start"
	fi
	if [ -n "$cmd" ]; then
		[ "$(kc exec primer-smoke -- cat /data/ok)" = ok ] || die "the test pod's volume does not hold what it wrote"
	fi
	log "test pod ($image, with a PVC) ran ($(elapsed))"
	kc delete pod primer-smoke --wait=false >/dev/null
	kc delete pvc primer-smoke --wait=false >/dev/null
}

cmd_up() {
	if all_running && api_ok; then
		binaries
		wait_for 60 "node $NODE_NAME Ready" node_ready || die "cluster runs but node $NODE_NAME is not Ready"
		log "already up"
		cmd_env
		return 0
	fi
	if any_running || [ -e "$HOST/taken" ]; then
		log "a previous cluster is partly up: taking it down first"
		cmd_down
		t0=$SECONDS
	fi
	install_packages
	binaries
	log "binaries ready in $BIN ($(elapsed))"
	snapshot_host
	mkdir -p "$RUN" "$LOGS" "$ETC"
	for c in "${COMPONENTS[@]}"; do rotate_log "$c"; done
	gen_pki
	write_configs
	setup_host

	run_etcd
	run_containerd
	run_kube-apiserver
	ready etcd 60 "health" etcd_ok || die "etcd did not start"
	ready containerd 60 "socket" ctr_ version || die "containerd did not start"
	ctr_ images import "$IMAGES/pause.tar" >/dev/null
	local img
	for img in $EXTRA_IMAGES; do
		import_image "$img" || log "image $img not found (neither a file nor in Docker): skipped"
	done
	ready kube-apiserver 90 "readyz" api_ok || die "the API server did not start"
	log "API server ready ($(elapsed))"
	run_kube-controller-manager
	run_kube-scheduler
	run_kubelet
	run_kube-proxy

	kc apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
	ready kubelet 90 "node $NODE_NAME Ready" node_ready || die "node $NODE_NAME did not become Ready"
	log "node $NODE_NAME Ready ($(elapsed))"
	for c in kube-controller-manager kube-scheduler kube-proxy; do
		pid_of "$c" >/dev/null && continue
		log "$c exited; last lines of $LOGS/$c.log:"
		tail -n 25 "$LOGS/$c.log" >&2 || true
		log "starting $c again"
		"run_$c"
		sleep 2
		pid_of "$c" >/dev/null || { tail -n 25 "$LOGS/$c.log" >&2; die "$c exited again"; }
	done
	if [ "$SMOKE" = 1 ]; then
		# Pods need the namespace's service account, and the kubelet the CA
		# config map for its token volume (it backs off when it is missing).
		wait_for 60 "the default service account" kc get serviceaccount default -n default ||
			die "no default service account (see $LOGS/kube-controller-manager.log)"
		wait_for 30 "config map kube-root-ca.crt" kc get configmap kube-root-ca.crt -n default ||
			die "no config map kube-root-ca.crt (see $LOGS/kube-controller-manager.log)"
		smoke_test
	fi
	log "up in $(elapsed); $(memory_line)"
	cmd_env
}

# ---------------------------------------------------------------- down

# cluster_pids prints the PIDs of every process in the pods' cgroups.
cluster_pids() {
	local d
	while read -r d; do
		[ -d "$d" ] || continue
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null
	done < <(cgroup_dirs) | sort -un
}

# shim_pids prints the PIDs of our containerd's shims: the processes whose
# command line is a containerd shim's with our socket's address. They outlive
# containerd, and a shim whose containerd died waits for it forever.
shim_pids() {
	local f cmd pid args
	for f in /proc/[0-9]*/cmdline; do
		mapfile -d '' args 2>/dev/null <"$f" || continue
		cmd="${args[*]} "
		[[ "$cmd" == *containerd-shim*" -address $SOCK "* ]] || continue
		pid="${f#/proc/}"
		echo "${pid%/cmdline}"
	done
	return 0
}

# shim_sockets prints the sockets of our shims: containerd 1.6 names each
# /run/containerd/s/<sha256 of "<containerd address>/<namespace>/<id>">.
shim_sockets() {
	local pid args i ns id
	for pid in $(shim_pids); do
		mapfile -d '' args 2>/dev/null <"/proc/$pid/cmdline" || continue
		ns='' id=''
		for ((i = 0; i + 1 < ${#args[@]}; i++)); do
			case "${args[i]}" in
			-namespace) ns=${args[i + 1]} ;;
			-id) id=${args[i + 1]} ;;
			esac
		done
		if [ -z "$ns" ] || [ -z "$id" ]; then continue; fi
		printf '/run/containerd/s/%s\n' "$(printf '%s' "$SOCK/$ns/$id" | sha256sum | cut -d' ' -f1)"
	done
}

remove_chains() {
	local v table chains
	for v in $(iptables_variants); do
		local before="$HOST/chains.$v"
		[ -f "$before" ] || before=/dev/null
		for table in filter nat mangle raw; do
			# Chains named KUBE-* or CNI-* that were not there before `up`.
			chains="$("$v-save" -t "$table" 2>/dev/null | awk '/^:(KUBE-|CNI-)/{print substr($1,2)}' |
				while read -r c; do grep -qx "$table $c" "$before" || echo "$c"; done)"
			[ -n "$chains" ] || continue
			{
				echo "*$table"
				# Rules elsewhere that jump to them, then the chains themselves.
				"$v-save" -t "$table" | awk -v list="$chains" '
					BEGIN { n = split(list, a, "\n"); for (i = 1; i <= n; i++) drop[a[i]] = 1 }
					/^-A / {
						for (i = 3; i <= NF; i++) if (($i == "-j" || $i == "-g") && ($(i+1) in drop) && !($2 in drop)) {
							sub(/^-A /, "-D "); print; break
						}
					}'
				for c in $chains; do echo "-F $c"; done
				for c in $chains; do echo "-X $c"; done
				echo COMMIT
			} | "$v-restore" --noflush || log "could not remove all $v $table chains"
		done
	done
}

# remove_nft_tables deletes the nftables tables that iptables-nft made for
# the cluster's rules (ip mangle, ip6 nat, ...), once they hold no rule.
remove_nft_tables() {
	command -v nft >/dev/null && [ -f "$HOST/nft-tables" ] || return 0
	local line fam name v
	while read -r line; do
		grep -qxF "$line" "$HOST/nft-tables" && continue
		read -r _ fam name <<<"$line"
		case "$fam" in ip) v=iptables ;; ip6) v=ip6tables ;; *) continue ;; esac
		case "$name" in
		kube-proxy) ;;
		filter | nat | mangle | raw | security)
			[ "$("$v-save" -t "$name" 2>/dev/null | grep -c '^-A')" -eq 0 ] || continue
			# Only built-in chains, with their default policy.
			"$v-save" -t "$name" 2>/dev/null | awk '/^:/ && !/^:[A-Z]+ ACCEPT/ {n++} END {exit n > 0}' || continue
			;;
		*) continue ;;
		esac
		nft delete table "$fam" "$name" 2>/dev/null || log "could not delete nftables table $fam $name"
	done < <(nft list tables 2>/dev/null)
	return 0
}

unmount_state() {
	# Deepest first; mountinfo escapes spaces as \040.
	local m
	for _ in 1 2 3; do
		m="$(awk -v s="$STATE" '{p=$5; gsub(/\\040/, " ", p); if (p == s || index(p, s "/") == 1) print length(p) "\t" p}' /proc/self/mountinfo | sort -rn | cut -f2-)"
		[ -n "$m" ] || return 0
		while IFS= read -r p; do umount "$p" 2>/dev/null || umount -l "$p" 2>/dev/null || true; done <<<"$m"
	done
}

cmd_down() {
	# `up` records the host first and a finished `down` removes the record:
	# without it and with nothing running, there is nothing to undo.
	if [ ! -e "$HOST/taken" ] && ! any_running; then
		log "nothing to take down"
		return 0
	fi
	local c pid f
	stop kube-proxy kube-scheduler kube-controller-manager kubelet
	# Let the runtime tear pods down as the kubelet would (CNI DEL: IPs,
	# iptables rules, network namespaces) while it still runs.
	if pid_of containerd >/dev/null && [ -S "$SOCK" ]; then
		local clean='' f
		for f in "$CACHE"/*/bin/cri-clean; do [ -x "$f" ] && clean=$f; done
		if [ -n "$clean" ]; then
			timeout 90 "$clean" -endpoint "unix://$SOCK" || log "cri-clean failed: killing what is left"
		fi
		local t
		for t in $(ctr_ tasks ls -q 2>/dev/null); do
			ctr_ tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
			ctr_ tasks delete -f "$t" >/dev/null 2>&1 || true
		done
	fi
	# The API server's graceful shutdown sometimes hangs once it has stopped
	# serving; its state goes with etcd's anyway.
	stop -t 5 kube-apiserver
	stop etcd containerd
	# Whatever is left in the pods' cgroups, and our shims: by PID. A killed
	# shim leaves its socket behind, in the directory that Docker's shims share.
	local sockets
	sockets="$(shim_sockets)"
	for pid in $(cluster_pids) $(shim_pids); do kill -KILL "$pid" 2>/dev/null || true; done
	for _ in $(seq 50); do [ -z "$(cluster_pids)$(shim_pids)" ] && break; sleep 0.1; done
	for f in $sockets; do [ -S "$f" ] && rm -f "$f"; done

	unmount_state
	remove_chains
	remove_nft_tables
	if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE"; fi
	local d
	while read -r d; do
		[ -d "$d" ] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
		[ ! -d "$d" ] || log "cgroup $d is still busy"
	done < <(cgroup_dirs)

	if [ -f "$HOST/sysctl" ]; then
		local kv
		while IFS= read -r kv; do sysctl -qw "$kv" 2>/dev/null || true; done <"$HOST/sysctl"
	fi
	# Host paths the cluster made: the CNI cache entries of our network, the
	# kubelet's log links into $STATE, the volumes it provisioned.
	rm -f /var/lib/cni/results/"$CNI_NETWORK"-* 2>/dev/null || true
	if [ -d /var/log/containers ]; then
		find /var/log/containers -maxdepth 1 -type l -lname "$STATE/*" -delete 2>/dev/null || true
	fi
	if [ -f "$HOST/hostpath_pv" ] && [ -d /tmp/hostpath_pv ]; then
		local e
		for e in /tmp/hostpath_pv/* /tmp/hostpath_pv/.[!.]*; do
			[ -e "$e" ] || continue
			grep -qxF "${e##*/}" "$HOST/hostpath_pv" || rm -rf "$e"
		done
	fi
	if [ -f "$HOST/absent" ]; then
		local p
		while IFS= read -r p; do [ -n "$p" ] && rm -rf "$p"; done <"$HOST/absent"
	fi
	# Everything under $STATE but the logs and the certificates, unless
	# something is still mounted there (rm would reach through it).
	local left
	left="$(awk -v s="$STATE" '$5 == s || index($5, s "/") == 1' /proc/self/mountinfo | wc -l)"
	[ "$left" -eq 0 ] || die "$left mounts under $STATE could not be removed; left $STATE as it is"
	find "$STATE" -mindepth 1 -maxdepth 1 ! -name logs ! -name pki -exec rm -rf {} +
	log "down (logs kept in $LOGS)"
}

# ---------------------------------------------------------------- kubelet

# ready_heartbeat prints the node's Ready condition as "STATUS HEARTBEAT"
# (the heartbeat in RFC 3339, UTC, to the second), as a whole line: `read`
# fails on a last line without its newline.
ready_heartbeat() {
	kc get node "$NODE_NAME" \
		-o 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}{"\n"}'
}

# node_ready_since SINCE: the node is Ready by a status that a kubelet posted
# at or after SINCE (RFC 3339, UTC; such strings compare as text).
node_ready_since() {
	local st hb
	read -r st hb < <(ready_heartbeat 2>/dev/null) || return 1
	[ "$st" = True ] && [ -n "$hb" ] && [[ ! "$hb" < "$1" ]]
}

# kubelet_stop stops the kubelet alone. On SIGTERM it exits without touching
# the pods (no graceful node shutdown is configured): containerd and its shims
# keep them running, and kube-proxy keeps their services' rules.
kubelet_stop() {
	if ! pid_of kubelet >/dev/null; then
		log "kubelet is not running"
		return 0
	fi
	stop kubelet
	log "kubelet stopped ($(elapsed)); the pods keep running"
}

# kubelet_start starts the kubelet again as `up` does (its log of the run
# before kept as kubelet.log.prev) and waits until the node is Ready again.
kubelet_start() {
	if ! pid_of containerd >/dev/null || [ ! -S "$SOCK" ]; then die "containerd is not running: run cluster.sh up"; fi
	if ! pid_of kube-apiserver >/dev/null || ! api_ok; then die "the API server is not running: run cluster.sh up"; fi
	binaries
	if pid_of kubelet >/dev/null; then
		wait_started kubelet 90 "node $NODE_NAME Ready" node_ready || die "kubelet runs but node $NODE_NAME is not Ready"
		log "kubelet already running"
		return 0
	fi
	# The node stays Ready for the controller-manager's node monitor grace
	# period (50 s) after its kubelet stops, and a new kubelet's first status
	# is often NotReady (its PLEG has not listed the pods yet), so Ready alone
	# would not tell that the new kubelet is done: wait for a Ready status
	# posted after it started. Should the last kubelet have posted in the
	# current second, wait for the next one, lest that post be taken for the
	# new kubelet's.
	local since st hb
	read -r st hb < <(ready_heartbeat) || die "cannot read node $NODE_NAME"
	since="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	if [ -n "$hb" ] && [[ ! "$hb" < "$since" ]]; then
		sleep 1
		since="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	fi
	mkdir -p "$LOGS"
	rotate_log kubelet
	start_kubelet
	wait_started kubelet 90 "node $NODE_NAME Ready" node_ready_since "$since" ||
		die "the kubelet did not bring node $NODE_NAME back to Ready"
	log "node $NODE_NAME Ready ($(elapsed))"
}

cmd_kubelet() {
	case "${1:-}" in
	stop) kubelet_stop ;;
	start) kubelet_start ;;
	*) echo "usage: $0 kubelet stop|start" >&2; exit 2 ;;
	esac
}

# ---------------------------------------------------------------- status, env

# memory_line sums the resident memory of the components, the shims and the
# pods' processes.
memory_line() {
	local pids=() c pid kb=0 r
	for c in "${COMPONENTS[@]}"; do pid="$(pid_of "$c")" && pids+=("$pid"); done
	mapfile -t -O "${#pids[@]}" pids < <(shim_pids; cluster_pids)
	for pid in "${pids[@]}"; do
		r="$(awk '/^VmRSS:/{print $2}' "/proc/$pid/status" 2>/dev/null || true)"
		kb=$((kb + ${r:-0}))
	done
	echo "memory (RSS of ${#pids[@]} processes): $((kb / 1024)) MB"
}

cmd_status() {
	local c pid rss up=0
	for c in "${COMPONENTS[@]}"; do
		if pid="$(pid_of "$c")"; then
			rss="$(awk '/^VmRSS:/{printf "%d MB", $2/1024}' "/proc/$pid/status")"
			printf '%-24s running  pid %-7s %s\n' "$c" "$pid" "$rss"
			up=$((up + 1))
		else
			printf '%-24s stopped\n' "$c"
		fi
	done
	[ $up -gt 0 ] || return 3
	memory_line
	if api_ok 2>/dev/null; then
		local f
		KUBECTL="$(command -v kubectl)" || for f in "$CACHE"/*/bin/kubectl; do KUBECTL=$f; done
		kc get nodes -o wide
	fi
	[ $up -eq ${#COMPONENTS[@]} ] || return 1
}

cmd_env() { echo "export KUBECONFIG=$KUBECONFIG_ADMIN"; }

cmd_import() {
	[ $# -gt 0 ] || die "usage: cluster.sh import IMAGE|TARBALL..."
	pid_of containerd >/dev/null || die "the cluster is not up"
	local img
	for img in "$@"; do import_image "$img" || die "image $img not found (neither a file nor in Docker)"; done
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
env) cmd_env ;;
import) shift; cmd_import "$@" ;;
kubelet) shift; cmd_kubelet "$@" ;;
*) echo "usage: $0 up|down|status|env|import IMAGE...|kubelet stop|start" >&2; exit 2 ;;
esac
