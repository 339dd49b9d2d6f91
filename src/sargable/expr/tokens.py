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

_COMMON_TAIL = r"""
    | (?P<open>['"`])
    | (?P<op>[<>=!]+)
    | (?P<punct>[(),-])
    | (?P<dot>\.(?=[A-Za-z_`]))
    | (?P<end>\Z)
    | (?P<other>.)
    )"""
_SQL_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)"""
    + _COMMON_TAIL,
    re.VERBOSE | re.DOTALL,
)
_HIVE_TOKEN = re.compile(
    r"""\s*(?:
      (?P<timestamp>[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?![0-9A-Za-z_]))
    | (?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2}(?![0-9A-Za-z_]))
    | (?P<word>[0-9]*[A-Za-z_][A-Za-z0-9_]*)
    | (?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"""
    + _COMMON_TAIL,
    re.VERBOSE | re.DOTALL,
)
_SPACE = re.compile(r"\s*")


def _quoted_end(text: str, start: int, escapes: bool) -> tuple[int, int]:
    """Where the quoted piece opening at `start` ends (just past its closing quote; -1 if unterminated), and where
    an unterminated one is reported: at the second quote of its last doubled quote, as a backtracking reading
    closes the piece there and finds the rest unterminated (else at `start`).

    Inside, the quote doubled stands for itself and, with `escapes`, a backslash takes the next character with it.
    Scanned with `str.find`, never a backtracking regex: time linear in the piece, no memory beyond the token (the
    regex `'(?:[^'\\]|\\.|'')*'` kept ~250 bytes of backtracking state per character)."""
    quote = text[start]
    at, reported = start + 1, start
    close = text.find(quote, at)
    while close >= 0:
        if escapes:
            slash = text.find("\\", at, close)
            if slash >= 0:
                at = slash + 2
                if at > close:
                    close = text.find(quote, at)
                continue
        if not text.startswith(quote, close + 1):
            return close + 1, reported
        reported, at = close + 1, close + 2
        close = text.find(quote, at)
    return -1, reported


def _string_end(text: str, start: int, hive: bool) -> tuple[int, int]:
    """The end of the string token opening at `start` (-1 if unterminated, then where to report it): in the hive
    dialect adjacent quoted pieces, with only whitespace between, are one string (Hive 4's `STRING+`)."""
    end, reported = _quoted_end(text, start, hive)
    while hive and end >= 0:
        following = _SPACE.match(text, end).end()
        if following >= len(text) or text[following] not in "'\"":
            break
        end, reported = _quoted_end(text, following, True)
    return end, reported


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
    pattern = _HIVE_TOKEN if hive else _SQL_TOKEN
    at = 0
    while True:
        match = pattern.match(text, at)
        assert match is not None, "the token pattern matches at every position"
        group = match.lastgroup
        assert group is not None
        raw = match.group(group)
        start = match.start(group)
        at = match.end()
        if group == "open":
            end, reported = _string_end(text, start, hive and raw != "`")
            if end < 0:
                what = "quoted identifier" if raw == "`" else "string"
                hint = " (in the hive dialect a backslash escapes the next character)" if hive and raw != "`" else ""
                quote = text[reported]
                raise FilterSyntaxError(f"unterminated {what}: no closing {quote} after this one{hint}", text, reported)
            group, raw, at = ("quoted" if raw == "`" else "str"), text[start:end], end
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
        elif group == "other":
            raise FilterSyntaxError(f"unexpected character {raw!r}", text, start)
        else:
            kind = group
        kinds.append(kind)
        raws.append(raw)
        starts.append(start)


def string_value(raw: str, dialect: str) -> str:
    """The value of a `str` token: quotes stripped and doubled quotes undoubled; in the hive dialect a backslash
    and the character after it stay as they are (Hive's `TrimQuotes`), and adjacent strings are joined."""
    if dialect != "hive":
        quote = raw[0]
        return raw[1:-1].replace(quote + quote, quote)
    pieces = []
    at = 0
    while at < len(raw):
        end, _ = _quoted_end(raw, at, True)
        quote = raw[at]
        # In a well-formed piece every run of quotes is doubled quotes, after an escaping backslash one more: either
        # way undoubling from the left gives what Hive's reading does, and backslash pairs stay as they are.
        pieces.append(raw[at + 1 : end - 1].replace(quote + quote, quote))
        at = _SPACE.match(raw, end).end()
    return "".join(pieces)
