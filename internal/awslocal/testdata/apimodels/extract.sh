#!/bin/sh
# extract.sh [BOTOCORE_DIR]: copies AWS's API models of the services the local emulator
# serves from an installed botocore (Apache-2.0) into this directory, as botocore ships
# them (data/<service>/<version>/service-2.json.gz), with botocore's LICENSE and NOTICE
# and PINNED (its version). Run by `make apimodels`, which then regenerates the compact
# table the emulator embeds (internal/awslocal/apimodel). The botocore version is pinned:
# another one is refused unless BOTOCORE_VERSION names it, so the models change only on
# purpose.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
want=${BOTOCORE_VERSION:-$(sed -n 's/^botocore: //p' "$here/PINNED" 2>/dev/null || true)}
src=${1:-$(python3 -c 'import botocore,os;print(os.path.dirname(botocore.__file__))')}
have=$(python3 -c 'import botocore;print(botocore.__version__)')
if [ -n "$want" ] && [ "$want" != "$have" ]; then
	echo "extract.sh: botocore $have is installed but $want is pinned: pip install botocore==$want, or BOTOCORE_VERSION=$have make apimodels to move the pin" >&2
	exit 2
fi
dist=$(python3 -c 'import botocore,os,glob;print(glob.glob(os.path.join(os.path.dirname(os.path.dirname(botocore.__file__)),"botocore-"+botocore.__version__+".dist-info"))[0])')
# the services internal/awslocal/served.go lists, by botocore's directory name
services="cloudformation cloudwatch ecr events iam kms lambda s3 secretsmanager sns sqs ssm sts"
for s in $services; do
	version=$(ls "$src/data/$s" | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' | sort | tail -1)
	mkdir -p "$here/$s/$version"
	if [ -f "$src/data/$s/$version/service-2.json.gz" ]; then
		cp "$src/data/$s/$version/service-2.json.gz" "$here/$s/$version/"
	else
		gzip -n -9 <"$src/data/$s/$version/service-2.json" >"$here/$s/$version/service-2.json.gz"
	fi
done
cp "$dist/LICENSE.txt" "$here/LICENSE"
cp "$dist/NOTICE" "$here/NOTICE"
printf 'botocore: %s\nsource: https://github.com/boto/botocore/tree/%s/botocore/data\nservices: %s\n' "$have" "$have" "$services" >"$here/PINNED"
echo "testdata/apimodels: the models of $(echo $services | wc -w) services from botocore $have"
