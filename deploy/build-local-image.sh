#!/usr/bin/env bash
# Builds slaproof's container image on a machine that cannot pull any base
# image (no registry but Debian's apt), then runs it against a local
# Postgres to check it serves.
#
#   deploy/build-local-image.sh [BINARY]          build, export, run the check
#   deploy/build-local-image.sh --no-run [BINARY] build and export only
#
# BINARY defaults to target/release/slaproof, else target/debug/slaproof
# (a release binary is what you ship; a debug one works the same, larger and
# slower). The image is assembled FROM scratch with buildah (vfs storage,
# chroot isolation: no daemon, no overlay mounts): the binary (debug symbols
# stripped from a copy), exactly the shared libraries `ldd` lists, CA
# certificates, an /etc/passwd with the non-root user 65532, the built
# pages, and the same ENV, USER, ENTRYPOINT and CMD as deploy/Containerfile.
# It is committed as localhost/slaproof:dev and exported as an OCI archive.
#
# Environment:
#   PAGES_DIR     the built pages (default frontend/dist; built into a copy
#                 under /tmp with npm when missing)
#   IMAGE         image name (default localhost/slaproof:dev)
#   OCI_ARCHIVE   where the OCI archive goes (default /tmp/slaproof-dev.oci.tar)
#   PGHOST_URL    the Postgres the check uses (default
#                 postgres://postgres@127.0.0.1:5432, a role that may create
#                 databases and roles)
#   CHECK_LISTEN  server.listen of the checked container (default 127.0.0.1:18181)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

run_check=1
if [ "${1:-}" = "--no-run" ]; then run_check=0; shift; fi
binary=${1:-}
if [ -z "$binary" ]; then
  if [ -x "$root/target/release/slaproof" ]; then binary=$root/target/release/slaproof
  elif [ -x "$root/target/debug/slaproof" ]; then binary=$root/target/debug/slaproof
  else echo "error: no binary: build one (cargo build --release -p slaproof) or pass its path" >&2; exit 1
  fi
fi
[ -x "$binary" ] || { echo "error: $binary is not an executable" >&2; exit 1; }

