#!/usr/bin/env bash
# Quick start: install what is missing, build, start the engine on its default socket with its default data root,
# and give it a busybox image (built from Debian's busybox-static) on first start. Ctrl-C stops the daemon;
# containers keep running and are re-adopted on the next start.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
[ -d node_modules ] || npm ci
npm run build --silent
SOCK="${BERTH_SOCKET:-/var/run/berth.sock}"
DATA="${BERTH_DATA_ROOT:-/var/lib/berth}"
# the bundled entry point (tools/bundle.mjs): the same code as dist/lib/cli/main.js in one file, run as a program
# so that its first line sets the daemon's memory settings
dist/lib/cli/berth.cjs daemon -H "unix://$SOCK" --data-root "$DATA" "$@" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM
for _ in $(seq 1 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
if ! curl -fsS --unix-socket "$SOCK" http://localhost/images/busybox/json >/dev/null 2>&1; then
  tar="$(mktemp --suffix=.tar)"
  node tools/make-busybox-rootfs.mjs "$tar"
  curl -fsS --unix-socket "$SOCK" -X POST -H 'Content-Type: application/x-tar' --data-binary "@$tar" \
    "http://localhost/images/create?fromSrc=-&repo=busybox&tag=latest" >/dev/null
  rm -f "$tar"
  echo "berth: imported busybox:latest"
fi
echo "berth: ready — try: DOCKER_HOST=unix://$SOCK docker run --rm busybox echo hi"
wait $pid
