"""Tables of docs/BAD-INPUT.md that a test walks: case name -> last column (the promised message)."""
import os
from typing import Dict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bad_input_cases(marker: str) -> Dict[str, str]:
    """The rows between <!-- marker --> and <!-- /marker --> in docs/BAD-INPUT.md."""
    text = open(os.path.join(ROOT, "docs", "BAD-INPUT.md"), encoding="utf-8").read()
    block = text.split(f"<!-- {marker} -->")[1].split(f"<!-- /{marker} -->")[0]
    rows = [line.split(" | ") for line in block.splitlines() if line.startswith("| `")]
    return {r[0].strip("|` "): r[-1].rstrip(" |") for r in rows}
