"""The documentation runs: every code example in docs/*.md and README.md is executed, every shown output is checked.

Conventions in the markdown (an HTML comment on the line right before a fenced block):

- a ```python block is executed; the blocks of one file run in order, in one namespace, in a fresh temporary working
  directory with `$SARGABLE_METASTORE` pointing at a temporary SQLite file (so nothing touches ./warehouse);
- a ```bash block's lines that start with `sargable ` run through `sargable.cli.main([...])` (must exit 0, or 1 when
  the block is marked `<!-- fails -->`); other lines (`make`, `pip`, `spark-submit`, ...) are shown, not run;
  `sargable demo` is only checked to be a subcommand (it builds millions of rows; `make demo` runs it);
- `<!-- output -->` before a ```text block: the block is what the previous python or bash block prints (stdout; for
  the CLI stdout and stderr), compared line by line with trailing spaces ignored; `...` matches any text;
- `<!-- spark -->`: the block needs Spark; it runs (with every other block of its file) in `test_docs_spark`, with
  the shared local session of tests/conftest_spark.py as `spark`;
- `<!-- postgres -->`: the block needs PostgreSQL; it runs in `test_docs_postgres` against the server that
  `make test` starts, its `postgresql://` URLs pointed at that server (each `?schema=` name made unique to the run).

Beside running the examples: docs/api.md must mention every name of `sargable.__all__` and `sargable.spark.__all__`,
and each signature it shows must be the code's; docs/cli.md must cover every subcommand; `sg.X`, `sgs.X` and `ms.X`
in the docs must exist; relative links must point at files that exist.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import itertools
import re
import shlex
import typing
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import sargable
from sargable import cli

pytest_plugins = ["conftest_spark"]

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
OWN_DOCS = ["index", "quickstart", "concepts", "filter-syntax", "api", "cli", "deployment", "limits"]
FILES = [*(DOCS / f"{name}.md" for name in OWN_DOCS), ROOT / "README.md"]
MARKERS = {"spark", "postgres", "output", "fails"}
NOT_RUN = {"demo"}
"""CLI subcommands shown in the docs but not run here (`make demo` runs the demo)."""

_FENCE = re.compile(r"^```([\w-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*([\w\s,-]+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text and the markers on the line before it."""

    path: Path
    line: int
    lang: str
    text: str
    markers: frozenset[str]

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of a markdown file, with their markers; unbalanced fences or unknown markers fail."""
    lines = path.read_text().splitlines()
    out: list[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        start = index
        previous = start - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        marker = _MARKER.match(lines[previous]) if previous >= 0 else None
        markers = frozenset(m for m in re.split(r"[\s,]+", marker.group(1)) if m) if marker else frozenset()
        unknown = markers - MARKERS
        assert not unknown, f"{path.name}:{start + 1}: unknown markers {sorted(unknown)}"
        index += 1
        while index < len(lines) and lines[index] != "```":
            index += 1
        assert index < len(lines), f"{path.name}:{start + 1}: code fence never closed"
        out.append(Block(path, start + 1, match.group(1), "\n".join(lines[start + 1 : index]), markers))
        index += 1
    return out


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def output_matches(expected: str, actual: str) -> bool:
    """Whether `actual` is `expected`, where `...` in `expected` stands for any text (trailing spaces ignored)."""
    pattern = ".*?".join(re.escape(piece) for piece in _normalized(expected).split("..."))
    return re.fullmatch(pattern, _normalized(actual), re.DOTALL) is not None


def _sargable_commands(block: Block) -> list[list[str]]:
    """The argument lists of the `sargable ...` lines of a bash block (comments and other commands left out)."""
    commands = []
    for line in block.text.splitlines():
        if line.startswith("sargable "):
            commands.append(shlex.split(line, comments=True)[1:])
    return commands


def _subcommands() -> set[str]:
    parser = cli.build_parser()
    for action in parser._actions:  # argparse offers no public way to list subcommands
        if action.choices and isinstance(action.choices, dict):
            return set(action.choices)
    raise AssertionError("the sargable parser has no subcommands")


def _command_name(args: list[str]) -> str | None:
    """The subcommand in `sargable` arguments (after the global `--metastore URL`, if given)."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option == "--metastore" and rest:
            rest.pop(0)
    return rest[0] if rest else None


