"""The filter-text parser: the Hive metastore partition-filter syntax, and more, into an `Expr` tree.

A hand-written tokenizer (one compiled master regex) feeds a parser that is iterative everywhere: the boolean level
is a shunting-yard over NOT/AND/OR and parentheses, function calls and CAST nest through explicit stacks, so 10,000
levels of nesting or a 100,000-term chain never touch Python's recursion limit and parse in linear time.

Lexical rules: keywords are case-insensitive; identifiers are bare (`[A-Za-z_][A-Za-z0-9_]*`) or in backquotes, a
backquote inside doubled; strings are in single or double quotes with the quote doubled (`'it''s'`) -- there are no
backslash escapes (SQL's rule, not Hive's), so a backslash is an ordinary character. `DATE`, `TIMESTAMP`, `CAST`,
`AS` and `ESCAPE` are keywords only where their syntax applies, so a partition column may be called `date`.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, NoReturn

from sargable.errors import FilterSyntaxError, PatternError, SargableError, TypeCoercionError
from sargable.expr.like import compile_regex, validate_like
from sargable.expr.nodes import (
    FALSE,
    NULL_LITERAL,
    TRUE,
    And,
    Between,
    Column,
    Comparison,
    Expr,
    Func,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    Regex,
)
from sargable.types import (
    BIGINT,
    DATE,
    DOUBLE,
    MAX_DECIMAL_PRECISION,
    STRING,
    TIMESTAMP,
    DataType,
    convert,
    infer_type,
    parse_date,
    parse_timestamp,
    parse_type,
)

DIALECTS = ("sql", "hive")
RESERVED = frozenset({"AND", "OR", "NOT", "IN", "BETWEEN", "IS", "NULL", "LIKE", "RLIKE", "REGEXP", "TRUE", "FALSE"})
"""Words that are never a bare identifier; quote them (`` `in` ``) to name a column so."""
CONTEXTUAL = frozenset({"DATE", "TIMESTAMP", "CAST", "AS", "ESCAPE"})
"""Words that are keywords only where their syntax applies (`DATE '...'`, `CAST(`, ...)."""
KEYWORDS = RESERVED | CONTEXTUAL
BARE_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

OPERATORS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>"}

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<str>'[^']*(?:''[^']*)*'|"[^"]*(?:""[^"]*)*")
    | (?P<quoted>`[^`]*(?:``[^`]*)*`)
    | (?P<op>[<>=!]+)
    | (?P<punct>[(),-])
    | (?P<open>['"`])
    | (?P<end>\Z)
    | (?P<other>.)
    )""",
    re.VERBOSE | re.DOTALL,
)
_PRECEDENCE = {"OR": 1, "AND": 2, "NOT": 3}
_CONSTANTS = {"TRUE": TRUE, "FALSE": FALSE, "NULL": NULL_LITERAL}
_SHORT_INTEGER = 18
"""Digit strings this short are always bigint literals."""


class _Pending:
    """An AND/OR whose operands are still being collected, so nested same-kind groups flatten in linear time."""

    __slots__ = ("args", "kind")

    def __init__(self, kind: str, args: list[Any]) -> None:
        self.kind = kind
        self.args = args


def _materialize(value: Any) -> Expr:
    """The node for a parse value: a pending AND/OR becomes one flat And/Or, walked with an explicit stack."""
    if not isinstance(value, _Pending):
        return value
    out: list[Expr] = []
    stack = [iter(value.args)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, _Pending):
                stack.append(iter(item.args))
                break
            out.append(item)
        else:
            stack.pop()
    return And(tuple(out)) if value.kind == "AND" else Or(tuple(out))


def parse(text: str, dialect: str = "sql") -> Expr:
    """Parse filter text into an unbound expression; `dialect="hive"` reads LIKE as a whole-value Java regex."""
    if not isinstance(text, str):
        raise FilterSyntaxError(f"a filter must be a str, got {type(text).__name__}")
    if dialect not in DIALECTS:
        raise SargableError(f"unknown filter dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")
    return _Parser(text, dialect).parse()


