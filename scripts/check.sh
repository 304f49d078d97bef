#!/usr/bin/env bash
# npm run check: what a contributor runs before pushing (about 2.5 min of CPU). The types, the
# linter, the format, generated/ as `npm run generate` makes it from openapi.yaml, and a fast
# subset of the tests: those that serve requests in-process (no server process, no database
# server, no tool run), covering the contract, the handlers of every version, auth, errors and
# HTTP. CI (.ci/run) runs all of it, and the whole suite, on both Node versions.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '== %s\n' "$*"; }

step "type check"
npm run -s typecheck
step "lint"
npm run -s lint
step "format"
npm run -s format:check >/dev/null || { npx prettier --list-different .; echo "check: not formatted: npm run format"; exit 1; }
step "generate, and generated/ as committed"
npm run -s generate
if [ -n "$(git status --porcelain -- generated)" ]; then
  git status --short -- generated
  echo "check: generated/ differs from what is committed: commit it with the change to openapi.yaml"
  exit 1
fi
step "the fast tests"
npx tap --disable-coverage --reporter=terse \
  test/auth.test.ts test/config.test.ts test/contract.test.ts test/errors.test.ts test/examples.test.ts \
  test/handlers.test.ts test/http.test.ts test/layers.test.ts test/lifecycle.test.ts test/names.test.ts \
  test/paths.test.ts test/pets.test.ts test/round-trip.test.ts test/shared-read.test.ts
