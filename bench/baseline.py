"""OLake's published MOR-to-COW script as a benchmark baseline, loaded at run time from the text
of its blog post (shared/seeds/000_...txt): nothing of it is copied into this project.

The post's text lost the code's indentation, so `reindent` restores it from the code itself:
  * a line after one ending in ':' opens a block; `return`/`raise`/`continue`/`break`/`pass` close one;
  * `elif`/`else`/`except`/`finally` line up with their opener;
  * after a blank line or a closing statement, the paragraph that follows stays in the innermost open block only if it
    reads a name first bound inside that block (a loop's variable, a value the block computed);
    otherwise that block is closed and the next one out is tried. Function bodies close only at
    module-level lines;
  * `def`, `class`, a decorator or `if __name__` go back to module level (this script has no
    module-level statements after its first function);
  * lines inside brackets and triple-quoted strings keep their place in the statement.
The result is parsed with `ast`; the bench then calls `run_compaction_cycle_for_table` on each
table with our Spark session set as the script's global `spark` (its own session builder needs
Maven packages, which are not reachable here).
"""
import ast
import re
import types
from typing import List, Optional

START = "import argparse"
END_MARKERS = ("Before running the script, make sure to update",)
_OPENERS = re.compile(r"^(if|elif|else|for|while|try|except|finally|with|def|class)\b")
_CLOSERS = re.compile(r"^(return|raise|continue|break|pass)\b")
_LOOPS = ("for", "while", "def", "class")
_TOP = re.compile(r"^(def |class |@|if __name__)")


def extract(text: str) -> str:
    """The script's code from the post's text."""
    start = text.index(START)
    end = min(i for i in (text.find(m, start) for m in END_MARKERS) if i >= 0)
    return text[start:end].rstrip() + "\n"


def _bracket_delta(line: str) -> int:
    """Change in open-bracket depth over a line, ignoring strings and comments (good enough here)."""
    depth, quote, i = 0, "", 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif line.startswith(quote, i):
                i += len(quote) - 1
                quote = ""
        elif c == "#":
            break
        elif line.startswith(('"""', "'''"), i):
            quote = line[i:i + 3]
            i += 2
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        i += 1
    return depth


_KEYWORDS = {"if", "elif", "else", "for", "while", "try", "except", "finally", "with", "def", "class", "return",
             "raise", "continue", "break", "pass", "in", "not", "and", "or", "is", "None", "True", "False", "as",
             "import", "from", "lambda", "yield", "del", "global", "assert", "print", "f"}
_STRING = re.compile(r"""(?<![A-Za-z])(?:'[^'\\]*(?:\\.[^'\\]*)*'|"[^"\\]*(?:\\.[^"\\]*)*")""")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def _bound(line: str) -> set:
    """Names a line binds: assignment targets, loop variables, `as` names, parameters."""
    names = set()
    m = re.match(r"^([A-Za-z_][\w\s,]*?)(?:\s*:\s*[^=]+)?\s*=(?!=)", line)
    if m:
        names |= {n.strip() for n in m.group(1).split(",") if n.strip().isidentifier()}
    m = re.match(r"^for\s+(.+?)\s+in\s", line)
    if m:
        names |= {n.strip() for n in m.group(1).strip("()").split(",") if n.strip().isidentifier()}
    names |= set(re.findall(r"\bas\s+([A-Za-z_]\w*)", line))
    m = re.match(r"^def\s+\w+\s*\((.*)", line)
    if m:
        names |= {a.split(":")[0].split("=")[0].strip().lstrip("*") for a in m.group(1).split(",")}
    return names


def _loaded(line: str) -> set:
    text = line.split("#")[0]
    text = _STRING.sub("''", text) if not re.search(r"\bf[\"']", text) else text
    return {n for n in _NAME.findall(text) if n not in _KEYWORDS} - _bound(line)


def _paragraphs(lines: List[str]) -> List[set]:
    """For each line, the names the rest of its paragraph (up to the next blank line) reads from
    before it: names the paragraph binds itself before reading them do not count."""
    reads: List[set] = [set() for _ in lines]
    start = 0
    for end in range(len(lines) + 1):
        if end < len(lines) and lines[end].strip():
            continue
        for i in range(start, end):
            outside, bound = set(), set()
            for line in (ln.strip() for ln in lines[i:end]):
                if line and not line.startswith("#"):
                    outside |= _loaded(line) - bound
                    bound |= _bound(line)
            reads[i] = outside
        start = end + 1
    return reads


