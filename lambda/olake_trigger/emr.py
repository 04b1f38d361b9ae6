"""The trigger's EMR Serverless adapter: start a mirror run, and read one back."""
import logging
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from botocore.exceptions import ClientError

from olake_cow.core.job_request import FINAL_STATES

if TYPE_CHECKING:
    from mypy_boto3_emr_serverless import EMRServerlessClient

log = logging.getLogger("olake_trigger")


class EmrRuns:
    def __init__(self, client: "EMRServerlessClient", application_id: str) -> None:
        self.client, self.application_id = client, application_id

    def start(self, request: Mapping[str, Any]) -> str:
        """Start a run (the request of jobs.start_job_run_request); its id."""
        return str(self.client.start_job_run(**request)["jobRunId"])

    def get(self, job_run_id: str, application_id: Optional[str] = None) -> Dict[str, Any]:
        run = self.client.get_job_run(applicationId=application_id or self.application_id, jobRunId=job_run_id)
        return dict(run["jobRun"])

    def ended(self, job_run_id: str) -> Optional[Dict[str, Any]]:
        """The run when it reached a final state; None while it runs (or when it cannot be read)."""
        try:
            run = self.get(job_run_id)
        except ClientError:
            return None
        return run if run["state"] in FINAL_STATES else None
