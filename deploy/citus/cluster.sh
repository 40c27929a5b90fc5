#!/usr/bin/env bash
# cluster.sh — start, stop or reset a local three-node Citus cluster for
# hand-checking slaproof (one coordinator, two workers), all on 127.0.0.1
# with trust auth. Development only: never expose these ports.
#
# Needs: PostgreSQL server binaries (PG_BIN, default Debian's PG 15) and the
# Citus extension installed for that server (docs/OPERATIONS.md, "Citus":
# build citusdata/citus v13.2.2 with `./configure && make && make install`).
#
# Usage:  deploy/citus/cluster.sh start|stop|reset|status
#   start  initialise the three data dirs if missing, start the nodes, create
#          database $DB with the citus extension on each node, and register the
#          workers from the coordinator (idempotent)
#   stop   stop the three nodes (fast shutdown)
#   reset  stop, delete the data dirs, and start afresh
#   status pg_ctl status of each node plus the coordinator's node list
#
# Parameters (environment):
#   CITUS_BASE   base dir holding coord/ worker1/ worker2/ and logs (default /tmp/citus-cluster)
#   COORD_PORT   coordinator port (default 5441)
#   WORKER_PORTS space-separated worker ports (default "5442 5443")
#   DB           database to create on every node (default slaproof)
#   PG_BIN       server binaries (default /usr/lib/postgresql/15/bin)
#   RUN_AS       OS user that owns and runs the clusters when started as root (default postgres)
set -euo pipefail

CITUS_BASE=${CITUS_BASE:-/tmp/citus-cluster}
COORD_PORT=${COORD_PORT:-5441}
WORKER_PORTS=${WORKER_PORTS:-"5442 5443"}
DB=${DB:-slaproof}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
RUN_AS=${RUN_AS:-postgres}
HOST=127.0.0.1

# Run a command as the cluster owner (root drops to $RUN_AS; others run as themselves).
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u "$RUN_AS" -- "$@"; else "$@"; fi
}

# name:port pairs, coordinator first.
nodes() {
    echo "coord:$COORD_PORT"
    local i=1
    for p in $WORKER_PORTS; do echo "worker$i:$p"; i=$((i + 1)); done
}

psql_at() { # port, then psql args; connects as the superuser $RUN_AS
    local port=$1; shift
    as_owner "$PG_BIN/psql" -X -v ON_ERROR_STOP=1 -h "$HOST" -p "$port" -U "$RUN_AS" "$@"
}

init_node() { # name port
    local name=$1 port=$2 dir="$CITUS_BASE/$1"
    [ -f "$dir/PG_VERSION" ] && return 0
    as_owner "$PG_BIN/initdb" -D "$dir" -U "$RUN_AS" --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    cat >> "$dir/postgresql.conf" <<CONF

# --- added by deploy/citus/cluster.sh ---
listen_addresses = '$HOST'
port = $port
unix_socket_directories = '$CITUS_BASE'
shared_preload_libraries = 'citus'
max_connections = 200
wal_level = logical
max_prepared_transactions = 200
log_line_prefix = '%m [%p] %q%u@%d '
CONF
    if [ "$name" = coord ]; then
        cat >> "$dir/postgresql.conf" <<CONF
# SET LOCAL app.tenant_id must reach the workers a transaction touches.
citus.propagate_set_commands = 'local'
CONF
    fi
    # Trust on loopback only (overrides initdb's defaults, which come later).
    { echo "host all all 127.0.0.1/32 trust"; echo "local all all trust"; cat "$dir/pg_hba.conf"; } > "$dir/pg_hba.conf.new"
    mv "$dir/pg_hba.conf.new" "$dir/pg_hba.conf"
    chown "$RUN_AS" "$dir/pg_hba.conf" 2>/dev/null || true
}

start() {
    mkdir -p "$CITUS_BASE"
    [ "$(id -u)" = 0 ] && chown "$RUN_AS" "$CITUS_BASE"
    local n name port
    for n in $(nodes); do
        name=${n%%:*}; port=${n##*:}
        init_node "$name" "$port"
        if ! as_owner "$PG_BIN/pg_ctl" -D "$CITUS_BASE/$name" status >/dev/null 2>&1; then
            as_owner "$PG_BIN/pg_ctl" -D "$CITUS_BASE/$name" -l "$CITUS_BASE/$name.log" -w start >/dev/null
        fi
        if [ -z "$(psql_at "$port" -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ]; then
            psql_at "$port" -d postgres -qc "CREATE DATABASE $DB"
        fi
        psql_at "$port" -d "$DB" -qc "CREATE EXTENSION IF NOT EXISTS citus"
        echo "$name up on $HOST:$port"
    done
    psql_at "$COORD_PORT" -d "$DB" -qAtc "SELECT citus_set_coordinator_host('$HOST', $COORD_PORT)" >/dev/null
    for port in $WORKER_PORTS; do
        if [ -z "$(psql_at "$COORD_PORT" -d "$DB" -Atc "SELECT 1 FROM pg_dist_node WHERE nodename = '$HOST' AND nodeport = $port")" ]; then
            psql_at "$COORD_PORT" -d "$DB" -qAtc "SELECT citus_add_node('$HOST', $port)" >/dev/null
        fi
    done
    psql_at "$COORD_PORT" -d "$DB" -c "SELECT nodeid, nodename, nodeport, groupid, noderole, isactive FROM pg_dist_node ORDER BY nodeid"
}

stop() {
    local n name
    for n in $(nodes); do
        name=${n%%:*}
        if [ -f "$CITUS_BASE/$name/postmaster.pid" ]; then
            as_owner "$PG_BIN/pg_ctl" -D "$CITUS_BASE/$name" -m fast -w stop >/dev/null && echo "$name stopped"
        fi
    done
}

status() {
    local n name
    for n in $(nodes); do
        name=${n%%:*}
        as_owner "$PG_BIN/pg_ctl" -D "$CITUS_BASE/$name" status 2>&1 | head -1 | sed "s/^/$name: /"
    done
    psql_at "$COORD_PORT" -d "$DB" -c "SELECT * FROM citus_get_active_worker_nodes()" 2>/dev/null || true
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    reset)
        stop
        for n in $(nodes); do rm -rf "${CITUS_BASE:?}/${n%%:*}" "$CITUS_BASE/${n%%:*}.log"; done
        start
        ;;
    status) status ;;
    *) echo "usage: $0 start|stop|reset|status" >&2; exit 2 ;;
esac
