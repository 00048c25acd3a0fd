#!/usr/bin/env bash
# Installs cairn for the action's next step: from the repository the action comes from
# (CAIRN_VERSION=source), or a released module version. The binary's folder is added to
# the job's PATH through $GITHUB_PATH.
set -euo pipefail
bin="${RUNNER_TEMP:?RUNNER_TEMP is not set: run this as a GitHub Actions step}/cairn-bin"
mkdir -p "$bin"
if [ "${CAIRN_VERSION:-source}" = source ]; then
  root="$(cd "$GITHUB_ACTION_PATH/../../.." && pwd)"
  echo "cairn: building ./cmd/cairn of $root"
  (cd "$root" && GOBIN="$bin" go install ./cmd/cairn)
else
  echo "cairn: installing github.com/cairn-dev/cairn/cmd/cairn@$CAIRN_VERSION"
  GOBIN="$bin" go install "github.com/cairn-dev/cairn/cmd/cairn@$CAIRN_VERSION"
fi
echo "$bin" >> "$GITHUB_PATH"