class _Parser:
    """One parse of one text: the token arrays, a cursor, and caches of repeated columns and literals."""

    def __init__(self, text: str, dialect: str) -> None:
        self.text = text
        self.hive = dialect == "hive"
        self.kinds: list[str] = []
        self.raws: list[str] = []
        self.starts: list[int] = []
        self.i = 0
        self._columns: dict[str, Column] = {}
        self._literals: dict[tuple[str, str], Literal] = {}
        self._tokenize()

    # -- tokens ---------------------------------------------------------------------------------------------------

    def _tokenize(self) -> None:
        kinds, raws, starts = self.kinds, self.raws, self.starts
        for match in _TOKEN.finditer(self.text):
            group = match.lastgroup
            raw = match.group(group)
            start = match.start(group)
            if group == "word":
                upper = raw.upper()
                kind = upper if upper in KEYWORDS else "name"
            elif group == "punct":
                kind = raw
            elif group in ("num", "str", "quoted"):
                kind = group
            elif group == "op":
                kind = "op"
                if raw not in OPERATORS:
                    self._fail(f"{raw!r} is not an operator; expected one of = == != <> < <= > >= <=>", start)
            elif group == "end":
                kinds.append("end")
                raws.append("")
                starts.append(start)
                return
            elif group == "open":
                what = "quoted identifier" if raw == "`" else "string"
                self._fail(f"unterminated {what}: no closing {raw} after this one", start)
            else:
                self._fail(f"unexpected character {raw!r}", start)
            kinds.append(kind)
            raws.append(raw)
            starts.append(start)

    def _fail(self, message: str, position: int) -> NoReturn:
        raise FilterSyntaxError(message, self.text, position)

    def _describe(self, index: int) -> str:
        """How a token reads in a message: its text, or 'end of filter'."""
        return "end of filter" if self.kinds[index] == "end" else repr(self.raws[index])

    def _expected(self, what: str, value_wanted: bool = False) -> NoReturn:
        """Fail at the current token, saying what should have been there and what came before it."""
        i = self.i
        found = self._describe(i)
        where = f"after {self.raws[i - 1]!r}" if i > 0 else "at start of filter"
        hint = ""
        if value_wanted and self.kinds[i] in RESERVED:
            hint = f" ({self.raws[i]!r} is a keyword: write `{self.raws[i]}` to use it as a name)"
        self._fail(f"expected {what} {where}, found {found}{hint}", self.starts[i])

    def _expect(self, kind: str, what: str) -> None:
        if self.kinds[self.i] != kind:
            self._expected(what)
        self.i += 1

    # -- boolean level: shunting-yard ----------------------------------------------------------------------------

    def parse(self) -> Expr:
        kinds, starts = self.kinds, self.starts
        if kinds[0] == "end":
            self._fail("empty filter: expected a predicate such as p1 = 'a'", 0)
        ops: list[list[Any]] = []  # [kind, position, operand count]
        values: list[Any] = []
        expect_predicate = True
        while True:
            kind = kinds[self.i]
            if expect_predicate:
                if kind == "NOT":
                    ops.append(["NOT", starts[self.i], 1])
                    self.i += 1
                elif kind == "(":
                    ops.append(["(", starts[self.i], 0])
                    self.i += 1
                elif kind == "end" and self.i > 0 and kinds[self.i - 1] in _PRECEDENCE:
                    self._fail(
                        f"unexpected {self.raws[self.i - 1]!r} at end of filter; expected a predicate after it",
                        starts[self.i - 1],
                    )
                elif kind == ")" and kinds[self.i - 1] == "(":
                    self._fail("empty parentheses: expected a predicate inside", starts[self.i - 1])
                elif kind == ")" and not any(op[0] == "(" for op in ops):
                    self._fail("unbalanced parenthesis: this ')' has no matching '('", starts[self.i])
                else:
                    values.append(self._predicate())
                    expect_predicate = False
            elif kind in ("AND", "OR"):
                rank = _PRECEDENCE[kind]
                while ops and ops[-1][0] != "(" and _PRECEDENCE[ops[-1][0]] > rank:
                    self._reduce(ops, values)
                if ops and ops[-1][0] == kind:
                    ops[-1][2] += 1
                else:
                    ops.append([kind, starts[self.i], 2])
                self.i += 1
                expect_predicate = True
            elif kind == ")":
                while ops and ops[-1][0] != "(":
                    self._reduce(ops, values)
                if not ops:
                    self._fail("unbalanced parenthesis: this ')' has no matching '('", starts[self.i])
                ops.pop()
                self.i += 1
            elif kind == "end":
                while ops:
                    if ops[-1][0] == "(":
                        self._fail("unbalanced parenthesis: this '(' is never closed", ops[-1][1])
                    self._reduce(ops, values)
                return _materialize(values[0])
            else:
                self._expected("AND, OR, ')' or end of filter")

    @staticmethod
    def _reduce(ops: list[list[Any]], values: list[Any]) -> None:
        kind, _, count = ops.pop()
        if kind == "NOT":
            values[-1] = Not(_materialize(values[-1]))
            return
        args = values[len(values) - count :]
        del values[len(values) - count :]
        for index, arg in enumerate(args):
            if isinstance(arg, _Pending) and arg.kind != kind:
                args[index] = _materialize(arg)
        values.append(_Pending(kind, args))

    # -- predicates -----------------------------------------------------------------------------------------------

    def _predicate(self) -> Expr:
        """`operand [op operand | [NOT] IN (...) | [NOT] BETWEEN .. AND .. | IS [NOT] NULL | [NOT] LIKE ..]`."""
        operand = self._operand("a predicate")
        kind = self.kinds[self.i]
        if kind == "op":
            op = OPERATORS[self.raws[self.i]]
            self.i += 1
            return Comparison(op, operand, self._operand("a value"))
        if kind == "IS":
            self.i += 1
            negated = self.kinds[self.i] == "NOT"
            self.i += negated
            self._expect("NULL", "NULL or NOT NULL")
            return IsNull(operand, negated)
        negated = kind == "NOT"
        if negated:
            self.i += 1
            kind = self.kinds[self.i]
            if kind not in ("IN", "BETWEEN", "LIKE", "RLIKE", "REGEXP"):
                self._expected("IN, BETWEEN, LIKE or RLIKE")
        if kind == "IN":
            self.i += 1
            return In(operand, self._in_list(), negated)
        if kind == "BETWEEN":
            self.i += 1
            low = self._operand("a lower bound")
            self._expect("AND", "AND and an upper bound")
            return Between(operand, low, self._operand("an upper bound"), negated)
        if kind == "LIKE":
            self.i += 1
            return self._like(operand, negated)
        if kind in ("RLIKE", "REGEXP"):
            self.i += 1
            position = self.starts[self.i]
            return Regex(operand, self._regex(self._pattern("a quoted regular expression"), position), negated)
        return operand

    def _in_list(self) -> tuple[Expr, ...]:
        self._expect("(", "'(' and a list of values")
        if self.kinds[self.i] == ")":
            self._expected("a value in the IN list (IN needs at least one value)")
        items = [self._operand("a value in the IN list")]
        while self.kinds[self.i] == ",":
            self.i += 1
            items.append(self._operand("a value in the IN list"))
        self._expect(")", "',' or ')' in the IN list")
        return tuple(items)

    def _pattern(self, what: str) -> str:
        if self.kinds[self.i] != "str":
            self._expected(what)
        self.i += 1
        return _unquote(self.raws[self.i - 1])

    def _like(self, operand: Expr, negated: bool) -> Expr:
        position = self.starts[self.i]
        pattern = self._pattern("a quoted LIKE pattern")
        escape = None
        if self.kinds[self.i] == "ESCAPE":
            if self.hive:
                message = "ESCAPE does not apply to the hive dialect's LIKE (a regular expression)"
                self._fail(message, self.starts[self.i])
            self.i += 1
            escape_position = self.starts[self.i]
            escape = self._pattern("a quoted escape character")
            if len(escape) != 1:
                self._fail(f"ESCAPE must be exactly one character, got {escape!r}", escape_position)
        if self.hive:
            self._regex(pattern, position)
            return Regex(operand, self._regex(f"^(?:{pattern})\\Z", position), negated)
        try:
            validate_like(pattern, escape)
        except PatternError as exc:
            self._fail(f"bad LIKE pattern: {exc}", position)
        return Like(operand, pattern, escape, negated)

    def _regex(self, pattern: str, position: int) -> str:
        try:
            compile_regex(pattern)
        except PatternError as exc:
            self._fail(str(exc), position)
        return pattern

    # -- operands -------------------------------------------------------------------------------------------------

    def _is_name(self, index: int) -> bool:
        kind = self.kinds[index]
        if kind == "CAST":
            return self.kinds[index + 1] != "("
        return kind in ("name", "quoted") or kind in CONTEXTUAL

    def _operand(self, what: str) -> Expr:
        """A column, literal or function call; nested calls use an explicit stack of open argument lists."""
        kinds = self.kinds
        if kinds[self.i] == "num":
            self.i += 1
            return self._number(self.i - 1, False)
        frames: list[tuple[str, list[Expr]]] = []
        while True:
            if self._is_name(self.i) and kinds[self.i + 1] == "(" and not self._date_literal_ahead():
                frames.append((self._name(self.i), []))
                self.i += 2
                if kinds[self.i] != ")":
                    continue
                self.i += 1
                value: Expr = Func(frames.pop()[0], ())
            else:
                value = self._atom(what if not frames else f"an argument of {frames[-1][0]}()")
            while frames:
                frames[-1][1].append(value)
                if kinds[self.i] == ",":
                    self.i += 1
                    break
                self._expect(")", f"',' or ')' after an argument of {frames[-1][0]}()")
                name, args = frames.pop()
                value = Func(name, tuple(args))
            else:
                return value

    def _date_literal_ahead(self) -> bool:
        return self.kinds[self.i] in ("DATE", "TIMESTAMP") and self.kinds[self.i + 1] == "str"

    def _name(self, index: int) -> str:
        raw = self.raws[index]
        if self.kinds[index] != "quoted":
            return raw
        if len(raw) == 2:
            self._fail("empty quoted identifier ``", self.starts[index])
        return raw[1:-1].replace("``", "`")

    def _atom(self, what: str) -> Expr:
        """A column or a literal, with any CAST(... AS type) around a literal folded into a typed literal."""
        casts: list[int] = []
        while self.kinds[self.i] == "CAST" and self.kinds[self.i + 1] == "(":
            casts.append(self.i)
            self.i += 2
        if casts:
            value = self._literal("a literal (CAST applies to literals only)")
        elif self._is_name(self.i) and not self._date_literal_ahead():
            name = self._name(self.i)
            self.i += 1
            column = self._columns.get(name)
            if column is None:
                column = self._columns[name] = Column(name)
            return column
        else:
            value = self._literal(what)
        while casts:
            cast_start = self.starts[casts.pop()]
            self._expect("AS", "AS and a type")
            dtype = self._type()
            self._expect(")", f"')' to close the CAST( at position {cast_start}")
            try:
                value = Literal(convert(value.value, dtype), dtype)
            except TypeCoercionError as exc:
                self._fail(f"bad CAST to {dtype}: {exc}", cast_start)
        return value

    def _end(self, index: int) -> int:
        return self.starts[index] + len(self.raws[index])

    def _type(self) -> DataType:
        """A type name with optional `(n)` / `(p, s)` parameters, checked by `parse_type`."""
        start = self.i
        if self.kinds[start] not in ("name", *KEYWORDS):
            self._expected("a type name such as INT, DECIMAL(10,2) or DATE")
        self.i += 1
        if self.kinds[self.i] == "(":
            self.i += 1
            self._expect("num", "a number in the type's parameters")
            if self.kinds[self.i] == ",":
                self.i += 1
                self._expect("num", "a number in the type's parameters")
            self._expect(")", "')' after the type's parameters")
        source = self.text[self.starts[start] : self._end(self.i - 1)]
        try:
            return parse_type(source)
        except TypeCoercionError as exc:
            self._fail(f"bad CAST type: {exc}", self.starts[start])

    def _literal(self, what: str) -> Literal:
        kinds, i = self.kinds, self.i
        kind = kinds[i]
        if kind == "num":
            self.i = i + 1
            return self._number(i, False)
        if kind == "-":
            self.i = i + 1
            if kinds[i + 1] != "num":
                self._expected("a number")
            self.i = i + 2
            return self._number(i + 1, True)
        if kind == "str":
            self.i = i + 1
            raw = self.raws[i]
            cached = self._literals.get(("str", raw))
            if cached is None:
                cached = self._literals["str", raw] = Literal(_unquote(raw), STRING)
            return cached
        if kind in _CONSTANTS:
            self.i = i + 1
            return _CONSTANTS[kind]
        if kind in ("DATE", "TIMESTAMP") and kinds[i + 1] == "str":
            self.i = i + 2
            text = _unquote(self.raws[i + 1])
            try:
                if kind == "DATE":
                    return Literal(parse_date(text), DATE)
                return Literal(parse_timestamp(text), TIMESTAMP)
            except TypeCoercionError as exc:
                self._fail(f"bad {kind} literal: {exc}", self.starts[i + 1])
        self._expected(what, value_wanted=True)

    def _number(self, index: int, negative: bool) -> Literal:
        raw = self.raws[index]
        key = ("-" if negative else "+", raw)
        cached = self._literals.get(key)
        if cached is not None:
            return cached
        if len(raw) <= _SHORT_INTEGER and raw.isdigit():
            literal = self._literals[key] = Literal(-int(raw) if negative else int(raw), BIGINT)
            return literal
        position = self.starts[index - negative]
        value: Any
        if "e" in raw or "E" in raw:
            value = float(raw)
            if math.isinf(value):
                self._fail(f"number {raw} is out of range for a double", position)
            literal = Literal(-value if negative else value, DOUBLE)
        else:
            if "." in raw:
                value = Decimal(raw)
                value = value.copy_negate() if negative else value
            else:
                if len(raw.lstrip("0")) > MAX_DECIMAL_PRECISION:
                    self._fail(f"integer literal has more than {MAX_DECIMAL_PRECISION} digits", position)
                value = -int(raw) if negative else int(raw)
            try:
                literal = Literal(value, infer_type(value))
            except TypeCoercionError as exc:
                self._fail(f"number literal out of range: {exc}", position)
        self._literals[key] = literal
        return literal


def _unquote(raw: str) -> str:
    """The value of a quoted string token: strip the quotes, undouble the inner ones."""
    quote = raw[0]
    return raw[1:-1].replace(quote + quote, quote)
