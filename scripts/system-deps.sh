#!/usr/bin/env bash
# Install the system packages the-loop and its test suite need when they are missing.
# As root it installs them with apt-get; otherwise it prints the exact command to run.
set -euo pipefail

need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v git >/dev/null 2>&1 || need+=(git)
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
command -v ps >/dev/null 2>&1 || need+=(procps)
command -v strace >/dev/null 2>&1 || need+=(strace)  # the durable-acknowledgement test
# the store tests also run against a real PostgreSQL (started by the tests as an unprivileged user)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
if [ "${THE_LOOP_SKIP_BROWSER:-0}" != "1" ] && [ -f tests/browser_required ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing system packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "missing system packages: ${need[*]}" >&2
  echo "install them with one of:" >&2
  echo "  sudo apt-get install -y ${need[*]}" >&2
  echo "  brew install ${need[*]}" >&2
  echo "  sudo dnf install -y ${need[*]}" >&2
  exit 1
fi
