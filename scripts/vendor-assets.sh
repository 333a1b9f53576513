#!/usr/bin/env bash
# Copy the dashboard's front-end files from the installed npm packages (package-lock.json) into
# the Python package, where the daemon serves them and the wheel picks them up. The copies are
# git-ignored: the lock file is the source, nothing is vendored into git.
set -euo pipefail

dest=src/the_loop/web/static/vendor
files=(
  node_modules/@xterm/xterm/lib/xterm.js
  node_modules/@xterm/xterm/css/xterm.css
  node_modules/@xterm/addon-fit/lib/addon-fit.js
)
for file in "${files[@]}"; do
  if [ ! -f "$file" ]; then
    echo "missing $file: run \`npm ci\` (make setup) first" >&2
    exit 1
  fi
done
rm -rf "$dest"
mkdir -p "$dest"
cp "${files[@]}" "$dest/"
cp node_modules/@xterm/xterm/LICENSE "$dest/xterm.LICENSE"
cp node_modules/@xterm/addon-fit/LICENSE "$dest/addon-fit.LICENSE"
touch "$dest/.copied"
