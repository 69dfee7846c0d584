#!/usr/bin/env bash
# Builds fusebench at COMMIT in the git worktree WORKTREE (made on first use, checked out
# again after that, so a later commit rebuilds only what it changed; with ccache even a
# fresh worktree mostly hits the cache) by that commit's own scripts/build.sh. Used by
# scripts/ci_gate.sh (the base of a pull request) and `fusebench bisect` (each commit).
#
#   scripts/build_commit.sh COMMIT WORKTREE      -> WORKTREE/build/fusebench
set -euo pipefail
cd "$(dirname "$0")/.."
commit=${1:?usage: scripts/build_commit.sh COMMIT WORKTREE}
worktree=${2:?usage: scripts/build_commit.sh COMMIT WORKTREE}
sha=$(git rev-parse --verify --quiet "${commit}^{commit}") || {
  echo "build_commit: '$commit' names no commit here" >&2
  exit 2
}
if [ -d "$worktree" ]; then
  git -C "$worktree" checkout --quiet --detach "$sha"
else
  mkdir -p "$(dirname "$worktree")"
  git worktree add --quiet --detach "$worktree" "$sha"
fi
echo "build_commit: $commit ($(git rev-parse --short "$sha")) in $worktree"
"$worktree/scripts/build.sh" fusebench
