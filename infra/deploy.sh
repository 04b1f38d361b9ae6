#!/usr/bin/env bash
# `make deploy`: package and upload the job's code, build the Lambda, deploy the stack. Runs from the
# deploy environment only (SAM CLI, cfn-lint, boto3: .venv-deploy; no Java, no pyspark).
# Settings come from the environment (README, "Deploy"):
#   WAREHOUSE_BUCKET, SECRET_ARN, NAMESPACES   required
#   STACK (olake-cow), WAREHOUSE_PREFIX (""), ARTIFACTS_BUCKET (= WAREHOUSE_BUCKET),
#   ARTIFACTS_PREFIX (olake-cow/<STACK>: each stack its own), EXTRA_PARAMS ("Key=Value ..." for other
#   stack parameters; a value may hold spaces and JSON)
#   region: AWS_REGION, AWS_DEFAULT_REGION or the AWS profile's (one rule for every script and sam)
#   DEPLOY_DRY_RUN=1: package, upload and build, then print the `sam deploy` command instead of running it
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for v in WAREHOUSE_BUCKET SECRET_ARN NAMESPACES; do [ -n "${!v:-}" ] || missing+=("$v"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deploy: error: set ${missing[*]} (see README, Deploy; SECRET_ARN comes from make secret)" >&2
  exit 2
fi
STACK=${STACK:-olake-cow}
ARTIFACTS_BUCKET=${ARTIFACTS_BUCKET:-$WAREHOUSE_BUCKET}
ARTIFACTS_PREFIX=${ARTIFACTS_PREFIX-olake-cow/$STACK}
PY=${PY:-.venv-deploy/bin/python}
SAM=${SAM:-.venv-deploy/bin/sam}
export SAM_CLI_TELEMETRY=0
# lambda/Makefile installs the Lambda's dependencies with this interpreter (absolute: sam runs it elsewhere)
PYTHON=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")
export PYTHON
REGION=$($PY -m infra.awsenv region) || exit 2
NAMESPACES=$($PY -m infra.awsenv namespaces "$NAMESPACES") || exit 2  # "sales, crm," is stored as sales,crm

echo "==> checking the settings (region $REGION)"
PARAMS_FILE=$(mktemp)
trap 'rm -f "$PARAMS_FILE"' EXIT
$PY -m infra.preflight --stack "$STACK" --region "$REGION" --warehouse-bucket "$WAREHOUSE_BUCKET" \
  --warehouse-prefix "${WAREHOUSE_PREFIX:-}" --artifacts-bucket "$ARTIFACTS_BUCKET" \
  --artifacts-prefix "$ARTIFACTS_PREFIX" --secret-arn "$SECRET_ARN" --namespaces "$NAMESPACES" \
  --extra-params "${EXTRA_PARAMS:-}" --params-out "$PARAMS_FILE" || exit 2
mapfile -t EXTRA < "$PARAMS_FILE"  # one checked Key=Value a line: spaces and JSON stay in one parameter
# A Spark 4.1 release (emr-spark-8.1.0) runs the Iceberg jar the Spark 4 leg pins: fetched by its Maven
# coordinates into .venv-spark4 (make SPARK=4 setup, once) and uploaded beside the code.
LABEL=$(sed -n 's/^EmrReleaseLabel=//p' "$PARAMS_FILE")
JAR=$($PY -m infra.iceberg_jars for-release "$LABEL")  # "" (the template's default, 7.x): none
JAR_ARGS=()
if [ -n "$JAR" ]; then
  SPARK4_JARS=${SPARK4_JARS:-.venv-spark4/jars}
  if [ ! -f "$SPARK4_JARS/$JAR" ]; then
    echo "==> $LABEL runs Spark 4.1: fetching $JAR (make SPARK=4 setup)"
    "${MAKE:-make}" --no-print-directory SPARK=4 setup
  fi
  JAR_ARGS=(--jar "$SPARK4_JARS/$JAR")
fi
echo "==> packaging the job (region $REGION)"
VERSION=$($PY -m infra.package_job --upload "s3://$ARTIFACTS_BUCKET/$ARTIFACTS_PREFIX/code" "${JAR_ARGS[@]}" \
  --region "$REGION") || exit 2
echo "    code version $VERSION"
# SAM's advice for its own workflow (sam deploy --guided, samconfig.toml) does not apply to make deploy:
# those lines are dropped; everything else SAM prints is shown, and its exit code kept (pipefail).
sam_said() { sed -u -e '/^Commands you can use next/,/^ *$/d' -e '/samconfig\.toml/d' -e '/sam deploy --guided/d'; }
echo "==> building the trigger Lambda"
$SAM build --build-in-source --template template.yaml 2>&1 | sam_said
OVERRIDES=("WarehouseBucket=$WAREHOUSE_BUCKET" "WarehousePrefix=${WAREHOUSE_PREFIX:-}"
           "DestinationSecretArn=$SECRET_ARN" "SourceNamespaces=$NAMESPACES" "ArtifactsBucket=$ARTIFACTS_BUCKET"
           "ArtifactsPrefix=$ARTIFACTS_PREFIX" "CodeVersion=$VERSION" "${EXTRA[@]}")
CMD=("$SAM" deploy --stack-name "$STACK" --region "$REGION" --resolve-s3 --capabilities CAPABILITY_IAM
     --no-fail-on-empty-changeset --parameter-overrides "${OVERRIDES[@]}")
# DEPLOY_PARAMS_OUT: the stack's parameters, one Key=Value a line (make try-local creates its stack from them)
[ -z "${DEPLOY_PARAMS_OUT:-}" ] || printf '%s\n' "${OVERRIDES[@]}" > "$DEPLOY_PARAMS_OUT"
if [ -n "${DEPLOY_DRY_RUN:-}" ]; then
  printf '==> dry run: would run:'; printf ' %q' "${CMD[@]}"; echo
  exit 0
fi
echo "==> deploying stack $STACK"
"${CMD[@]}" 2>&1 | sam_said
echo "==> done. Once per bucket, if not yet done: make bucket-events BUCKET=$WAREHOUSE_BUCKET"
