#!/usr/bin/env bash
# The action's step: `cairn plan` with the plan posted as the pull request's comment;
# `cairn apply` of the merged content from the change sets reviewed for it (and, where no
# reviewed plan covers it, a plan of that content posted for review: replan-id); or
# `cairn approve` of exactly one plan. After an apply or an approval, the comment of the
# merged pull request, and of each pull request whose plan changed status (applied, stale,
# superseded), is updated.
#
# A comment's Markdown is always written to a file ($RUNNER_TEMP/cairn-plan-NAME.md, the
# output comment-file, and the job summary); gh posts it when it is installed, updating the
# comment that starts with the same hidden marker instead of adding another.
set -euo pipefail
: "${INPUT_COMMAND:?}" "${INPUT_PATH:?}" "${INPUT_DEPLOYMENT:?}"
common=()
if [ -n "${INPUT_BUCKET:-}" ]; then
  common+=(--bucket "$INPUT_BUCKET")
fi
args=(--deployment "$INPUT_DEPLOYMENT" --wait --timeout "${INPUT_TIMEOUT:-30m}" "${common[@]}")
out="${GITHUB_OUTPUT:-/dev/null}"
comment="$RUNNER_TEMP/cairn-plan-$INPUT_DEPLOYMENT.md"

# gh_ready says whether comments are posted: wanted, and gh installed.
gh_ready() {
  [ "${INPUT_COMMENT:-true}" = true ] && command -v gh >/dev/null
}

# post FILE PR posts FILE as PR's comment, updating the one with the same marker; with
# "update" as a third argument it only updates (a pull request without cairn's comment
# gets none).
post() {
  local file="$1" pr="$2" mode="${3:-post}" marker repo id
  marker="$(head -n 1 "$file")"
  repo="${GITHUB_REPOSITORY:?}"
  id="$(gh api --paginate "repos/$repo/issues/$pr/comments" \
    --jq ".[] | select(.body | startswith(\"$marker\")) | .id" | head -n 1)"
  if [ -n "$id" ]; then
    gh api --silent -X PATCH "repos/$repo/issues/comments/$id" -F "body=@$file"
    echo "cairn: updated comment $id of pull request #$pr"
  elif [ "$mode" = post ]; then
    gh api --silent -X POST "repos/$repo/issues/$pr/comments" -F "body=@$file"
    echo "cairn: commented on pull request #$pr"
  fi
}

# plan_comment PR [merged] writes the plan of PATH (for pull request PR; with "merged", of
# its merged content, after the merge) as a comment into $comment, prints cairn's
# messages, and sets plan_id and code. A plan run superseded by a newer upload, or late
# (PR merged before it: the plan of its merged content waits for the gate), exits 3 and
# has nothing to post: the comment stays as the newer job or the apply job left it.
plan_comment() {
  local pr="$1" log="$RUNNER_TEMP/cairn-plan-$INPUT_DEPLOYMENT.log" prargs=()
  if [ -n "$pr" ]; then
    prargs=(--pr "$pr")
  fi
  if [ "${2:-}" = merged ]; then
    prargs+=(--merged)
  fi
  code=0
  plan_id=""
  cairn plan "$INPUT_PATH" "${args[@]}" "${prargs[@]}" --format md >"$comment" 2>"$log" || code=$?
  cat "$log" >&2
  if [ "$code" -eq 3 ]; then
    echo "cairn: nothing to post: this plan run was superseded by a newer upload, or its pull request merged before it (see above)"
    return
  fi
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
  echo "comment-file=$comment" >>"$out"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    cat "$comment" >>"$GITHUB_STEP_SUMMARY"
  fi
  if [ "${INPUT_COMMENT:-true}" != true ]; then
    return
  elif [ -z "$pr" ]; then
    echo "cairn: no pull request to comment on: the comment is in $comment"
  elif ! command -v gh >/dev/null; then
    echo "cairn: gh is not installed: the comment for pull request #$pr is in $comment"
  else
    post "$comment" "$pr"
  fi
}

# comments_before keeps the comment of each pull request's newest plan as it stands before
# an apply or an approval, so update_comments posts only those it changes.
comments_before() {
  gh_ready || return 0
  local before="$RUNNER_TEMP/cairn-comments-before-$INPUT_DEPLOYMENT"
  rm -rf "$before"
  cairn plans "$INPUT_DEPLOYMENT" "${common[@]}" --comments "$before" >/dev/null || true
}

# update_comments posts again the comment of the merged pull request's newest plan, and of
# each other pull request whose newest plan's comment this apply or approval changed
# (applied, stale: why and what to do, superseded). The others are left alone: editing
# every recent pull request's comment on each merge is noise, and costs API calls.
update_comments() {
  gh_ready || return 0
  local before="$RUNNER_TEMP/cairn-comments-before-$INPUT_DEPLOYMENT" dir="$RUNNER_TEMP/cairn-comments-$INPUT_DEPLOYMENT" merged pr file
  merged="$(merged_pr)"
  rm -rf "$dir"
  cairn plans "$INPUT_DEPLOYMENT" "${common[@]}" --comments "$dir" | while read -r pr file; do
    if [ "$pr" = "$merged" ] || ! cmp -s "$file" "$before/$pr.md"; then
      post "$file" "$pr" update
    fi
  done
}

# merged_pr is the pull request the pushed commit belongs to, as GitHub knows it.
merged_pr() {
  if [ -n "${INPUT_PULL_REQUEST:-}" ]; then
    echo "$INPUT_PULL_REQUEST"
  elif command -v gh >/dev/null && [ -n "${GITHUB_SHA:-}" ]; then
    gh api "repos/${GITHUB_REPOSITORY:?}/commits/$GITHUB_SHA/pulls" --jq '.[0].number' 2>/dev/null | head -n 1 || true
  fi
}

case "$INPUT_COMMAND" in
plan)
  plan_comment "${INPUT_PULL_REQUEST:-}"
  echo "plan-id=$plan_id" >>"$out"
  if [ "$code" -eq 3 ]; then
    exit 0
  fi
  exit "$code"
  ;;
