#!/usr/bin/env bash
# Stacks in many accounts and regions, checked with the real AWS CLI: `cairn local up
# --targets` provisions a target stack in a second account and in another region of
# cairn's account; one push of testdata/bundles/targets deploys stacks into all three
# places with outputs flowing across them; each stack is where its config says, with each
# account's credentials and region, and absent everywhere else; then removing the second
# account's stack deletes it there and nothing else. Usage: awscli-targets.sh PATH/TO/cairn
# (awscli.sh runs it). Skips when aws is not on PATH.
set -euo pipefail

cairn=${1:?usage: awscli-targets.sh PATH/TO/cairn}
if ! command -v aws >/dev/null 2>&1; then
	echo "test-awscli (targets): skipped: the AWS CLI is not installed (apt-get install -y awscli)"
	exit 0
fi

work=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill -INT "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

"$cairn" local up --addr 127.0.0.1:0 --dir "$work/state" --targets 111111111111:eu-west-1,000000000000:us-west-2 \
	--resource-delay 1ns --change-set-delay 1ns >"$work/env" 2>"$work/stderr" &
pid=$!
if ! "$cairn" local wait --dir "$work/state" --timeout 60s >/dev/null; then
	echo "test-awscli (targets): cairn local up did not get ready:"; cat "$work/stderr" "$work/state/local.log" 2>/dev/null; exit 1
fi
eval "$("$cairn" local env --dir "$work/state")"
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_PAGER="" AWS_CA_BUNDLE=""
unset AWS_PROFILE AWS_SESSION_TOKEN

failures=0
# at KEY REGION ARGS...: the AWS CLI with an account's credentials (an access key id of 12
# digits is that account; "test" is cairn's, 000000000000) in a region.
at() {
	local key=$1 region=$2
	shift 2
	AWS_ACCESS_KEY_ID=$key AWS_DEFAULT_REGION=$region aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"
}
check() {
	if [ "$2" = "$3" ]; then
		echo "ok   $1"
	else
		echo "FAIL $1: want [$2], got [$3]"
		failures=$((failures + 1))
	fi
}
# status KEY REGION STACK: the stack's status there, or "absent".
status() {
	at "$1" "$2" cloudformation describe-stacks --stack-name "$3" --query 'Stacks[0].StackStatus' --output text 2>/dev/null || echo absent
}

check "sts get-caller-identity of the second account's key" "111111111111" "$(at 111111111111 eu-west-1 sts get-caller-identity --query Account --output text)"
check "the target stack in the second account" "CREATE_COMPLETE" "$(status 111111111111 eu-west-1 cairn-target)"
check "its ports topic's export there" "arn:aws:sns:eu-west-1:111111111111:cairn-ports" \
	"$(at 111111111111 eu-west-1 cloudformation list-exports --query "Exports[?Name=='cairn-ports-service-token'].Value" --output text)"
role=$(at test us-east-1 sts assume-role --role-arn arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1 --role-session-name cli --query AssumedRoleUser.Arn --output text)
check "sts assume-role of the deploy role from cairn's account" "arn:aws:sts::111111111111:assumed-role/cairn-deploy-eu-west-1/cli" "$role"
check "sts assume-role from a third account is refused" "AccessDenied" \
	"$(at 333333333333 us-east-1 sts assume-role --role-arn arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1 --role-session-name cli 2>&1 | grep -o AccessDenied | head -1)"

bundle=$work/bundle
cp -r testdata/bundles/targets "$bundle"
if ! "$cairn" push "$bundle" --deployment shop --wait >"$work/push1" 2>&1; then
	echo "FAIL push of the targets bundle:"; cat "$work/push1"; failures=$((failures + 1))
fi

# The outputs name a stack outside cairn's account and region with where it lives: the
# follower of --wait, status, the graph and the owners of ports.
check "push --wait names remote and replica with their place" "1 1" \
	"$(grep -cE '^  [0-9:]+  remote \(111111111111, eu-west-1\) +create +done' "$work/push1") $(grep -cE '^  [0-9:]+  replica \(cairn.s account, us-west-2\) +create +done' "$work/push1")"
check "status names shop-remote with its place" "shop-remote (111111111111, eu-west-1)" \
	"$("$cairn" status shop 2>&1 | grep -o 'shop-remote (111111111111, eu-west-1)' | head -1)"
check "graph names shop-remote with its place" "shop-remote (111111111111, eu-west-1)" \
	"$("$cairn" graph "$bundle" 2>&1 | grep -o 'shop-remote (111111111111, eu-west-1)' | head -1)"
check "ports list names remote's port owner with its place" "shop-remote (111111111111, eu-west-1)" \
	"$("$cairn" ports list 2>&1 | grep -o 'shop-remote (111111111111, eu-west-1)' | head -1)"

