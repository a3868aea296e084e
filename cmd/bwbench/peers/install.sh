#!/bin/sh
# install.sh installs the Node.js peers bwbench measures (graphile-worker and
# pg-boss, the versions package-lock.json pins) into node_modules beside
# this script, from the npm registry. bwbench skips their rows, with a
# message, until this has run. Needs Node.js (20 or later) and npm.
set -eu
cd "$(dirname "$0")"
command -v node >/dev/null 2>&1 || { echo "install.sh: Node.js is not installed" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "install.sh: npm is not installed" >&2; exit 1; }
# Both packages declare Node.js 22 in "engines" and run on 20: the warning
# is expected, and bwbench's rows show whether they worked.
npm ci --no-audit --no-fund --loglevel=error
echo "installed: graphile-worker $(node -p 'require("./node_modules/graphile-worker/package.json").version'), pg-boss $(node -p 'require("./node_modules/pg-boss/package.json").version') under $(node --version)"
