"""The filter-text parser: the Hive metastore's filter syntax (Hive 2.3 to 4.x) and more, into an `Expr` tree.

A parser over the tokens of `sargable.expr.tokens` that is iterative everywhere: the boolean level is a
shunting-yard over NOT/AND/OR and parentheses, function calls and CAST nest through explicit stacks, so 10,000
levels of nesting or a 100,000-term chain never touch Python's recursion limit and parse in linear time.

Beyond SQL's predicates it reads the forms Hive's clients send: a parenthesized column before IN (`(hr) in (1, 2)`),
multi-column IN (`(struct(a, b)) in (const struct(1, 'x'), ...)` or `(a, b) in ((1, 'x'), ...)`, an OR of ANDs),
and `p IS [NOT] TRUE|FALSE` after any predicate or parenthesized filter (Hive 4.1), rewritten exactly with
`sargable.expr.truth_tests`. `dialect="hive"` adds Hive's lexical forms (see `tokens`), its reading of LIKE as a
Java regular expression over the whole value (RLIKE: a Java regex found anywhere), and Hive's names: `is`, `null`,
`true`, ... name a column where Hive's grammar reads them as one (`true = 'x'`).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, NoReturn

from sargable.errors import FilterSyntaxError, LimitExceededError, PatternError, SargableError, TypeCoercionError
from sargable.expr.java_regex import translate_java_regex
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
    Operand,
    Or,
    Regex,
    and_,
    or_,
)
from sargable.expr.tokens import (
    CONTEXTUAL,
    DIALECTS,
    HIVE_SOFT,
    KEYWORDS,
    LITERAL_KINDS,
    OPERATORS,
    RESERVED,
    string_value,
    tokenize,
)
from sargable.expr.truth_tests import is_false, is_true
from sargable.types import (
    BIGINT,
    COMPLEX_TYPES,
    DATE,
    DOUBLE,
    MAX_DECIMAL_PRECISION,
    STRING,
    TIMESTAMP,
    DataType,
    convert,
    field_path,
    infer_type,
    parse_date,
    parse_timestamp,
    parse_type,
)

MAX_HIVE_FILTER_CHARS = 1 << 20
"""The longest filter the `hive` dialect takes (1,048,576 characters), refused before any parsing: it is what
Hive metastore clients send, and a metastore server must bound what one call can cost (docs/hms.md#limits)."""
MAX_HIVE_IN_VALUES = 100_000
"""The most values (or rows) one IN list of the `hive` dialect takes (Spark sends at most 1,000 by default,
`spark.sql.hive.metastorePartitionPruningInSetThreshold`, and a range beyond that)."""

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
    """Parse filter text into an unbound expression; `dialect="hive"` reads what Hive metastore clients send, with
    Hive's meaning (LIKE a whole-value Java regular expression; see the module)."""
    if not isinstance(text, str):
        raise FilterSyntaxError(f"a filter must be a str, got {type(text).__name__}")
    if dialect not in DIALECTS:
        raise SargableError(f"unknown filter dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")
    if dialect == "hive" and len(text) > MAX_HIVE_FILTER_CHARS:
        raise LimitExceededError(
            f"the filter is {len(text):,} characters long, over the hive dialect's limit of "
            f"{MAX_HIVE_FILTER_CHARS:,}; split the request or filter on fewer values"
        )
    return _Parser(text, dialect).parse()


class _Parser:
    """One parse of one text: the token arrays, a cursor, and caches of repeated columns and literals."""

    def __init__(self, text: str, dialect: str) -> None:
        self.text = text
        self.dialect = dialect
        self.hive = dialect == "hive"
        tokens = tokenize(text, dialect)
        self.kinds, self.raws, self.starts = tokens.kinds, tokens.raws, tokens.starts
        self.i = 0
        self._columns: dict[str, Column] = {}
        self._literals: dict[tuple[str, str], Literal] = {}

    # -- tokens ---------------------------------------------------------------------------------------------------

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

    def _word(self, index: int, word: str) -> bool:
        """Whether the token at `index` is the bare word `word` (`STRUCT`, `CONST`: words, not keywords)."""
        return self.kinds[index] == "name" and self.raws[index].upper() == word

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
                elif kind == "(" and self._row_in_ahead():
                    values.append(self._truth_tests(self._row_in()))
                    expect_predicate = False
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
                    predicate = self._predicate()
                    values.append(self._truth_tests(predicate) if kinds[self.i] == "IS" else predicate)
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
                if kinds[self.i] == "IS":
                    values[-1] = self._truth_tests(_materialize(values[-1]))
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

    def _truth_tests(self, predicate: Expr) -> Expr:
        """`predicate IS [NOT] TRUE|FALSE`, as many as follow, each rewritten into a two-valued predicate."""
        kinds = self.kinds
        while kinds[self.i] == "IS":
            negated = kinds[self.i + 1] == "NOT"
            value = kinds[self.i + 1 + negated]
            if value not in ("TRUE", "FALSE"):
                self.i += 1 + negated
                if value != "NULL" or not isinstance(predicate, Operand):
                    self._expected("TRUE or FALSE" + (" (IS NULL tests a value, not a predicate)" * (value == "NULL")))
                self.i += 1
                predicate = IsNull(predicate, negated)
                continue
            self.i += 2 + negated
            predicate = is_true(predicate) if value == "TRUE" else is_false(predicate)
            if negated:
                predicate = Not(predicate)
        return predicate

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
            following = self.kinds[self.i + 1 + (self.kinds[self.i + 1] == "NOT")]
            if following in ("TRUE", "FALSE"):
                return operand
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
            pattern = self._pattern("a quoted regular expression")
            if self.hive:
                return Regex(operand, self._java_regex(pattern, position, whole=False), negated)
            return Regex(operand, self._regex(pattern, position), negated)
        return operand

    def _in_list(self) -> tuple[Expr, ...]:
        self._expect("(", "'(' and a list of values")
        if self.kinds[self.i] == ")":
            self._expected("a value in the IN list (IN needs at least one value)")
        items = [self._operand("a value in the IN list")]
        while self.kinds[self.i] == ",":
            self.i += 1
            items.append(self._operand("a value in the IN list"))
            self._check_in_size(len(items))
        self._expect(")", "',' or ')' in the IN list")
        return tuple(items)

    def _check_in_size(self, count: int) -> None:
        if self.hive and count > MAX_HIVE_IN_VALUES:
            raise LimitExceededError(
                f"an IN list of more than {MAX_HIVE_IN_VALUES:,} values (at position {self.starts[self.i - 1]}) is "
                f"over the hive dialect's limit; filter on a range, or on fewer values per call"
            )

    # -- IN over parenthesized columns ----------------------------------------------------------------------------

    def _row_in_ahead(self) -> bool:
        """Whether `(` starts `(col) [NOT] IN`, `(c1, c2, ...) [NOT] IN` or `(struct(c1, ...)) [NOT] IN`."""
        kinds, i = self.kinds, self.i + 1
        struct = self._word(i, "STRUCT") and kinds[i + 1] == "("
        i += 2 if struct else 0
        while True:
            if not self._is_name(i, column_only=True) or kinds[i + 1] == "(":
                return False
            i += 1
            if kinds[i] != ",":
                break
            i += 1
        if kinds[i] != ")" or (struct and kinds[i + 1] != ")"):
            return False
        i += 2 if struct else 1
        return kinds[i] == "IN" or (kinds[i] == "NOT" and kinds[i + 1] == "IN")

    def _row_in(self) -> Expr:
        """A parenthesized IN: one column is an `In`; several make an OR of ANDs of equalities (NOT IN: its negation,
        as an AND of ORs of `!=`, the form Hive builds)."""
        start = self.starts[self.i]
        self.i += 1
        struct = self._word(self.i, "STRUCT")
        self.i += 2 if struct else 0
        columns = [self._column(self.i)]
        self.i += 1
        while self.kinds[self.i] == ",":
            columns.append(self._column(self.i + 1))
            self.i += 2
        self.i += 2 if struct else 1
        negated = self.kinds[self.i] == "NOT"
        self.i += 2 if negated else 1
        if len(columns) == 1 and not struct:
            return In(columns[0], self._in_list(), negated)
        rows = self._rows(len(columns), start)
        if len(columns) == 1:
            return In(columns[0], tuple(row[0] for row in rows), negated)
        if negated:
            return and_(*(or_(*(c.ne(v) for c, v in zip(columns, row, strict=True))) for row in rows))
        return or_(*(and_(*(c.eq(v) for c, v in zip(columns, row, strict=True))) for row in rows))

    def _rows(self, width: int, start: int) -> list[tuple[Expr, ...]]:
        """`( row, ... )` where a row is `[CONST] STRUCT(v, ...)` or `(v, ...)` with one value per column."""
        self._expect("(", "'(' and a list of rows")
        rows: list[tuple[Expr, ...]] = []
        while True:
            row_start = self.starts[self.i]
            if self._word(self.i, "CONST") and self._word(self.i + 1, "STRUCT"):
                self.i += 1
            if self._word(self.i, "STRUCT") and self.kinds[self.i + 1] == "(":
                self.i += 1
            self._expect("(", "a row of values such as (1, 'x') or struct(1, 'x')")
            row = [self._operand("a value in the row")]
            while self.kinds[self.i] == ",":
                self.i += 1
                row.append(self._operand("a value in the row"))
            self._expect(")", "',' or ')' in the row")
            if len(row) != width:
                self._fail(
                    f"this row has {len(row)} value{'s' if len(row) != 1 else ''} but the IN at position {start} "
                    f"names {width} column{'s' if width != 1 else ''}",
                    row_start,
                )
            rows.append(tuple(row))
            self._check_in_size(len(rows))
            if self.kinds[self.i] != ",":
                break
            self.i += 1
        self._expect(")", "',' or ')' after a row")
        return rows

    def _column(self, index: int) -> Column:
        name = self._name(index)
        column = self._columns.get(name)
        if column is None:
            column = self._columns[name] = Column(name)
        return column

    def _field(self, index: int) -> Column:
        """A struct field by its dotted path (`device.os`, `` a.`b c` ``): a column named by the canonical path."""
        parts = [self._name(index)]
        while self.kinds[self.i] == "dot" and self._is_name(self.i + 1):
            parts.append(self._name(self.i + 1))
            self.i += 2
        if self.kinds[self.i] == "dot":
            self._expected("a field name after '.'")
        name = field_path(parts)
        column = self._columns.get(name)
        if column is None:
            column = self._columns[name] = Column(name)
        return column

    # -- LIKE and regular expressions ------------------------------------------------------------------------------

    def _pattern(self, what: str) -> str:
        if self.kinds[self.i] != "str":
            self._expected(what)
        self.i += 1
        return string_value(self.raws[self.i - 1], self.dialect)

    def _like(self, operand: Expr, negated: bool) -> Expr:
        position = self.starts[self.i]
        if self.kinds[self.i] != "str" and isinstance(operand, Literal):
            self._expected("a quoted LIKE pattern (the column goes on the left of LIKE)")
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
            return Regex(operand, self._java_regex(pattern, position, whole=True), negated)
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

    def _java_regex(self, pattern: str, position: int, whole: bool) -> str:
        try:
            return translate_java_regex(pattern, whole)
        except PatternError as exc:
            self._fail(str(exc), position)

    # -- operands -------------------------------------------------------------------------------------------------

    def _is_name(self, index: int, column_only: bool = False) -> bool:
        """Whether the token at `index`, in operand position, is a name (a column, or a function before `(`)."""
        kind = self.kinds[index]
        if kind == "CAST":
            return column_only or self.kinds[index + 1] != "("
        if kind in ("name", "quoted") or kind in CONTEXTUAL:
            return True
        if not self.hive or kind not in HIVE_SOFT:
            return False
        return column_only or kind in ("IS", "RLIKE", "REGEXP") or self._hive_key(index)

    def _hive_key(self, index: int) -> bool:
        """Whether `null`, `true` or `false` at `index` is a column, as in Hive's grammar: beside an operator whose
        other side is a Hive constant (`true = 'x'`, `'x' < null`), or before BETWEEN or LIKE."""
        kinds = self.kinds
        following = kinds[index + 1 + (kinds[index + 1] == "NOT")]
        if following in ("BETWEEN", "LIKE"):
            return True
        if kinds[index + 1] == "op" and self._hive_constant_at(index + 2):
            return True
        return index >= 2 and kinds[index - 1] == "op" and kinds[index - 2] in LITERAL_KINDS

    def _hive_constant_at(self, index: int) -> bool:
        kinds = self.kinds
        if kinds[index] == "-":
            return kinds[index + 1] == "num"
        return kinds[index] in LITERAL_KINDS or (kinds[index] in ("DATE", "TIMESTAMP") and kinds[index + 1] == "str")

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
            self.i += 1
            if self.kinds[self.i] == "dot":
                return self._field(self.i - 1)
            return self._column(self.i - 1)
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
        if self.raws[start].lower() in COMPLEX_TYPES:
            self._fail(f"bad CAST type: a literal can't be cast to {self.raws[start]}", self.starts[start])
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
            dtype = parse_type(source)
        except TypeCoercionError as exc:
            self._fail(f"bad CAST type: {exc}", self.starts[start])
        if not dtype.is_orderable:
            self._fail(f"bad CAST type: a literal can't be cast to {dtype}", self.starts[start])
        return dtype

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
                cached = self._literals["str", raw] = Literal(string_value(raw, self.dialect), STRING)
            return cached
        if kind in _CONSTANTS:
            self.i = i + 1
            return _CONSTANTS[kind]
        if kind in ("DATE", "TIMESTAMP") and kinds[i + 1] == "str":
            self.i = i + 2
            return self._datetime(kind, string_value(self.raws[i + 1], self.dialect), self.starts[i + 1])
        if kind in ("date", "timestamp"):
            self.i = i + 1
            return self._datetime(kind.upper(), self.raws[i], self.starts[i])
        self._expected(what, value_wanted=True)

    def _datetime(self, kind: str, text: str, position: int) -> Literal:
        try:
            if kind == "DATE":
                return Literal(parse_date(text), DATE)
            return Literal(parse_timestamp(text), TIMESTAMP)
        except TypeCoercionError as exc:
            self._fail(f"bad {kind} literal: {exc}", position)

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
