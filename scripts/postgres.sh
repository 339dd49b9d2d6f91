#!/usr/bin/env bash
# Runs a command beside a throw-away PostgreSQL server on 127.0.0.1:
#   scripts/postgres.sh run -- CMD ARGS...
# Installs PostgreSQL with apt-get when it is missing, creates a cluster in a temporary directory, starts it on a
# free port, exports SARGABLE_TEST_POSTGRES_URL for CMD, and stops and removes the cluster afterwards.
# A server that can't start fails the run: the tests never skip the PostgreSQL backend.
set -euo pipefail

[[ "${1:-}" == "run" && "${2:-}" == "--" ]] || { echo "usage: $0 run -- COMMAND [ARGS...]" >&2; exit 2; }
shift 2

find_bindir() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]] && { echo "$dir"; return 0; }
    done
    command -v initdb >/dev/null 2>&1 && dirname "$(readlink -f "$(command -v initdb)")" && return 0
    return 1
}

if ! bindir=$(find_bindir); then
    echo "postgres.sh: PostgreSQL not found; installing it with apt-get" >&2
    if [[ $(id -u) -ne 0 ]]; then
        echo "postgres.sh: installing PostgreSQL needs root (apt-get install postgresql)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    bindir=$(find_bindir) || { echo "postgres.sh: PostgreSQL still not found after apt-get" >&2; exit 1; }
fi

# initdb refuses to run as root: run the server as the 'postgres' system user then (created by the Debian package).
as_owner=()
if [[ $(id -u) -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin postgres
    as_owner=(runuser -u postgres --)
fi

datadir=$(mktemp -d /tmp/sargable-pg.XXXXXX)
chmod 755 "$datadir"
[[ ${#as_owner[@]} -gt 0 ]] && chown postgres "$datadir"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')

cleanup() {
    "${as_owner[@]}" "$bindir/pg_ctl" -D "$datadir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$datadir"
}
trap cleanup EXIT

"${as_owner[@]}" "$bindir/initdb" -D "$datadir/data" -U sargable --auth=trust -E UTF8 --locale=C.UTF-8 >"$datadir/initdb.log" 2>&1 \
    || { cat "$datadir/initdb.log" >&2; exit 1; }
"${as_owner[@]}" "$bindir/pg_ctl" -D "$datadir/data" -l "$datadir/server.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $port -k $datadir -c max_connections=200 -c fsync=off -c synchronous_commit=off" start >/dev/null \
    || { cat "$datadir/server.log" >&2; exit 1; }
"$bindir/createdb" -h 127.0.0.1 -p "$port" -U sargable sargable_test

export SARGABLE_TEST_POSTGRES_URL="postgresql://sargable@127.0.0.1:$port/sargable_test"
echo "postgres.sh: PostgreSQL $("$bindir/postgres" --version | awk '{print $NF}') on 127.0.0.1:$port" >&2
set +e
"$@"
status=$?
exit $status