# Where each stack is, and is not. KEY REGION of the four places looked at.
places="test:us-east-1 test:us-west-2 111111111111:eu-west-1 111111111111:us-east-1 test:eu-west-1"
declare -A home=([network]=test:us-east-1 [replica]=test:us-west-2 [remote]=111111111111:eu-west-1 [summary]=test:us-east-1)
for stack in network replica remote summary; do
	for p in $places; do
		want=absent
		[ "$p" = "${home[$stack]}" ] && want=CREATE_COMPLETE
		check "shop-$stack in ${p/test/000000000000}" "$want" "$(status "${p%%:*}" "${p#*:}" "shop-$stack")"
	done
done
output() { at "$1" "$2" cloudformation describe-stacks --stack-name "$3" --query "Stacks[0].Outputs[?OutputKey=='$4'].OutputValue" --output text; }
param() { at "$1" "$2" ssm get-parameter --name "$3" --query Parameter.Value --output text 2>/dev/null || echo absent; }
check "replica (us-west-2) reads network's queue" "$(output test us-east-1 shop-network QueueUrl)" "$(param test us-west-2 /shop/replica/upstream)"
check "remote (111111111111, eu-west-1) reads replica's queue" "$(output test us-west-2 shop-replica QueueUrl)" "$(param 111111111111 eu-west-1 /shop/remote/upstream)"
check "summary (home) reads remote's queue" "$(output 111111111111 eu-west-1 shop-remote QueueUrl)" "$(param test us-east-1 /shop/summary/upstream)"
check "remote's parameter is in its account and region only" "absent" "$(param test eu-west-1 /shop/remote/upstream)"
check "remote's port, from its region's ports topic" "20000" "$(output 111111111111 eu-west-1 shop-remote Port)"

# Drift detection checks each stack where it lives: a change made out of band to the
# second account's stack is found there.
# driftOf FILE NAME: the status of config stack NAME of graph shop in cairn drift's table
# (its CLOUDFORMATION column names a stack elsewhere with its place, in several words).
driftOf() {
	awk -v n="$2" '$1 == "shop" && $2 == n { for (i = 3; i <= NF; i++) if ($i ~ /^(IN_SYNC|DRIFTED|UNKNOWN|NOT_CHECKED)$/) { print $i; exit } }' "$1"
}
"$cairn" drift --wait >"$work/drift1" 2>&1 || true
check "drift: shop-remote in sync" "IN_SYNC" "$(driftOf "$work/drift1" remote)"
check "drift names shop-remote with its place" "shop-remote (111111111111, eu-west-1)" \
	"$(grep -o 'shop-remote (111111111111, eu-west-1)' "$work/drift1" | head -1)"
curl -fsS -X POST "$AWS_ENDPOINT_URL/_local/cloudformation/tamper?account=111111111111&region=eu-west-1" \
	-d '{"stack":"shop-remote","logicalId":"Link","property":"Value","value":"tampered"}' >/dev/null
"$cairn" drift --wait >"$work/drift2" 2>&1 || true
check "drift: shop-remote drifted in 111111111111/eu-west-1, the others in sync" "DRIFTED IN_SYNC IN_SYNC IN_SYNC" \
	"$(driftOf "$work/drift2" remote) $(for n in network replica summary; do driftOf "$work/drift2" "$n"; done | tr '\n' ' ' | sed 's/ $//')"

# Removing the second account's stack deletes it there and nothing else.
before=$(for s in network replica summary; do p=${home[$s]}; at "${p%%:*}" "${p#*:}" cloudformation describe-stacks --stack-name "shop-$s" --query 'Stacks[0].[StackName,StackStatus,LastUpdatedTime]' --output text; done)
python3 - "$bundle/cairn.yaml" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
start = s.index("  - name: remote")
end = s.index("  - name: summary")
s = s[:start] + s[end:]
s = s.replace("Upstream: ${output remote::QueueUrl}", "Upstream: ${output replica::QueueUrl}")
open(p, "w").write(s)
EOF
if ! "$cairn" push "$bundle" --deployment shop --wait >"$work/push2" 2>&1; then
	echo "FAIL push without remote:"; cat "$work/push2"; failures=$((failures + 1))
fi
check "shop-remote is gone from 111111111111/eu-west-1" "absent" "$(status 111111111111 eu-west-1 shop-remote)"
check "its parameter went with it" "absent" "$(param 111111111111 eu-west-1 /shop/remote/upstream)"
after=$(for s in network replica summary; do p=${home[$s]}; at "${p%%:*}" "${p#*:}" cloudformation describe-stacks --stack-name "shop-$s" --query 'Stacks[0].[StackName,StackStatus,LastUpdatedTime]' --output text; done)
check "network and replica untouched, summary updated to read replica" \
	"$(grep -v summary <<<"$before")" "$(grep -v summary <<<"$after")"
check "summary now reads replica's queue" "$(output test us-west-2 shop-replica QueueUrl)" "$(param test us-east-1 /shop/summary/upstream)"
check "the target stack stays" "CREATE_COMPLETE" "$(status 111111111111 eu-west-1 cairn-target)"

if [ "$failures" -gt 0 ]; then
	echo "test-awscli (targets): $failures check(s) failed; emulator log:"
	cat "$work/push1" "$work/push2" "$work/stderr" 2>/dev/null
	tail -50 "$work/state/local.log"
	exit 1
fi
echo "test-awscli (targets): all checks passed against $AWS_ENDPOINT_URL"