class Postgres:
    """Points a block's postgresql:// URLs at the test server, one unique schema per schema the docs name."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url.split("?", 1)[0]
        self.run = uuid.uuid4().hex[:8]

    def rewrite(self, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            found = re.search(r"[?&]schema=(\w+)", match.group(0))
            schema = found.group(1) if found else "public"
            return f"{self.base}?schema=docs_{self.run}_{schema}"

        return re.sub(r"postgresql://[^\s'\"]+", replace, text)


def run_file(path: Path, enabled: set[str], namespace: dict[str, Any], postgres: Postgres | None = None) -> int:
    """Run a file's blocks whose markers are all enabled, in order, checking shown outputs; returns blocks run."""
    ran = 0
    source: Block | None = None  # the last python or bash block
    printed: str | None = None  # what it printed; None when it was not run in this mode
    for block in blocks_of(path):
        if "output" in block.markers:
            assert source is not None, f"{block.where}: an output block must follow a python or bash block"
            if printed is not None:
                assert output_matches(block.text, printed), (
                    f"{block.where}: the output shown for {source.where} no longer matches what it prints.\n"
                    f"--- shown\n{block.text}\n--- printed\n{printed}"
                )
            continue
        if block.lang not in ("python", "bash"):
            continue
        source, printed = block, None
        if not block.markers - {"fails"} <= enabled:
            continue
        text = postgres.rewrite(block.text) if postgres is not None and "postgres" in block.markers else block.text
        printed = _run_python(block, text, namespace) if block.lang == "python" else _run_bash(block, text)
        ran += 1
    return ran


def _run_python(block: Block, text: str, namespace: dict[str, Any]) -> str:
    captured = io.StringIO()
    code = compile(text, block.where, "exec")
    with contextlib.redirect_stdout(captured):
        try:
            exec(code, namespace)
        except Exception as exc:
            raise AssertionError(f"{block.where}: the example raised {type(exc).__name__}: {exc}") from exc
    return captured.getvalue()


def _run_bash(block: Block, text: str) -> str:
    known = _subcommands()
    captured = io.StringIO()
    expected_status = 1 if "fails" in block.markers else 0
    for args in _sargable_commands(Block(block.path, block.line, block.lang, text, block.markers)):
        name = _command_name(args)
        assert name in known, f"{block.where}: `sargable {name}` is not a sargable subcommand ({sorted(known)})"
        if name in NOT_RUN:
            continue
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            status = cli.main(args)
        assert status == expected_status, (
            f"{block.where}: `sargable {shlex.join(args)}` exited {status}, not {expected_status}:\n"
            f"{captured.getvalue()}"
        )
    return captured.getvalue()


@pytest.fixture
def doc_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A fresh working directory and metastore for one file's examples; the namespace they share."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SARGABLE_METASTORE", f"sqlite:///{tmp_path / 'metastore.db'}")
    monkeypatch.delenv("SARGABLE_WAREHOUSE", raising=False)
    monkeypatch.setenv("COLUMNS", "100")
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    yield namespace
    for value in list(namespace.values()):
        if isinstance(value, sargable.Metastore):
            value.close()


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def _with(marker: str) -> list[Path]:
    return [p for p in FILES if any(marker in b.markers for b in blocks_of(p))]


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_docs_run(path: Path, doc_env: dict[str, Any]) -> None:
    """Every example that needs neither Spark nor PostgreSQL runs and prints what the docs show."""
    run_file(path, set(), doc_env)


@pytest.mark.spark
@pytest.mark.parametrize("path", _with("spark"), ids=_ids(_with("spark")))
def test_docs_spark(path: Path, doc_env: dict[str, Any], spark: Any) -> None:
    """The Spark examples run (after the file's other examples) on the shared local session."""
    doc_env["spark"] = spark
    assert run_file(path, {"spark"}, doc_env) > 0


@pytest.mark.postgres
@pytest.mark.parametrize("path", _with("postgres"), ids=_ids(_with("postgres")))
def test_docs_postgres(path: Path, doc_env: dict[str, Any], postgres_url: str) -> None:
    """The PostgreSQL examples run against the test server."""
    assert run_file(path, {"postgres"}, doc_env, Postgres(postgres_url)) > 0


def test_every_file_has_examples_and_outputs_are_checked() -> None:
    """Each doc of ours holds code, and output blocks only follow runnable blocks."""
    for path in FILES:
        found = blocks_of(path)
        assert found, f"{path.name} has no code blocks"
        for before, block in itertools.pairwise(found):
            if "output" in block.markers:
                assert before.lang in ("python", "bash") and "output" not in before.markers, block.where


def test_output_matching() -> None:
    assert output_matches("a ... c", "a bbb c")
    assert output_matches("x  \ny", "x\ny  \n")
    assert not output_matches("a ... c", "a bbb d")
    assert not output_matches("abc", "abcd")


# -- the API reference ------------------------------------------------------------------------------------------


