#!/usr/bin/env bash
# One-command deploy (make deploy): package and upload the job's code, build the Lambda, deploy
# the stack. Settings come from the environment (see README, "Deploy"):
#   WAREHOUSE_BUCKET, SECRET_ARN, NAMESPACES   required
#   STACK (olake-cow), WAREHOUSE_PREFIX (""), ARTIFACTS_BUCKET (= WAREHOUSE_BUCKET),
#   ARTIFACTS_PREFIX (olake-cow), AWS_REGION, EXTRA_PARAMS ("Key=Value ..." for other parameters)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${WAREHOUSE_BUCKET:?set WAREHOUSE_BUCKET to the OLake warehouse bucket}"
: "${SECRET_ARN:?set SECRET_ARN (python infra/put_destination_secret.py prints it)}"
: "${NAMESPACES:?set NAMESPACES to the source namespaces, comma separated}"
STACK=${STACK:-olake-cow}
ARTIFACTS_BUCKET=${ARTIFACTS_BUCKET:-$WAREHOUSE_BUCKET}
ARTIFACTS_PREFIX=${ARTIFACTS_PREFIX:-olake-cow}
PY=${PY:-.venv/bin/python}
SAM=${SAM:-.venv-deploy/bin/sam}
export SAM_CLI_TELEMETRY=0

echo "==> packaging the job"
VERSION=$($PY infra/package_job.py --upload "s3://$ARTIFACTS_BUCKET/$ARTIFACTS_PREFIX/code")
echo "    code version $VERSION"
echo "==> building the trigger Lambda"
$SAM build --build-in-source --template template.yaml
echo "==> deploying stack $STACK"
# shellcheck disable=SC2086
$SAM deploy --stack-name "$STACK" --resolve-s3 --capabilities CAPABILITY_IAM --no-fail-on-empty-changeset \
  ${AWS_REGION:+--region "$AWS_REGION"} \
  --parameter-overrides \
    "WarehouseBucket=$WAREHOUSE_BUCKET" "WarehousePrefix=${WAREHOUSE_PREFIX:-}" \
    "DestinationSecretArn=$SECRET_ARN" "SourceNamespaces=$NAMESPACES" \
    "ArtifactsBucket=$ARTIFACTS_BUCKET" "ArtifactsPrefix=$ARTIFACTS_PREFIX" "CodeVersion=$VERSION" \
    ${EXTRA_PARAMS:-}
echo "==> done. If not yet done once: $PY infra/enable_bucket_events.py $WAREHOUSE_BUCKET"