apply)
  log="$RUNNER_TEMP/cairn-apply-$INPUT_DEPLOYMENT.log"
  code=0
  comments_before
  merged="$(merged_pr)"
  prargs=()
  if [ -n "$merged" ]; then
    # Recorded with the apply: a plan of this pull request's own checkout uploaded after
    # the merge is late and makes nothing.
    prargs=(--pr "$merged")
  fi
  cairn apply "$INPUT_PATH" "${args[@]}" "${prargs[@]}" | tee "$log" || code=$?
  plans="$(sed -n 's/^plan \([^ ]*\) of .* (made .*): its reviewed entries for .*/\1/p' "$log" | tr '\n' ' ')"
  echo "plan-id=${plans% }" >>"$out"
  update_comments
  if [ "$code" -eq 1 ] && grep -q '^  refused: ' "$log"; then
    # No reviewed plan covers the merged content: it is planned now, posted on the merged
    # pull request and in the job summary, and the gate approves exactly that plan.
    echo "cairn: the merged content is not covered by a reviewed plan: planning it for review"
    plan_comment "$merged" merged
    if [ "$code" -ne 0 ] || [ -z "$plan_id" ]; then
      exit 1
    fi
    echo "replan-id=$plan_id" >>"$out"
    echo "cairn: plan $plan_id of the merged content waits for the gate: approve it to apply it"
    exit 0
  fi
  exit "$code"
  ;;
approve)
  : "${INPUT_PLAN_ID:?the approve command needs the input plan-id}"
  code=0
  comments_before
  cairn approve "$INPUT_DEPLOYMENT" "$INPUT_PLAN_ID" --wait --timeout "${INPUT_TIMEOUT:-30m}" "${common[@]}" || code=$?
  echo "plan-id=$INPUT_PLAN_ID" >>"$out"
  update_comments
  exit "$code"
  ;;
*)
  echo "cairn: command must be plan, apply or approve, not \"$INPUT_COMMAND\"" >&2
  exit 2
  ;;
esac
