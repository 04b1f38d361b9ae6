"""Draws docs/architecture.png (the README's and docs/ARCHITECTURE.md's diagram) with matplotlib.

    .venv/bin/python tools/diagram.py [--out docs/architecture.png]
"""
import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (x, y, width, height, label, colour)
BOXES = {
    "olake": (0.2, 4.6, 2.4, 1.0, "OLake\nCDC syncs", "#fde2c8"),
    "source": (0.2, 2.4, 2.4, 1.3, "OLake's Iceberg tables\n(merge-on-read,\nequality deletes)", "#fde2c8"),
    "s3events": (3.4, 4.6, 2.6, 1.0, "S3 Object Created\n*.metadata.json\n→ EventBridge", "#e3ecfa"),
    "schedule": (3.4, 6.1, 2.6, 0.8, "EventBridge Scheduler\nperiodic / debounce", "#e3ecfa"),
    "lambda": (6.8, 4.6, 2.8, 1.6,
               "Trigger Lambda\n(Powertools)\nidle check, maintenance due,\nlease, follow-ups", "#d8f0d8"),
    "ddb": (10.4, 6.0, 2.4, 0.9, "DynamoDB\nlease, pending", "#eeeeee"),
    "secret": (10.4, 4.8, 2.4, 0.9, "Secrets Manager\ndestination.json", "#eeeeee"),
    "emr": (6.8, 2.2, 2.8, 1.6,
            "EMR Serverless\nmirror job (PySpark)\nplan → read changes →\nmerge → audit → publish", "#d8f0d8"),
    "mirror": (3.4, 0.2, 2.6, 1.3, "Mirrors <table>_cow\ncow: no delete files\ndv: deletion vectors", "#f6e0f6"),
    "readers": (0.2, 0.2, 2.4, 1.3, "Databricks, Snowflake,\nAthena, Trino, DuckDB,\npyiceberg ...", "#f6e0f6"),
    "cw": (10.4, 2.4, 2.4, 1.3, "CloudWatch\nmetrics, billed cost,\ndashboard, alarms", "#eeeeee"),
    "summ": (10.4, 0.5, 2.4, 1.0, "S3 run summaries\nand job logs", "#eeeeee"),
}
# (from, to, label, from side, to side)
ARROWS = [
    ("olake", "source", "commits", "b", "t"),
    ("source", "s3events", "metadata commit", "r", "l"),
    ("s3events", "lambda", "", "r", "l"),
    ("schedule", "lambda", "", "r", "t"),
    ("lambda", "ddb", "", "r", "l"),
    ("lambda", "secret", "", "r", "l"),
    ("lambda", "emr", "StartJobRun", "b", "t"),
    ("source", "emr", "reads changes (readonly mode never writes)", "r", "l"),
    ("emr", "mirror", "MERGE, WAP", "b", "r"),
    ("mirror", "readers", "read", "l", "r"),
    ("emr", "summ", "summary", "r", "l"),
    ("emr", "cw", "end event → metrics", "r", "l"),
]


def _anchor(box, side):
    x, y, w, h = box[:4]
    return {"l": (x, y + h / 2), "r": (x + w, y + h / 2), "t": (x + w / 2, y + h), "b": (x + w / 2, y)}[side]


def draw(out: str) -> None:
    fig, ax = plt.subplots(figsize=(13, 7.4))
    ax.set_xlim(0, 13)
    ax.set_ylim(0, 7.2)
    ax.axis("off")
    for x, y, w, h, label, colour in BOXES.values():
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", fc=colour, ec="#555555"))
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=9)
    for a, b, label, sa, sb in ARROWS:
        start, end = _anchor(BOXES[a], sa), _anchor(BOXES[b], sb)
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color="#333333",
                                     connectionstyle="arc3,rad=0.0"))
        if label:
            ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.12, label, ha="center", fontsize=7.5,
                    color="#222222", bbox={"fc": "white", "ec": "none", "alpha": 0.8, "pad": 1})
    ax.set_title("olake-cow on AWS: one mirror run per namespace after each OLake sync", fontsize=12)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "architecture.png"))
    draw(p.parse_args().out)


if __name__ == "__main__":
    main()
