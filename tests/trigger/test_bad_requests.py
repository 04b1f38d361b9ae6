"""Every request or event the trigger must refuse, against moto: no EMR run started, nothing written
(no state item, no debounce schedule), one line that names the problem, and the refusal counted in a
metric. The cases are the trigger table of docs/BAD-INPUT.md."""
import json
import os
import uuid

import pytest

from olake_trigger.events import EventError
from testkit.aws import BUCKET, emf_points, fixture
from testkit.docs import bad_input_cases

pytestmark = pytest.mark.aws
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def direct(**payload):
    return {"namespace": "sales", **payload}


def schedule(**payload):
    return {"trigger": "schedule", "namespaces": ["sales"], "window": "w1", **payload}


def commit(key_in_event):
    """An S3 Object Created event whose key is written as S3 encodes it (the object exists, decoded)."""
    def build(aws):
        from urllib.parse import unquote_plus

        aws.s3.put_object(Bucket=BUCKET, Key=unquote_plus(key_in_event),
                          Body=json.dumps(fixture("source_new_commit.metadata.json")))
        event = fixture("s3_object_created.json")
        event["id"] = str(uuid.uuid4())
        event["detail"]["object"]["key"] = key_in_event
        return event
    return build


def with_legacy_table(event):
    """`event`, after Glue gets a plain Hive table sales.legacy (no Iceberg metadata)."""
    def build(aws):
        aws.glue.create_table(DatabaseName="sales", TableInput={
            "Name": "legacy", "TableType": "EXTERNAL_TABLE", "Parameters": {"classification": "parquet"}})
        return event
    return build


META = "metadata/00007-6b3bc9f4-1d0e-4f4e-9c52-1a2f9bd1e0aa.metadata.json"
ANY = {"SOURCE_NAMESPACES": "*"}  # a stack that mirrors every namespace: the catalog's rules still apply
READONLY = {"SOURCE_MODE": "readonly"}