IMAGE=${IMAGE:-localhost/slaproof:dev}
OCI_ARCHIVE=${OCI_ARCHIVE:-/tmp/slaproof-dev.oci.tar}
PGHOST_URL=${PGHOST_URL:-postgres://postgres@127.0.0.1:5432}
CHECK_LISTEN=${CHECK_LISTEN:-127.0.0.1:18181}
PAGES_IN_IMAGE=/usr/share/slaproof/pages
STORAGE=(--storage-driver vfs)

say() { printf '\n==> %s\n' "$*"; }

apt_install() {
  # Another process may hold apt's lock: wait and retry.
  local i
  for i in $(seq 1 30); do
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"; then return 0; fi
    echo "apt-get busy or failed (try $i); retrying in 20 s" >&2
    sleep 20
    apt-get update -q || true
  done
  return 1
}

need=()
command -v buildah >/dev/null || need+=(buildah)
if [ "$run_check" = 1 ]; then
  command -v podman >/dev/null || need+=(podman)
  command -v runc >/dev/null || need+=(runc)
  command -v psql >/dev/null || need+=(postgresql-client)
fi
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  apt-get update -q || true
  apt_install "${need[@]}"
fi

# --- the pages --------------------------------------------------------------
pages=${PAGES_DIR:-$root/frontend/dist}
if [ ! -f "$pages/index.html" ]; then
  say "building the pages in a copy of frontend/ under /tmp"
  rm -rf /tmp/slaproof-frontend && mkdir -p /tmp/slaproof-frontend
  (cd "$root/frontend" && tar --exclude=node_modules --exclude=dist -cf - .) | tar -xf - -C /tmp/slaproof-frontend
  (cd /tmp/slaproof-frontend && npm ci --no-audit --no-fund && npm run build)
  pages=/tmp/slaproof-frontend/dist
fi

# --- the root filesystem ----------------------------------------------------
say "assembling the root filesystem from $binary"
rootfs=$(mktemp -d /tmp/slaproof-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
install -d "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/usr/share/slaproof" \
  "$rootfs/var/lib/slaproof/keys" "$rootfs/tmp" "$rootfs/run/secrets"
chmod 1777 "$rootfs/tmp"
objcopy --strip-debug "$binary" "$rootfs/usr/local/bin/slaproof"
chmod 0755 "$rootfs/usr/local/bin/slaproof"
# Exactly the shared libraries the binary loads, at the paths it loads them
# from (the dynamic loader included).
for lib in $(ldd "$binary" | grep -o '/[^ ]*' | sort -u); do
  install -D -m 0755 "$(readlink -f "$lib")" "$rootfs$lib"
done
cp -a "$pages" "$rootfs$PAGES_IN_IMAGE"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
cat > "$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nonroot:x:65532:65532:nonroot:/var/lib/slaproof:/sbin/nologin
EOF
cat > "$rootfs/etc/group" <<'EOF'
root:x:0:
nonroot:x:65532:
EOF
printf 'hosts: files dns\n' > "$rootfs/etc/nsswitch.conf"
: > "$rootfs/etc/hosts"; : > "$rootfs/etc/resolv.conf"
chown -R 65532:65532 "$rootfs/var/lib/slaproof"
echo "root filesystem: $(du -sh "$rootfs" | cut -f1)"
ldd "$binary" | sed 's/^/  /'

# --- the image --------------------------------------------------------------
say "committing $IMAGE with buildah (vfs storage)"
ctr=$(buildah "${STORAGE[@]}" from scratch)
buildah "${STORAGE[@]}" copy "$ctr" "$rootfs/" / >/dev/null
buildah "${STORAGE[@]}" config \
  --env SLAPROOF_SERVER__LISTEN=0.0.0.0:8080 \
  --env SLAPROOF_API__PAGES_DIR=$PAGES_IN_IMAGE \
  --env SLAPROOF_EMBEDDED__DATA_DIR=/var/lib/slaproof \
  --env SLAPROOF_ATTESTATION__KEY_DIR=/var/lib/slaproof/keys \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --workingdir /var/lib/slaproof \
  --user 65532:65532 \
  --port 8080 --port 9464 \
  --entrypoint '["/usr/local/bin/slaproof"]' \
  --cmd '["serve","api"]' \
  --label org.opencontainers.image.title=slaproof \
  --label org.opencontainers.image.description="slaproof (assembled by deploy/build-local-image.sh from $(basename "$(dirname "$binary")") build)" \
  "$ctr"
buildah "${STORAGE[@]}" commit -q --rm "$ctr" "$IMAGE" >/dev/null
rm -f "$OCI_ARCHIVE"
buildah "${STORAGE[@]}" push -q "$IMAGE" "oci-archive:$OCI_ARCHIVE:$IMAGE"
buildah "${STORAGE[@]}" images --format '{{.Name}}:{{.Tag}} {{.ID}} {{.Size}}' "$IMAGE"
ls -l "$OCI_ARCHIVE"
buildah "${STORAGE[@]}" inspect --type image \
  --format 'user {{.OCIv1.Config.User}}, entrypoint {{.OCIv1.Config.Entrypoint}}, cmd {{.OCIv1.Config.Cmd}}, ports {{.OCIv1.Config.ExposedPorts}}' "$IMAGE"

[ "$run_check" = 1 ] || exit 0

# --- run it -----------------------------------------------------------------
say "checking the image against $PGHOST_URL"
db=slaproof_image_check
app=slaproof_image_app
host=${PGHOST_URL#postgres://}; host=${host#*@}
admin="$PGHOST_URL/postgres"
migrate_url="$PGHOST_URL/$db"
app_url="postgres://$app@$host/$db"
name=slaproof-image-check

cleanup() {
  podman "${STORAGE[@]}" --runtime runc rm -f "$name" >/dev/null 2>&1 || true
  psql "$admin" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  psql "$admin" -qc "DROP ROLE IF EXISTS $app" >/dev/null 2>&1 || true
  rm -rf "$rootfs"
}
trap cleanup EXIT

psql "$admin" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"
psql "$admin" -qc "CREATE DATABASE $db"

# crun 1.8 (Debian 12) cannot start containers on this kind of host (it may
# not raise RLIMIT_NPROC, and refuses cgroups in hybrid mode); runc can, with
# the limits given explicitly at or under the current ones.
run_opts=(--runtime runc --network host --read-only
  --ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
env_opts=(-e "SLAPROOF_DATABASE__MIGRATE_URL=$migrate_url" -e "SLAPROOF_DATABASE__URL=$app_url"
  -e SLAPROOF_DATABASE__MIGRATE_ON_START=false -e "SLAPROOF_SERVER__LISTEN=$CHECK_LISTEN"
  -e SLAPROOF_LOG__FORMAT=json)
metrics_listen=""
if grep -aq metrics_listen "$binary"; then
  metrics_listen=127.0.0.1:19464
  env_opts+=(-e "SLAPROOF_TELEMETRY__METRICS_LISTEN=$metrics_listen")
fi

echo "\$ podman run --rm ${run_opts[*]} ... $IMAGE migrate"
podman "${STORAGE[@]}" run --rm "${run_opts[@]}" "${env_opts[@]}" "$IMAGE" migrate

# The service login: the role may be left from an earlier run (roles are
# per server, not per database).
psql "$admin" -v ON_ERROR_STOP=1 -qc "DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$app') THEN
    CREATE ROLE $app LOGIN IN ROLE slaproof_service;
  END IF;
END \$\$;
GRANT slaproof_service TO $app;"

echo "\$ podman run -d --name $name ${run_opts[*]} ... $IMAGE serve api"
podman "${STORAGE[@]}" run -d --name "$name" "${run_opts[@]}" "${env_opts[@]}" "$IMAGE" serve api >/dev/null
base="http://$CHECK_LISTEN"
for _ in $(seq 1 60); do
  curl -fsS -o /dev/null "$base/healthz" 2>/dev/null && break
  sleep 1
done
fail=0
show() { # label url [bytes of body shown] [expected status]
  local code
  code=$(curl -sS -o /tmp/slaproof-image-check.body -w '%{http_code}' "$2") || code=000
  printf '%-17s %s  %s\n' "$1" "$code" "$(head -c "${3:-200}" /tmp/slaproof-image-check.body | tr '\n' ' ')"
  [ "$code" = "${4:-200}" ] || { echo "  expected ${4:-200}" >&2; fail=1; }
}
show "GET /healthz" "$base/healthz"
show "GET /readyz" "$base/readyz"
show "GET /openapi.json" "$base/openapi.json" 120
echo "                 ($(wc -c < /tmp/slaproof-image-check.body) bytes; $(python3 -c 'import json,sys;d=json.load(open(sys.argv[1]));print(d["openapi"], len(d["paths"]), "paths")' /tmp/slaproof-image-check.body 2>/dev/null || echo "not JSON"))"
# The pages: the auditor's page is public; the dashboard needs an embed token.
show "GET /audit/" "$base/audit/" 80
show "GET /embed/" "$base/embed/" 80 401
if [ -n "$metrics_listen" ]; then
  show "GET /metrics" "http://$metrics_listen/metrics" 300
  show "GET /metrics/slo" "http://$metrics_listen/metrics/slo" 300
fi
echo "\$ podman stop $name"
podman "${STORAGE[@]}" stop -t 30 "$name" >/dev/null
echo "exit code after SIGTERM: $(podman "${STORAGE[@]}" inspect -f '{{.State.ExitCode}}' "$name")"
echo "last log lines:"
podman "${STORAGE[@]}" logs "$name" 2>&1 | tail -n 5 | cut -c1-240 | sed 's/^/  /'
if [ "$fail" = 0 ]; then say "image check passed"; else say "image check FAILED"; exit 1; fi
