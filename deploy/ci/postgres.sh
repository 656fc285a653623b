#!/usr/bin/env bash
# postgres.sh makes a local PostgreSQL ready for Primer's tests and prints its
# URL on stdout (progress goes to stderr), so callers can write
#   export PRIMER_TEST_DATABASE_URL="$(deploy/ci/postgres.sh)"
# It is idempotent: it installs PostgreSQL only when no server binary exists,
# starts the cluster only when nothing answers on the port, and creates the
# role and database only when they are missing.
set -euo pipefail

PGPORT=5432
ROLE=primer
PASSWORD=primer
DATABASE=primer_test
URL="postgres://${ROLE}:${PASSWORD}@127.0.0.1:${PGPORT}/${DATABASE}?sslmode=disable"

log() { echo "postgres.sh: $*" >&2; }

# as_root runs a command as root, through sudo when we are not root.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# as_postgres runs a command as the postgres superuser account, which owns
# the cluster and may connect over the local socket without a password.
as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		if command -v runuser >/dev/null 2>&1; then runuser -u postgres -- "$@"; else su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; fi
	else
		sudo -u postgres "$@"
	fi
}

# The glob stays literal when nothing matches, so test the first match.
server_bin() {
	local bins=(/usr/lib/postgresql/*/bin/postgres)
	[ -x "${bins[0]}" ] && echo "${bins[0]}"
}

if [ -z "$(server_bin || true)" ]; then
	log "installing postgresql"
	as_root apt-get update -q >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2
fi

BIN="$(dirname "$(server_bin)")"
VERSION="$(basename "$(dirname "$BIN")")"

ready() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT"; }

if ! ready; then
	if command -v pg_lsclusters >/dev/null 2>&1 && pg_lsclusters -h 2>/dev/null | awk -v v="$VERSION" '$1 == v && $2 == "main" { found = 1 } END { exit !found }'; then
		log "starting cluster $VERSION/main"
		as_root pg_ctlcluster "$VERSION" main start >&2 || as_root service postgresql start >&2
	elif command -v pg_createcluster >/dev/null 2>&1; then
		log "creating cluster $VERSION/main"
		as_root pg_createcluster "$VERSION" main --port "$PGPORT" --start >&2
	else
		as_root service postgresql start >&2
	fi
	for _ in $(seq 1 60); do
		ready && break
		sleep 0.5
	done
	if ! ready; then
		log "PostgreSQL does not accept connections on 127.0.0.1:$PGPORT"
		exit 1
	fi
fi

# The tests share this server with the Temporal cluster of .ci/run
# (deploy/temporal), which holds about 65 connections while idle; the
# default max_connections of 100 then leaves too few for a test that opens
# two stores of 20 connections each beside another package's tests ("too
# many clients already"). Raised once, with a restart, which is the only
# way the setting takes effect.
MIN_CONNECTIONS=300
have="$(as_postgres "$BIN/psql" -X -tA -d postgres -c "SHOW max_connections")"
if [ "$have" -lt "$MIN_CONNECTIONS" ]; then
	log "raising max_connections from $have to $MIN_CONNECTIONS (restart)"
	as_postgres "$BIN/psql" -q -X -v ON_ERROR_STOP=1 -d postgres -c "ALTER SYSTEM SET max_connections = $MIN_CONNECTIONS" >&2
	if command -v pg_ctlcluster >/dev/null 2>&1; then
		as_root pg_ctlcluster "$VERSION" main restart >&2 || as_root service postgresql restart >&2
	else
		as_root service postgresql restart >&2
	fi
	for _ in $(seq 1 120); do
		ready && break
		sleep 0.5
	done
	if ! ready; then
		log "PostgreSQL does not accept connections on 127.0.0.1:$PGPORT after the restart"
		exit 1
	fi
fi

# Creating the role sets its password; re-running resets the same password so
# the printed URL always works.
as_postgres "$BIN/psql" -q -X -v ON_ERROR_STOP=1 -d postgres >&2 <<SQL
DO \$\$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${ROLE}') THEN
		CREATE ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}';
	ELSE
		ALTER ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}';
	END IF;
END
\$\$;
SQL

if [ "$(as_postgres "$BIN/psql" -X -tA -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '${DATABASE}'")" != "1" ]; then
	log "creating database $DATABASE"
	as_postgres "$BIN/createdb" -O "$ROLE" "$DATABASE"
fi

echo "$URL"