def reindent(code: str, width: int = 4) -> str:
    lines = code.splitlines()
    reads = _paragraphs(lines)
    out: List[str] = []
    # open blocks: [indent level of their body, opener keyword, names bound in the body, names bound
    # before it, names its header binds (a loop variable counts even when the name existed before)]
    stack: List[list] = []
    level, depth = 0, 0
    gap = 0  # blank lines since the last line of code (comments do not reset it)
    pending: List[str] = []  # blank lines and comments waiting for the level of the next code line
    in_string: Optional[str] = None
    keyword, header, prev_opened, prev_closed, continued = "", "", False, False, False

    def known() -> set:
        return set().union(*(b[2] | b[3] | b[4] for b in stack)) if stack else set()

    def opened(kw: str, header: str) -> None:
        nonlocal stack, prev_opened, prev_closed
        before = known()
        stack = [b for b in stack if b[0] <= level] + [[level + 1, kw, set(), before, _bound(header)]]
        prev_opened, prev_closed = True, False

    for i, raw in enumerate(lines):
        line = raw.strip()
        if in_string:  # inside a triple-quoted string: keep the text, indented with its statement
            out.append(" " * width * (level + 1) + line if line else "")
            if in_string in line:
                depth += _bracket_delta(line[line.index(in_string) + 3:])  # e.g. `""").collect()`
                in_string = None
            continue
        if depth > 0 or continued:  # continuation inside brackets or after a backslash
            out.append(" " * width * (level + 1) + line)
            depth += _bracket_delta(line)
            continued = line.endswith("\\")
            if depth == 0 and not continued and line.endswith(":"):  # `def f(\n ...\n):`, `if a or \\n b:`
                opened(keyword, header)
            continue
        if not line or line.startswith("#"):
            gap += not line
            pending.append(line)
            continue
        keyword = (_OPENERS.match(line) or _CLOSERS.match(line) or re.match(r"^\S+", line)).group(0)
        if line.startswith("if __name__"):
            keyword = "def"  # the entry point runs to the end of the file, like a function body
        header = line
        if _TOP.match(line):
            stack, level = [], 0
        elif prev_opened:
            level += 1
        elif keyword in ("elif", "else", "except", "finally"):
            want = {"elif": ("if", "elif"), "else": ("if", "elif", "for", "while", "try", "except"),
                    "except": ("try", "except"), "finally": ("try", "except", "else")}[keyword]
            while stack and stack[-1][1] not in want:
                stack.pop()
            level = stack[-1][0] - 1 if stack else 0
            stack = stack[:-1]
        else:
            if prev_closed and stack:
                stack.pop()
            if gap or prev_closed:  # a new paragraph, or after a return/break: close blocks it does not read from
                while stack and stack[-1][1] not in ("def", "class") and not (
                        reads[i] & ((stack[-1][2] - stack[-1][3]) | stack[-1][4])):
                    stack.pop()
            level = stack[-1][0] if stack else 0
        out.extend(" " * width * level + p if p else "" for p in pending)
        pending, gap = [], 0
        out.append(" " * width * level + line)
        if stack and stack[-1][0] == level:
            stack[-1][2] |= _bound(line)
        depth = _bracket_delta(line)
        continued = line.endswith("\\")
        prev_opened, prev_closed = False, bool(_CLOSERS.match(line))
        if line.endswith(":") and depth == 0:
            opened(keyword, header)
        for quote in ('"""', "'''"):
            if line.count(quote) % 2 == 1:
                in_string = quote
    return "\n".join(out) + "\n"


def load(path: str, spark, catalog: str, source_ns: str, cow_ns: str, cow_base: str) -> types.ModuleType:
    """The script as a module, its globals pointed at our session and namespaces."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    code = text if path.endswith(".py") else reindent(extract(text))
    ast.parse(code)  # a SyntaxError here means the text could not be restored
    module = types.ModuleType("olake_published_script")
    exec(compile(code, path, "exec"), module.__dict__)
    module.spark, module.CATALOG, module.DB = spark, catalog, source_ns
    module.COW_DB, module.COW_BASE_LOCATION = cow_ns, cow_base
    return module
