#!/usr/bin/env bash
# The action's step: `cairn plan` with the plan posted as the pull request's comment, or
# `cairn apply` of exactly the plan made for the same content.
#
# The comment's Markdown is always written to a file ($RUNNER_TEMP/cairn-plan-NAME.md, the
# output comment-file, and the job summary); gh posts it when it is installed, updating the
# comment that starts with the same hidden marker instead of adding another.
set -euo pipefail
: "${INPUT_COMMAND:?}" "${INPUT_PATH:?}" "${INPUT_DEPLOYMENT:?}"
args=(--deployment "$INPUT_DEPLOYMENT" --wait --timeout "${INPUT_TIMEOUT:-30m}")
if [ -n "${INPUT_BUCKET:-}" ]; then
  args+=(--bucket "$INPUT_BUCKET")
fi
out="${GITHUB_OUTPUT:-/dev/null}"

case "$INPUT_COMMAND" in
plan)
  comment="$RUNNER_TEMP/cairn-plan-$INPUT_DEPLOYMENT.md"
  log="$RUNNER_TEMP/cairn-plan-$INPUT_DEPLOYMENT.log"
  prargs=()
  if [ -n "${INPUT_PULL_REQUEST:-}" ]; then
    prargs=(--pr "$INPUT_PULL_REQUEST")
  fi
  code=0
  cairn plan "$INPUT_PATH" "${args[@]}" "${prargs[@]}" --format md >"$comment" 2>"$log" || code=$?
  cat "$log" >&2
  if [ ! -s "$comment" ]; then
    # No plan to show (the bundle does not validate, or cairn cannot be reached): the
    # comment says why, under the same marker.
    {
      echo "<!-- cairn:plan deployment=$INPUT_DEPLOYMENT -->"
      echo "# cairn plan of deployment $INPUT_DEPLOYMENT: not made (exit $code)"
      echo
      echo '```'
      cat "$log"
      echo '```'
    } >"$comment"
  fi
  plan_id="$(sed -n 's/^plan id: //p' "$log" | tail -n 1)"
  echo "plan-id=$plan_id" >>"$out"
  echo "comment-file=$comment" >>"$out"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    cat "$comment" >>"$GITHUB_STEP_SUMMARY"
  fi
  if [ "${INPUT_COMMENT:-true}" = true ]; then
    if [ -z "${INPUT_PULL_REQUEST:-}" ]; then
      echo "cairn: no pull request to comment on: the comment is in $comment"
    elif ! command -v gh >/dev/null; then
      echo "cairn: gh is not installed: the comment for pull request #$INPUT_PULL_REQUEST is in $comment"
    else
      marker="$(head -n 1 "$comment")"
      repo="${GITHUB_REPOSITORY:?}"
      id="$(gh api --paginate "repos/$repo/issues/$INPUT_PULL_REQUEST/comments" \
        --jq ".[] | select(.body | startswith(\"$marker\")) | .id" | head -n 1)"
      if [ -n "$id" ]; then
        gh api --silent -X PATCH "repos/$repo/issues/comments/$id" -F "body=@$comment"
        echo "cairn: updated comment $id of pull request #$INPUT_PULL_REQUEST"
      else
        gh api --silent -X POST "repos/$repo/issues/$INPUT_PULL_REQUEST/comments" -F "body=@$comment"
        echo "cairn: commented on pull request #$INPUT_PULL_REQUEST"
      fi
    fi
  fi
  exit "$code"
  ;;
apply)
  code=0
  cairn apply "$INPUT_PATH" "${args[@]}" | tee "$RUNNER_TEMP/cairn-apply-$INPUT_DEPLOYMENT.log" || code=$?
  plan_id="$(sed -n 's/^plan \([^ ]*\) of deployment .* was made .* for this content.*/\1/p' "$RUNNER_TEMP/cairn-apply-$INPUT_DEPLOYMENT.log" | head -n 1)"
  echo "plan-id=$plan_id" >>"$out"
  exit "$code"
  ;;
*)
  echo "cairn: command must be plan or apply, not \"$INPUT_COMMAND\"" >&2
  exit 2
  ;;
esac