# case -> (stack environment changes, the event (or a builder of it), what happens, message excerpt)
# what happens: "error" (the invocation fails with EventError: RejectedEvents), "refused" (status refused:
# Refused), "ignored" or "skipped" (nothing to do).
CASES = {
    "namespace-not-the-stacks": ({}, direct(namespace="hr"), "error",
                                 "namespace 'hr' is not one of this stack's source namespaces (sales, crm)"),
    "namespace-a-mirror": ({}, direct(namespace="sales_cow"), "error", "'sales_cow' is a mirror namespace"),
    "namespace-a-mirror-on-any-stack": (ANY, direct(namespace="sales_cow"), "error", "is a mirror namespace"),
    "namespace-not-in-glue": (ANY, direct(namespace="ghost"), "refused",
                              "namespace 'ghost' is not in the Glue catalog"),
    "namespace-not-in-glue-dry-run": (ANY, direct(namespace="ghost", dry_run=True), "refused",
                                      "namespace 'ghost' is not in the Glue catalog"),
    "namespace-not-in-glue-forced": (ANY, direct(namespace="ghost", force=True), "refused",
                                     "namespace 'ghost' is not in the Glue catalog"),
    "table-not-in-glue": ({}, direct(tables=["ghost"]), "refused",
                          "table(s) ghost not in the Glue database 'sales'"),
    "table-not-in-glue-forced": ({}, direct(tables=["orders", "ghost"], force=True), "refused",
                                 "table(s) ghost not in the Glue database"),
    "table-not-iceberg": ({}, with_legacy_table(direct(tables=["legacy"])), "refused",
                          "table(s) legacy in the Glue database 'sales' are not Iceberg tables"),
    "table-not-iceberg-forced": ({}, with_legacy_table(direct(tables=["orders", "legacy"], force=True)), "refused",
                                 "are not Iceberg tables, so not OLake's"),
    "namespace-uppercase": (ANY, direct(namespace="Sales"), "error",
                            "namespace name 'Sales' cannot be used with a glue catalog"),
    "namespace-dash": (ANY, direct(namespace="sales-db"), "error",
                       "namespace name 'sales-db' cannot be used with a glue catalog"),
    "namespace-dots": (ANY, direct(namespace=".."), "error", "namespace name '..' cannot be used"),
    "namespace-empty": ({}, direct(namespace=""), "error", "namespace name is empty"),
    "namespace-not-text": ({}, direct(namespace=7), "error", "namespace must be a string, got int"),
    "namespace-missing": ({}, {"tables": ["orders"]}, "error", "direct invocation needs 'namespace'"),
    "table-plus": ({}, direct(tables=["line+items"]), "error",
                   "table name 'line+items' cannot be used with a glue catalog"),
    "table-uppercase": ({}, direct(tables=["Orders"]), "error", "table name 'Orders' cannot be used with a glue"),
    "table-not-ascii": ({}, direct(tables=["caf\u00e9"]), "error", "cannot be used with a glue catalog"),
    "table-mirror-name-too-long": ({}, direct(tables=["t" * 254]), "error",
                                   "longer than the 255 characters Glue allows"),
    "tables-blank-text": ({}, direct(tables="   "), "error", "'tables' must be a non-empty list"),
    "tables-empty-list": ({}, direct(tables=[]), "error", "'tables' must be a non-empty list"),
    "tables-not-text": ({}, direct(tables=[1]), "error", "table must be a string, got int"),
    "source-mode-truncate-on-readonly-stack": (READONLY, direct(source_mode="truncate"), "error",
                                               "this stack runs in readonly mode (stack parameter SourceMode), "
                                               "and a request cannot change it: truncate writes OLake's tables"),
    "source-mode-readonly-on-truncate-stack": ({"SOURCE_MODE": "truncate"}, direct(source_mode="readonly"), "error",
                                               "this stack runs in truncate mode"),
    "source-mode-unknown": ({}, direct(source_mode="sometimes"), "error",
                            "'source_mode' must be readonly or truncate"),
    "mirror-format-unknown": ({}, direct(mirror_format="mor"), "error", "'mirror_format' must be"),
    "source-expiry-in-a-request": ({}, direct(maintenance={"expire_source_hours": 24}), "error",
                                   "source expiry writes OLake's tables"),
    "orphans-under-a-day": ({}, direct(maintenance={"remove_orphans_hours": 0}), "error",
                            "'maintenance.remove_orphans_hours' must be at least 24 hours"),
    "orphans-23-hours": ({}, direct(maintenance={"remove_orphans_hours": 23}), "error", "must be at least 24 hours"),
    "fold-ratio-past-one": ({}, direct(maintenance={"fold_ratio": 2}), "error",
                            "'maintenance.fold_ratio' must be a fraction"),
    "maintenance-hours-text": ({}, direct(maintenance={"expire_mirror_hours": "1d"}), "error",
                               "'maintenance.expire_mirror_hours' must be a number of hours"),
    "maintenance-unknown-key": ({}, direct(maintenance={"expire_hours": 1}), "error",
                                "'maintenance' has unknown key(s) expire_hours"),
    "flag-not-boolean": ({}, direct(force="true"), "error", "'force' must be true or false"),
    "verify-not-boolean": ({}, direct(verify="yes"), "error", "'verify' must be true or false"),
    "direct-unknown-key": ({}, direct(table="orders"), "error", "unknown key(s): table"),
    "schedule-namespaces-empty": ({}, schedule(namespaces=[]), "error", "needs 'namespaces': a non-empty list"),
    "schedule-namespace-not-the-stacks": ({}, schedule(namespaces=["sales", "hr"]), "error",
                                          "namespace 'hr' is not one of this stack's source namespaces"),
    "schedule-mirror-namespace": ({}, schedule(namespaces=["sales_cow"]), "error", "is a mirror namespace"),
    "schedule-source-mode-truncate": (READONLY, schedule(source_mode="truncate"), "error",
                                      "this stack runs in readonly mode"),
    "schedule-orphans-under-a-day": ({}, schedule(maintenance={"remove_orphans_hours": 0}), "error",
                                     "must be at least 24 hours"),
    "schedule-tables-not-a-map": ({}, schedule(tables=["orders"]), "error",
                                  "'tables' must map a namespace to a list of table names"),
    "schedule-verify": ({}, schedule(verify=True), "error", "unknown key(s): verify"),
    "debounce-namespace-not-the-stacks": ({}, {"trigger": "debounce", "namespace": "hr"}, "error",
                                          "namespace 'hr' is not one of this stack's source namespaces"),
    "trigger-unknown": ({}, {"trigger": "cron"}, "error", "unknown trigger 'cron'"),
    "event-not-an-object": ({}, [1, 2], "error", "the event must be a JSON object, got list"),
    "event-unsupported": ({}, {"source": "aws.ec2", "detail-type": "EC2 Instance State-change Notification"},
                          "error", "unsupported event: source 'aws.ec2'"),
    "commit-without-key": ({}, {"source": "aws.s3", "detail-type": "Object Created",
                                "detail": {"bucket": {"name": BUCKET}}}, "error",
                           "event field 'detail.object' is missing"),
    "commit-table-encoded-plus": ({}, commit(f"warehouse/sales/line%2Bitems/{META}"), "refused",
                                  "table name 'line+items' cannot be used with a glue catalog"),
    "commit-table-with-space": ({}, commit(f"warehouse/sales/line+items/{META}"), "refused",
                                "table name 'line items' cannot be used with a glue catalog"),
    "commit-table-not-ascii": ({}, commit(f"warehouse/sales/caf%C3%A9/{META}"), "refused",
                               "table name 'caf\u00e9' cannot be used with a glue catalog"),
    "commit-table-uppercase": ({}, commit(f"warehouse/sales/Orders/{META}"), "refused",
                               "table name 'Orders' cannot be used with a glue catalog"),
    "commit-table-not-in-glue": ({}, commit(f"warehouse/sales/ghost/{META}"), "skipped",
                                 "no pending table is in the Glue catalog"),
    "commit-namespace-not-the-stacks": ({}, commit(f"warehouse/hr/people/{META}"), "ignored",
                                        "namespace 'hr' is not a watched source namespace"),
    "commit-mirror-namespace": ({}, commit(f"warehouse/sales_cow/orders_cow/{META}"), "ignored",
                                "namespace 'sales_cow' is not a watched source namespace"),
    "commit-outside-the-warehouse": ({}, commit(f"elsewhere/sales/orders/{META}"), "ignored",
                                     "is outside the warehouse"),
}


