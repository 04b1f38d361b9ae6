"""One Lambda handler in this new process, as a cold Lambda runs it (bench/lane.py):

    python -m bench.lane_step trigger|merge EVENT.json OUT.json

trigger: the trigger's handler on the event; OUT has its outcome and the payloads it sent the merge
function. merge: the merge function's handler on a payload; OUT has its answer and the merge's work
seconds (from the run's summary)."""
import json
import sys
import uuid
from types import SimpleNamespace


def main(kind: str, src: str, out: str) -> None:
    with open(src, encoding="utf-8") as f:
        event = json.load(f)
    ctx = SimpleNamespace(function_name=f"olake-cow-{kind}", memory_limit_in_mb=3008, aws_request_id=str(uuid.uuid4()),
                          invoked_function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:olake-cow-{kind}")
    if kind == "trigger":
        from olake_trigger import handler
        from testkit import iam

        with iam.api_calls() as seen:
            outcome = handler.lambda_handler(event, ctx)
        result = {"outcome": outcome, "lane": [json.loads(p["Payload"]) for action, p, _ in seen
                                               if action == "lambda:InvokeFunction"]}
    else:
        import boto3

        from olake_merge import handler

        answer = handler.lambda_handler(event, ctx)
        bucket, key = answer["summary"][len("s3://"):].split("/", 1)
        summary = json.loads(boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
        work = sum(t["timings_s"].get("reading_changes", 0) + t["timings_s"].get("merging", 0)
                   for t in summary["tables"])
        result = {"answer": answer, "work_s": round(work, 3)}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
