"""The filter language's lexicon: keywords, operator spellings, token kinds and the tokenizer of each dialect.

Both sides of the language use it: the parser reads tokens, the printers quote names that would read as keywords
and spell operators the parser reads back (as sqlglot's `tokens` serves its parser and generator).

Dialects differ only lexically here. `sql`: strings in single or double quotes with the quote doubled inside
(`'it''s'`) and no backslash escapes; names `[A-Za-z_][A-Za-z0-9_]*`. `hive` (the Hive metastore's `Filter.g`):
a backslash escapes the next character lexically and both stay in the value, as Hive keeps them; adjacent strings
are one string (Hive 4's `STRING+`); names may start with a digit (`1col`); `2024-01-01` and
`2024-01-01 10:00:00` are date and timestamp literals without quotes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sargable.errors import FilterSyntaxError

DIALECTS = ("sql", "hive")

RESERVED = frozenset({"AND", "OR", "NOT", "IN", "BETWEEN", "IS", "NULL", "LIKE", "RLIKE", "REGEXP", "TRUE", "FALSE"})
"""Words that are never a bare identifier in the `sql` dialect; quote them (`` `in` ``) to name a column so."""
CONTEXTUAL = frozenset({"DATE", "TIMESTAMP", "CAST", "AS", "ESCAPE"})
"""Words that are keywords only where their syntax applies (`DATE '...'`, `CAST(`, ...)."""
KEYWORDS = RESERVED | CONTEXTUAL
HIVE_SOFT = frozenset({"IS", "NULL", "TRUE", "FALSE", "RLIKE", "REGEXP"})
"""Reserved words that Hive's grammar reads as names: in the `hive` dialect they name a column where Hive would."""
BARE_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

COMPARISON_OPS = ("=", "!=", "<", "<=", ">", ">=", "<=>")
"""The canonical comparison operators, as the printer writes them."""
OPERATORS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>"}
"""Every spelling the parser reads -> its canonical operator."""

LITERAL_KINDS = frozenset({"num", "str", "date", "timestamp"})
"""Token kinds that are a literal by themselves (`date` and `timestamp`: the hive dialect's unquoted forms)."""

_SQL_STRING = r"""'[^']*(?:''[^']*)*'|"[^"]*(?:""[^"]*)*\""""
_HIVE_STRING = r"""'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*\""""
_COMMON_TAIL = r"""
    | (?P<quoted>`[^`]*(?:``[^`]*)*`)
    | (?P<op>[<>=!]+)
    | (?P<punct>[(),-])
    | (?P<open>['"`])
    | (?P<dot>\.(?=[A-Za-z_`]))
    | (?P<end>\Z)
    | (?P<other>.)
    )"""
_SQL_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<str>"""
    + _SQL_STRING
    + ")"
    + _COMMON_TAIL,
    re.VERBOSE | re.DOTALL,
)
_HIVE_TOKEN = re.compile(
    r"""\s*(?:
      (?P<timestamp>[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?![0-9A-Za-z_]))
    | (?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2}(?![0-9A-Za-z_]))
    | (?P<word>[0-9]*[A-Za-z_][A-Za-z0-9_]*)
    | (?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    | (?P<str>(?:"""
    + _HIVE_STRING
    + r")(?:\s*(?:"
    + _HIVE_STRING
    + "))*)"
    + _COMMON_TAIL,
    re.VERBOSE | re.DOTALL,
)
_HIVE_STRING_PIECE = re.compile(_HIVE_STRING, re.DOTALL)
_HIVE_ESCAPES = {quote: re.compile(r"\\.|" + quote * 2, re.DOTALL) for quote in "'\""}


@dataclass(slots=True)
class Tokens:
    """A tokenized filter: parallel lists of kinds, raw texts and start offsets, ending with an `end` token.

    Kinds: a keyword in upper case, `name`, `quoted` (a backquoted name), `num`, `str`, `date`, `timestamp`, `op`,
    one of `( ) , -`, or `end`.
    """

    kinds: list[str]
    raws: list[str]
    starts: list[int]


def tokenize(text: str, dialect: str) -> Tokens:
    """Split filter text into tokens, raising `FilterSyntaxError` (with a caret) at the first lexical error."""
    hive = dialect == "hive"
    tokens = Tokens([], [], [])
    kinds, raws, starts = tokens.kinds, tokens.raws, tokens.starts
    for match in (_HIVE_TOKEN if hive else _SQL_TOKEN).finditer(text):
        group = match.lastgroup
        assert group is not None
        raw = match.group(group)
        start = match.start(group)
        if group == "word":
            upper = raw.upper()
            kind = upper if upper in KEYWORDS else "name"
        elif group == "punct":
            kind = raw
        elif group == "op":
            kind = "op"
            if raw not in OPERATORS:
                raise FilterSyntaxError(
                    f"{raw!r} is not an operator; expected one of = == != <> < <= > >= <=>", text, start
                )
        elif group == "end":
            kinds.append("end")
            raws.append("")
            starts.append(start)
            return tokens
        elif group == "open":
            what = "quoted identifier" if raw == "`" else "string"
            hint = " (in the hive dialect a backslash escapes the next character)" if hive and raw != "`" else ""
            raise FilterSyntaxError(f"unterminated {what}: no closing {raw} after this one{hint}", text, start)
        elif group == "other":
            raise FilterSyntaxError(f"unexpected character {raw!r}", text, start)
        else:
            kind = group
        kinds.append(kind)
        raws.append(raw)
        starts.append(start)
    raise AssertionError("the token pattern always ends with an `end` token")


def string_value(raw: str, dialect: str) -> str:
    """The value of a `str` token: quotes stripped and doubled quotes undoubled; in the hive dialect a backslash
    and the character after it stay as they are (Hive's `TrimQuotes`), and adjacent strings are joined."""
    if dialect != "hive":
        quote = raw[0]
        return raw[1:-1].replace(quote + quote, quote)
    return "".join(_HIVE_ESCAPES[piece[0]].sub(_unescape, piece[1:-1]) for piece in _HIVE_STRING_PIECE.findall(raw))


def _unescape(match: re.Match[str]) -> str:
    """A backslash pair stays as it is; a doubled quote is one quote."""
    text = match.group()
    return text if text[0] == "\\" else text[0]
