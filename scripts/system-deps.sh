#!/usr/bin/env bash
# Install the system packages the-loop needs when they are missing.
#   scripts/system-deps.sh [run|test] [--dry-run]
# run (the default): what running needs — tmux, git, node/npm (the agent CLIs), procps,
# bubblewrap (the agents' sandbox, SPEC §18).
# test: that plus the test suite's own — strace, postgresql, chromium (the browser tests).
# As root it installs them with apt-get; otherwise it prints the exact command to run.
# --dry-run prints what it would install and installs nothing (exit 0 either way).
set -euo pipefail

mode=run
dry_run=0
for arg in "$@"; do
  case "$arg" in
    run|test) mode=$arg ;;
    --dry-run) dry_run=1 ;;
    *) echo "usage: $0 [run|test] [--dry-run]" >&2; exit 2 ;;
  esac
done

need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v git >/dev/null 2>&1 || need+=(git)
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
command -v ps >/dev/null 2>&1 || need+=(procps)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
if [ "$mode" = test ]; then
  command -v strace >/dev/null 2>&1 || need+=(strace)  # the durable-acknowledgement test
  # the store tests also run against a real PostgreSQL (started by the tests as an unprivileged user)
  command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null \
    || need+=(postgresql)
  if [ "${THE_LOOP_SKIP_BROWSER:-0}" != "1" ] && [ -f tests/browser_required ]; then
    command -v chromium >/dev/null 2>&1 || need+=(chromium)
  fi
fi

if [ ${#need[@]} -eq 0 ]; then
  [ "$dry_run" = 1 ] && echo "nothing to install for $mode"
  exit 0
fi

if [ "$dry_run" = 1 ]; then
  echo "would install for $mode: ${need[*]}"
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
