#!/usr/bin/env bash
# cluster.sh runs a real Temporal cluster for Primer: the Temporal server as
# its own process (frontend, history, matching and worker services), with
# PostgreSQL persistence and visibility set up by Temporal's SQL schema tool.
#
#   cluster.sh up      build (cached), set up the databases, start; prints
#                      PRIMER_TEMPORAL_ADDRESS=host:port as its last line
#   cluster.sh down    stop the server (by its pid file)
#   cluster.sh env     print PRIMER_TEMPORAL_ADDRESS=host:port
#   cluster.sh build   only build the binaries
#
# The server and the schema tool are built with `go build` inside this
# module, so go.mod and go.sum pin them to the go.temporal.io/server version
# Primer embeds; the binaries are cached in ~/.cache/primer-temporal/<version>.
# PostgreSQL is deploy/ci/postgres.sh's (started when not running), or the
# one of TEMPORAL_PG_URL=postgres://user:password@host:port/ whose user may
# create databases. See deploy/temporal/README.md.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
GO="${GO:-go}"
PORT_BASE="${PRIMER_TEMPORAL_PORT_BASE:-10000}"          # frontend = 7233 + PORT_BASE
BIND_IP="${PRIMER_TEMPORAL_BIND_IP:-127.0.0.1}"
STATE="${PRIMER_TEMPORAL_STATE:-${XDG_STATE_HOME:-$HOME/.local/state}/primer-temporal}"
CACHE_ROOT="${PRIMER_TEMPORAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/primer-temporal}"
DB="${PRIMER_TEMPORAL_DB:-primer_temporal}"
VIS_DB="${PRIMER_TEMPORAL_VISIBILITY_DB:-primer_temporal_visibility}"
NAMESPACE="${PRIMER_TEMPORAL_NAMESPACE:-default}"

FRONTEND_PORT=$((7233 + PORT_BASE))
PIDFILE="$STATE/temporal.pid"
LOG="$STATE/temporal.log"
CONNECT_HOST="$BIND_IP"
if [ "$CONNECT_HOST" = "0.0.0.0" ]; then CONNECT_HOST=127.0.0.1; fi
ADDRESS="$CONNECT_HOST:$FRONTEND_PORT"

log() { echo "temporal cluster: $*" >&2; }
die() { log "$*"; exit 1; }

version() { (cd "$ROOT" && "$GO" list -m -f '{{.Version}}' go.temporal.io/server); }

# build puts temporal-server and temporal-sql-tool in the cache directory of
# the version go.mod names; a binary already there is used as it is.
build() {
	local v dir
	v="$(version)"
	dir="$CACHE_ROOT/$v"
	mkdir -p "$dir"
	local pkg name
	for pair in "temporal-server go.temporal.io/server/cmd/server" "temporal-sql-tool go.temporal.io/server/cmd/tools/sql"; do
		name="${pair%% *}"
		pkg="${pair#* }"
		if [ ! -x "$dir/$name" ]; then
			log "building $name $v"
			(cd "$ROOT" && "$GO" build -o "$dir/$name.tmp" "$pkg")
			mv "$dir/$name.tmp" "$dir/$name"
		fi
	done
	echo "$dir"
}

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

answering() { (exec 3<>"/dev/tcp/$CONNECT_HOST/$FRONTEND_PORT") 2>/dev/null; }

# as_postgres runs a command as the PostgreSQL superuser account (as
# deploy/ci/postgres.sh does).
as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		if command -v runuser >/dev/null 2>&1; then runuser -u postgres -- "$@"; else su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; fi
	else
		sudo -u postgres "$@"
	fi
}

