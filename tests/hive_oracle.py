"""Hive's own metastore filter parser and java.util.regex as test oracles, in one long-lived JVM.

`oracles/HiveFilterOracle.java` is compiled against the Hive 2.3.10 metastore jar that ships inside the pyspark
package (the same Hive the Spark tests talk to) and answers one request per line; `HiveOracle` wraps it. A parsed
filter comes back as Hive's `ExpressionTree`, which `hive_tree_expr` turns into a sargable tree with Hive's meaning
of each leaf (`key op value`, LIKE a whole-value Java regex), for comparing meanings rather than shapes.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import io
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sargable.expr import Column, Comparison, Expr, Literal, Regex, and_, or_
from sargable.expr.java_regex import translate_java_regex
from sargable.types import BIGINT, DATE, STRING

SOURCE = Path(__file__).resolve().parent / "oracles" / "HiveFilterOracle.java"
_OPS = {
    "EQUALS": "=",
    "NOTEQUALS": "!=",
    "NOTEQUALS2": "!=",
    "LESSTHAN": "<",
    "LESSTHANOREQUALTO": "<=",
    "GREATERTHAN": ">",
    "GREATERTHANOREQUALTO": ">=",
}


def jars() -> Path:
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.submodule_search_locations, "pyspark (with its jars) is a test dependency"
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def _encode(text: str) -> str:
    return ",".join(str(ord(c)) for c in text) or "-"


def _decode(field: str) -> str:
    return "" if field == "-" else "".join(chr(int(code)) for code in field.split(","))


@dataclass(frozen=True)
class HiveParse:
    """What Hive's parser made of a filter: `status` is `ok`, `recovered` (parsed after repairing a syntax
    error), `rest-ignored` (a complete filter followed by text Hive silently drops) or `error`."""

    status: str
    tree: Expr | None = None
    message: str = ""


class HiveOracle:
    """The JVM process; `close()` ends it."""

    def __init__(self, workdir: Path) -> None:
        javac, java = shutil.which("javac"), shutil.which("java")
        assert javac and java, "the Hive oracle needs a JDK (javac and java) on PATH"
        classpath = f"{jars()}/*"
        subprocess.run([javac, "-nowarn", "-d", str(workdir), "-cp", classpath, str(SOURCE)], check=True)
        self.process = subprocess.Popen(
            [java, "-cp", f"{workdir}:{classpath}", "HiveFilterOracle"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests = io.TextIOWrapper(self.process.stdin, encoding="utf-8", newline="\n")
        self.answers = io.TextIOWrapper(self.process.stdout, encoding="utf-8", newline="\n")

    def ask(self, command: str, *texts: str) -> str:
        self.requests.write(" ".join([command, *map(_encode, texts)]) + "\n")
        self.requests.flush()
        return self.answers.readline().rstrip("\n")

    def parse(self, text: str) -> HiveParse:
        answer = self.ask("P", text)
        if answer == "R":
            return HiveParse("rest-ignored")
        if answer.startswith("E "):
            return HiveParse("error", message=answer[2:])
        status = {"T": "ok", "V": "recovered"}[answer[0]]
        return HiveParse(status, hive_tree_expr(answer[2:].split(" ")))

    def matches(self, pattern: str, value: str, whole: bool = True) -> bool | str:
        """`Pattern.matches` (or `find`); an error message (str) when Java refuses the pattern."""
        answer = self.ask("M" if whole else "F", pattern, value)
        return answer[2:] if answer.startswith("E") else answer == "1"

    def close(self) -> None:
        self.requests.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="session")
def hive_oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HiveOracle]:
    """One JVM for the whole run (a test module uses it with `pytest_plugins = ["hive_oracle"]`)."""
    oracle = HiveOracle(tmp_path_factory.mktemp("hive-oracle"))
    yield oracle
    oracle.close()


def hive_tree_expr(tokens: list[str]) -> Expr:
    """A prefix-notation ExpressionTree as a sargable tree: each leaf `key op value` (reversed when Hive says so)."""
    stack: list[tuple[str, list[Expr]]] = []
    position = 0
    while True:
        token = tokens[position]
        if token in ("A", "O"):
            stack.append((token, []))
            position += 1
            continue
        key, op, kind, text, reverse = tokens[position + 1 : position + 6]
        position += 6
        value = _decode(text)
        literal = {
            "S": lambda v: Literal(v, STRING),
            "I": lambda v: Literal(int(v), BIGINT),
            "D": lambda v: Literal(dt.date.fromisoformat(v), DATE),
        }[kind](value)
        column = Column(_decode(key))
        if op == "LIKE":
            assert reverse == "0", "a reversed LIKE has no meaning in Hive either"
            node: Expr = Regex(column, translate_java_regex(value, whole=True))
        else:
            node = Comparison(_OPS[op], literal, column) if reverse == "1" else Comparison(_OPS[op], column, literal)
        while stack:
            stack[-1][1].append(node)
            if len(stack[-1][1]) < 2:
                break
            kind_, children = stack.pop()
            node = and_(*children) if kind_ == "A" else or_(*children)
        else:
            return node
