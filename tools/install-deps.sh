#!/usr/bin/env bash
# Installs the Debian packages Berth needs (and the peers its tests drive), skipping what is already there.
#   runc            the OCI runtime containers run under
#   busybox-static  the busybox image the tests and the quick start build
#   gcc, libc6-dev  to compile the container monitor (lib/runtime/shim/berth-shim.c)
#   libssl-dev      libcrypto's sha256 for the registry's blob helper, which receives uploads (storage/blob-receiver.c)
#   python3-docker  docker-py, a real client the tests drive
#   skopeo, docker-registry, wrk, libevent-dev   registry and evhttp peers for tests and benchmarks
#   iproute2, iptables  bridge networks, veth pairs, network namespaces, published ports (DNAT)
#   tini            the init process of `docker run --init` (dockerd's docker-init is tini)
#   docker-compose  compose 1.29, a real client the tests drive
#   openssl, curl   certificates for the TLS listener tests; a plain HTTP client in tests
#   python3         systemd's side in tests (a socket passed as LISTEN_FDS, a NOTIFY_SOCKET reader, a terminal)
#   strace          shows a test which files a process opened (no time-zone lookup by the HTTP layer or the log)
set -euo pipefail
pkgs=(runc busybox-static gcc libc6-dev libssl-dev python3-docker skopeo docker-registry wrk file attr iproute2 iptables tini docker-compose openssl curl python3 strace)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