# databases makes sure both databases exist, owned by the URL's user, and
# sets the variables the schema tool and the config use.
databases() {
	local url="${TEMPORAL_PG_URL:-}"
	if [ -z "$url" ]; then
		url="$(bash "$ROOT/deploy/ci/postgres.sh" | tail -n 1)"
		local bin
		bin="$(dirname "$(ls /usr/lib/postgresql/*/bin/psql | head -n 1)")"
		local user="${url#postgres://}"
		user="${user%%:*}"
		for db in "$DB" "$VIS_DB"; do
			if [ "$(as_postgres "$bin/psql" -X -tA -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" != "1" ]; then
				log "creating database $db"
				as_postgres "$bin/createdb" -O "$user" "$db"
			fi
		done
		CREATE_DB=0
	else
		CREATE_DB=1
	fi
	# postgres://user:password@host:port/...
	local rest="${url#*://}"
	PG_USER="${rest%%:*}"
	rest="${rest#*:}"
	PG_PASSWORD="${rest%%@*}"
	rest="${rest#*@}"
	local hostport="${rest%%/*}"
	PG_HOST="${hostport%%:*}"
	PG_PORT="${hostport##*:}"
	if [ "$PG_PORT" = "$hostport" ]; then PG_PORT=5432; fi
}

# schema sets up (first time) and updates (every time) one database's schema
# from the files the go.temporal.io/server module ships.
schema() {
	local tool="$1" db="$2" dir="$3"
	local sql=("$tool" --plugin postgres12 --ep "$PG_HOST" -p "$PG_PORT" -u "$PG_USER" --db "$db")
	if [ "$CREATE_DB" = 1 ]; then
		SQL_PASSWORD="$PG_PASSWORD" "${sql[@]}" create-database >/dev/null 2>&1 || true
	fi
	# setup-schema -v 0.0 makes the version table; on a database that has
	# one it fails harmlessly, and update-schema brings it to the newest.
	SQL_PASSWORD="$PG_PASSWORD" "${sql[@]}" setup-schema -v 0.0 >/dev/null 2>&1 || true
	SQL_PASSWORD="$PG_PASSWORD" "${sql[@]}" update-schema -d "$dir" >"$STATE/schema-$db.log" 2>&1 ||
		{ cat "$STATE/schema-$db.log" >&2; die "schema of $db: update failed"; }
}

render() {
	local out="$STATE/config.yaml"
	umask 077
	sed -e "s|@DB@|$DB|; s|@VIS_DB@|$VIS_DB|" \
		-e "s|@PG_HOST@|$PG_HOST|g; s|@PG_PORT@|$PG_PORT|g; s|@PG_USER@|$PG_USER|g; s|@PG_PASSWORD@|$PG_PASSWORD|g" \
		-e "s|@BIND_IP@|$BIND_IP|g" \
		-e "s|@FRONTEND_PORT@|$FRONTEND_PORT|g; s|@FRONTEND_HTTP_PORT@|$((7243 + PORT_BASE))|g; s|@FRONTEND_MEMBERSHIP_PORT@|$((6933 + PORT_BASE))|g" \
		-e "s|@HISTORY_PORT@|$((7234 + PORT_BASE))|g; s|@HISTORY_MEMBERSHIP_PORT@|$((6934 + PORT_BASE))|g" \
		-e "s|@MATCHING_PORT@|$((7235 + PORT_BASE))|g; s|@MATCHING_MEMBERSHIP_PORT@|$((6935 + PORT_BASE))|g" \
		-e "s|@WORKER_PORT@|$((7239 + PORT_BASE))|g; s|@WORKER_MEMBERSHIP_PORT@|$((6939 + PORT_BASE))|g" \
		-e "s|@DYNAMIC_CONFIG@|$HERE/dynamicconfig.yaml|g" \
		"$HERE/config.yaml.tmpl" >"$out.tmp"
	mv "$out.tmp" "$out"
	echo "$out"
}

up() {
	mkdir -p "$STATE"
	if running && answering; then
		log "already running (pid $(cat "$PIDFILE"))"
		echo "PRIMER_TEMPORAL_ADDRESS=$ADDRESS"
		return
	fi
	answering && die "something else answers on $ADDRESS; set PRIMER_TEMPORAL_PORT_BASE to move the cluster"
	local bindir mod cfg
	bindir="$(build)"
	mod="$(cd "$ROOT" && "$GO" list -m -f '{{.Dir}}' go.temporal.io/server)"
	databases
	schema "$bindir/temporal-sql-tool" "$DB" "$mod/schema/postgresql/v12/temporal/versioned"
	schema "$bindir/temporal-sql-tool" "$VIS_DB" "$mod/schema/postgresql/v12/visibility/versioned"
	cfg="$(render)"
	log "starting the server (log: $LOG)"
	# setsid: the server outlives this script and the shell that ran it.
	setsid "$bindir/temporal-server" --config-file "$cfg" --allow-no-auth start >"$LOG" 2>&1 </dev/null &
	echo $! >"$PIDFILE"
	local deadline=$((SECONDS + 120))
	until answering; do
		running || { tail -n 30 "$LOG" >&2; die "the server exited while starting"; }
		[ $SECONDS -lt $deadline ] || { tail -n 30 "$LOG" >&2; die "the server does not answer on $ADDRESS"; }
		sleep 0.2
	done
	# The namespace and Primer's search attributes; it waits until the
	# frontend serves requests, not only accepts connections.
	(cd "$ROOT" && "$GO" run ./cmd/primer temporal-setup --temporal-address "$ADDRESS" --temporal-namespace "$NAMESPACE") ||
		{ tail -n 30 "$LOG" >&2; die "setting up namespace $NAMESPACE failed"; }
	log "running on $ADDRESS (pid $(cat "$PIDFILE"))"
	echo "PRIMER_TEMPORAL_ADDRESS=$ADDRESS"
}

down() {
	if ! running; then
		rm -f "$PIDFILE"
		log "not running"
		return
	fi
	local pid
	pid="$(cat "$PIDFILE")"
	kill -TERM "$pid"
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
	rm -f "$PIDFILE"
	log "stopped (pid $pid)"
}

case "${1:-}" in
up) up ;;
down) down ;;
env) echo "PRIMER_TEMPORAL_ADDRESS=$ADDRESS" ;;
build) build ;;
*)
	echo "usage: $0 up|down|env|build" >&2
	exit 2
	;;
esac
