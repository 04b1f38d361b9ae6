"""The Iceberg jars the project pins by their Maven coordinates, one row per Spark line, and which
of them a deployed job runs for an EMR release label.

EMR 7.x runs its own Iceberg (`/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar`). For
`emr-spark-8.1.0` (Spark 4.1) the job runs the Spark 4 runtime pinned here, the one the Spark 4
leg tests: `make deploy` uploads it beside the code (<ArtifactsPrefix>/code/jars/) and the
template passes it to the job; EMR supplies the AWS SDK, as it does for its own Iceberg.

    python -m infra.iceberg_jars for-release LABEL   prints the jar file a label's job runs ("" for 7.x)

Exit codes: 0 printed, 2 a bad command line.
"""
import argparse
import hashlib
import sys
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple


@dataclass(frozen=True)
class Jar:
    group: str
    artifact: str
    version: str
    sha256: str

    @property
    def file(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    @property
    def coordinate(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


ICEBERG = "org.apache.iceberg"
# The AWS bundle holds the AWS SDK v2 that Iceberg's GlueCatalog and S3FileIO call on a local run
# (EMR ships its own); 1.10.1 is the newest bundle of the 1.10 line.
STACKS: Dict[str, Tuple[Jar, ...]] = {
    "3": (
        Jar(ICEBERG, "iceberg-spark-runtime-3.5_2.12", "1.10.2",
            "c562d482dcd16b666e808b755469fbc4b2604284b41622c9d87e2c02b7cc6c5f"),
        Jar(ICEBERG, "iceberg-aws-bundle", "1.10.1",
            "86bf20892ea5b4c17688f19b075399885f6aa5303f6b2dc9f491e76ceef9633b"),
    ),
    "4": (
        Jar(ICEBERG, "iceberg-spark-runtime-4.1_2.13", "1.12.0",
            "3123c3798af642dd537230923548e013ef41cc28b6626e5225808cf5670a0f82"),
        Jar(ICEBERG, "iceberg-aws-bundle", "1.12.0",
            "dd7e49ffa4ac9b215bed846581991259e3aec9bb2fa08d6cec029c46cd66d957"),
    ),
}
# The 8.x labels the template accepts: Spark 4.1.1, as the Spark 4 leg runs (template.yaml says the same).
SPARK4_RELEASES = ("emr-spark-8.1.0",)
SPARK4_RUNTIME = STACKS["4"][0]


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def job_jar(label: str) -> Optional[Jar]:
    """The Iceberg runtime a deployed job brings for this release (None: the release's own)."""
    return SPARK4_RUNTIME if label in SPARK4_RELEASES else None


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="iceberg_jars", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["for-release"], help="for-release: the jar a release label's job runs")
    p.add_argument("label", help="an EmrReleaseLabel, e.g. emr-7.12.0 or emr-spark-8.1.0")
    args = p.parse_args(argv)
    jar = job_jar(args.label)
    print(jar.file if jar else "")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
