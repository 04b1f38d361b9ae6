"""The re-indenter that restores the published script's code from its blog text (bench/baseline.py),
on small snippets with their indentation stripped: each must come back with its original structure."""
import textwrap

import pytest

from bench.baseline import reindent

pytestmark = pytest.mark.unit


def roundtrip(code):
    original = textwrap.dedent(code).strip("\n") + "\n"
    flat = "\n".join(line.strip() for line in original.splitlines()) + "\n"
    return reindent(flat), original


@pytest.mark.parametrize("code", [
    # a blank line inside a loop body, then the loop ends at a blank line
    """
    def walk(cur):
        seen = set()
        while cur is not None:
            snap = fetch(cur)
            if snap is None:
                break
            seen.add(snap)

            parent = snap.get("parent")
            if parent in seen:
                break
            cur = parent

        if not seen:
            return None
        return seen
    """,
    # continue, then a blank line that stays in the loop (it reads the loop variable)
    """
    def pick(items):
        found = False
        for item in items:
            if not item:
                continue

            found = True
            use(item)

        if not found:
            other = fallback()
            if other is None:
                return None

            use(other)
    """,
    # a return inside an if inside a loop: the next return belongs to the function
    """
    def first(keys):
        for k in keys:
            v = get(k)
            if v is not None:
                return v
        return None
    """,
    # backslash continuations and an else that belongs to the if, not the try
    """
    def publish(x):
        try:
            call(x)
        except Exception as e:
            msg = str(e)
            if "a" in msg or \\
               "b" in msg:
                print(msg)
            else:
                raise
    """,
    # a multi-line signature, a triple-quoted string inside a call
    """
    def create(
        name: str,
        where: str,
    ):
        if exists(name):
            return
        sql(f\"\"\"
            CREATE TABLE {name}
            LOCATION '{where}'
        \"\"\")
        done(name)
    """,
])
def test_stripped_code_gets_its_structure_back(code):
    restored, original = roundtrip(code)
    assert structure(restored) == structure(original), restored


def structure(code):
    """The syntax tree, with whitespace inside string literals (lost with the indentation) ignored."""
    import ast

    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = " ".join(node.value.split())
    return ast.dump(tree)