def doc_cases():
    return bad_input_cases("bad-requests")


def test_the_bad_input_doc_and_this_test_list_the_same_trigger_cases():
    listed = doc_cases()
    assert sorted(listed) == sorted(CASES)
    for case, (_, _, _, message) in CASES.items():
        assert message in listed[case], case


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_request_starts_no_run_writes_nothing_and_is_counted(case, aws, capsys):
    env, event, outcome, message = CASES[case]
    aws.apply_env(**env)
    if callable(event):
        event = event(aws)
    capsys.readouterr()
    if outcome == "error":
        with pytest.raises(EventError) as raised:
            aws.invoke(event)
        text = str(raised.value)
        counted = "RejectedEvents"
    else:
        out = aws.invoke(event)
        assert out["status"] == outcome, out
        text = out["reason"]
        counted = {"refused": "Refused", "skipped": "Skipped"}.get(outcome)
    assert message in text and "\n" not in text, text
    assert aws.job_runs() == []  # StartJobRun was not called
    assert aws.schedules() == []  # no debounce timer
    items = aws.ddb.scan(TableName="olake-cow-state")["Items"]
    held = [i for i in items if i["pk"]["S"].startswith("ns#") and set(i) - {"pk", "last_commit"}]
    assert held == []  # no lease, no pending table (a commit is remembered for dedupe, its time for debounce)
    points = emf_points(capsys.readouterr().out)
    if counted:
        assert [v for n, v, _ in points if n == counted] == [1.0], points