def _api_text() -> str:
    return (DOCS / "api.md").read_text()


def test_api_mentions_every_public_name() -> None:
    from sargable import spark as sgs

    text = _api_text()
    missing = [n for n in sargable.__all__ if f"`{n}" not in text and f"sg.{n}" not in text]
    missing += [f"sgs.{n}" for n in sgs.__all__ if f"sgs.{n}" not in text]
    assert not missing, f"docs/api.md does not mention {missing}"


def _annotation_text(annotation: Any) -> str:
    """An annotation as written in the source (the code uses `from __future__ import annotations`)."""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
    return inspect.formatannotation(annotation)


def _default_text(value: Any) -> str:
    if value is dataclasses.MISSING:
        return ""
    return repr(value)


def signature_text(obj: Any) -> str:
    """`(name: annotation = default, *, ...) -> result` as the API reference shows it (annotations as written)."""
    target = obj
    fields = {}
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
        fields = {f.name: f for f in dataclasses.fields(obj)}
    signature = inspect.signature(target)
    parts: list[str] = []
    star_done = False
    for param in signature.parameters.values():
        if param.name == "self":
            continue
        text = param.name
        if param.kind is param.VAR_POSITIONAL:
            text, star_done = "*" + text, True
        elif param.kind is param.VAR_KEYWORD:
            text = "**" + text
        elif param.kind is param.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if param.annotation is not param.empty:
            text += f": {_annotation_text(param.annotation)}"
        if param.default is not param.empty:
            default = param.default
            field = fields.get(param.name)
            if field is not None and field.default_factory is not dataclasses.MISSING:
                default = field.default_factory()
            text += f" = {_default_text(default)}"
        parts.append(text)
    result = f"({', '.join(parts)})"
    if signature.return_annotation is not signature.empty and not inspect.isclass(obj):
        result += f" -> {_annotation_text(signature.return_annotation)}"
    return result


_SIGNATURE_LINE = re.compile(r"^- `((?:sg|sgs)\.[\w.]+)(\([^`]*\)(?: -> [^`]+)?)`", re.MULTILINE)


def resolve(dotted: str) -> Any:
    """`sg.Metastore.open` or `sgs.read` -> the object."""
    from sargable import spark as sgs

    head, *rest = dotted.split(".")
    obj: Any = {"sg": sargable, "sgs": sgs}[head]
    for name in rest:
        obj = getattr(obj, name)
    return obj


def test_api_signatures_match_the_code() -> None:
    """Each `- \\`sg.name(...)\\`` line of docs/api.md shows the code's current signature."""
    found = _SIGNATURE_LINE.findall(_api_text())
    assert len(found) > 40, "docs/api.md lost its signature lines"
    wrong = []
    for dotted, shown in found:
        actual = signature_text(resolve(dotted))
        if shown != actual:
            wrong.append(f"{dotted}\n  docs: {shown}\n  code: {actual}")
    assert not wrong, "signatures in docs/api.md differ from the code:\n" + "\n".join(wrong)


def test_names_used_in_the_docs_exist() -> None:
    """`sg.X`, `sgs.X` and `ms.X` anywhere in the docs name real attributes (of sargable, sargable.spark, Metastore)."""
    from sargable import spark as sgs

    owners = {"sg": sargable, "sgs": sgs, "ms": sargable.Metastore}
    missing = set()
    for path in FILES:
        for owner, name in re.findall(r"\b(sg|sgs|ms)\.([A-Za-z_]\w*)", path.read_text()):
            if not hasattr(owners[owner], name):
                missing.add(f"{path.name}: {owner}.{name}")
    assert not missing, sorted(missing)


# -- the CLI and links ---------------------------------------------------------------------------------------------


def test_cli_doc_covers_every_subcommand() -> None:
    text = (DOCS / "cli.md").read_text()
    missing = [name for name in sorted(_subcommands()) if f"## `sargable {name}" not in text]
    assert not missing, f"docs/cli.md has no section for {missing}"


def test_relative_links_resolve() -> None:
    broken = []
    for path in FILES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (path.parent / target).exists():
                broken.append(f"{path.name} -> {target}")
    assert not broken, broken


def test_cli_doc_shows_what_each_command_prints() -> None:
    """Every `sargable` command docs/cli.md runs is followed by its output, which `test_docs_run` then checks."""
    found = blocks_of(DOCS / "cli.md")
    for block, after in itertools.pairwise([*found, None]):
        runs = [args for args in _sargable_commands(block) if _command_name(args) not in NOT_RUN]
        if block.lang == "bash" and runs:
            assert after is not None and "output" in after.markers, f"{block.where}: show what it prints"
