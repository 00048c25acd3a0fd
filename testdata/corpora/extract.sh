#!/bin/sh
# extract.sh NAME GITDIR: writes testdata/corpora/NAME/ from a snapshot of the corpus's
# upstream repository (a git directory, bare or not): templates.tar.gz (the fixture
# templates, as git archive gives them: the same bytes for the same commit), the upstream
# LICENSE and NOTICE, and PINNED (repository, commit). NAME is cfn-lint or sam-translator.
set -eu
name=$1
src=$2
here=$(cd "$(dirname "$0")" && pwd)
case $name in
cfn-lint)
	repo=aws-cloudformation/cfn-lint
	paths="test/fixtures/templates"
	notices="LICENSE NOTICE"
	;;
sam-translator)
	repo=aws/serverless-application-model
	paths="tests/translator/input"
	notices="LICENSE NOTICE THIRD_PARTY_LICENSES"
	;;
*)
	echo "extract.sh: unknown corpus $name: give cfn-lint or sam-translator" >&2
	exit 2
	;;
esac
gitd=$(cd "$src" && cd "$(git rev-parse --git-dir)" && pwd)
commit=$(git --git-dir="$gitd" rev-parse HEAD)
out="$here/$name"
mkdir -p "$out"
# only templates: .yaml, .yml, .json, .template
files=$(git --git-dir="$gitd" ls-tree -r --name-only "$commit" -- $paths | grep -E '\.(yaml|yml|json|template)$')
# shellcheck disable=SC2086
git --git-dir="$gitd" archive --format=tar "$commit" -- $files | gzip -n -9 >"$out/templates.tar.gz"
for f in $notices; do
	git --git-dir="$gitd" show "$commit:$f" >"$out/$f"
done
printf 'repository: https://github.com/%s\ncommit: %s\npaths: %s\n' "$repo" "$commit" "$paths" >"$out/PINNED"
echo "testdata/corpora/$name: $(echo "$files" | wc -l) templates of $repo at $commit"
