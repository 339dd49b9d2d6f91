"""Java regular expressions (java.util.regex, as Hive and Spark read them) translated to Python `re` patterns.

The Hive metastore's LIKE is `String.matches(pattern)`: a Java regex over the whole value. Python's `re` reads most
of that syntax the same way but not all of it, so patterns are translated construct by construct into a Python
pattern that matches exactly the same strings:

- `.`, `^`, `$`, `\\Z` follow Java's line terminators (`\\n`, `\\r`, `\\r\\n`, U+0085, U+2028, U+2029; only `\\n`
  under `(?d)`), and `(?m)` Java's multi-line anchors;
- `\\d \\s \\w` and their negations are ASCII-only, as in Java (Python's are Unicode-wide);
- `(?i)` is ASCII-only case folding, as in Java without `(?u)`, expanded into the pattern (`a` -> `[aA]`), so inline
  flags may appear anywhere, as Java allows;
- character classes with nested classes and `[X&&Y]` intersections, POSIX classes (`\\p{Alpha}` ...), `\\Q...\\E`,
  `\\x{h..h}`, `\\uhhhh` surrogate pairs, `\\0ooo`, `\\cX`, `\\e`, `\\h`, `\\v`, named groups and `\\k<name>`
  become their Python equivalents; possessive quantifiers and atomic groups are kept (Python 3.11 has them).

What has no exact Python equivalent is refused with a `PatternError` saying so: Unicode categories and scripts
(`\\p{L}`, `\\p{IsLatin}`), `\\b` / `\\B` (their word characters changed in Java 19), `\\R` (Java 8 and 9+
backtrack into it differently), `\\X`, `\\N{...}`, `(?u)` and `(?U)`, negated classes holding a nested class or
`&&` and any `&&` other than `[X&&Y]` (Java versions read them differently), case-insensitive back-references, and
constructs Python's `re` can't express (variable-width look-behind, references to a group that is still open).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from sargable.errors import PatternError, UnsupportedPatternError
from sargable.expr.linear_regex import compile_linear

_MAX = 0x10FFFF
Ranges = tuple[tuple[int, int], ...]
"""A set of code points as sorted, disjoint, non-adjacent inclusive ranges."""

_TERMINATORS = "\n\r\x85\u2028\u2029"
_SPACE = " \t\n\x0b\f\r"
_WORD = "a-zA-Z0-9_"
_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_HEX = "0123456789abcdefABCDEF"
_META = "\\.^$|?*+()[]{}#"
_BOUNDS = re.compile(r"([0-9]+)(?:(,)([0-9]*))?\}")
_X_BOUNDS = re.compile(r"([0-9][0-9 \t\n\x0b\f\r]*+)(?:(,)([ \t\n\x0b\f\r0-9]*+))?[ \t\n\x0b\f\r]*\}")
"""Possessive (`*+`): with the trailing spaces also matched by the groups, plain `*` backtracks quadratically."""


def _ranges(*items: tuple[int, int] | str) -> Ranges:
    """Normalize ranges given as (low, high) pairs or as strings of single characters."""
    pairs: list[tuple[int, int]] = []
    for item in items:
        if isinstance(item, str):
            pairs.extend((ord(c), ord(c)) for c in item)
        else:
            pairs.append(item)
    return _union(pairs)


def _union(pairs: Iterable[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for low, high in sorted(pairs):
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return tuple(out)


def _complement(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    start = 0
    for low, high in ranges:
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= _MAX:
        out.append((start, _MAX))
    return tuple(out)


def _intersect(a: Ranges, b: Ranges) -> Ranges:
    return _complement(_union([*_complement(a), *_complement(b)]))


def _fold_ascii(ranges: Ranges) -> Ranges:
    """Close a set under ASCII case mapping, as Java's CASE_INSENSITIVE (without UNICODE_CASE) matches a class."""
    extra: list[tuple[int, int]] = []
    for shift, (low, high) in ((32, (65, 90)), (-32, (97, 122))):
        for a, b in ranges:
            lo, hi = max(a, low), min(b, high)
            if lo <= hi:
                extra.append((lo + shift, hi + shift))
    return _union([*ranges, *extra])


_CLASSES: dict[str, Ranges] = {
    "d": _ranges((48, 57)),
    "s": _ranges(_SPACE),
    "w": _ranges((97, 122), (65, 90), (48, 57), "_"),
    "h": _ranges(" \t\xa0\u1680\u180e\u202f\u205f\u3000", (0x2000, 0x200A)),
    "v": _ranges("\n\x0b\f\r\x85\u2028\u2029"),
}
_POSIX: dict[str, Ranges] = {
    "Lower": _ranges((97, 122)),
    "Upper": _ranges((65, 90)),
    "ASCII": _ranges((0, 127)),
    "Alpha": _ranges((97, 122), (65, 90)),
    "Digit": _ranges((48, 57)),
    "Alnum": _ranges((97, 122), (65, 90), (48, 57)),
    "Punct": _ranges(_PUNCT),
    "Graph": _ranges((97, 122), (65, 90), (48, 57), _PUNCT),
    "Print": _ranges((97, 122), (65, 90), (48, 57), _PUNCT, " "),
    "Blank": _ranges(" \t"),
    "Cntrl": _ranges((0, 31), (127, 127)),
    "XDigit": _ranges(_HEX),
    "Space": _ranges(_SPACE),
}
_ESCAPED_CHARS = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "a": "\x07", "e": "\x1b"}
_FLAGS = frozenset("idmsx")
_REFUSED = {
    "b": ("\\b (its word characters changed in Java 19)", "; write a look-around such as (?<![A-Za-z0-9_])"),
    "B": ("\\B (its word characters changed in Java 19)", "; write a look-around such as (?<=[A-Za-z0-9_])"),
    "X": ("\\X (grapheme clusters)", ""),
    "N": ("\\N{...} (characters by name)", "; write the character itself"),
    "R": ("\\R (Java 8 and 9+ backtrack into it differently)", "; write (?:\\r\\n|[\\n-\\r\\x85\\u2028\\u2029])"),
}


def _char(code: int, in_class: bool) -> str:
    """A code point as text both Python's `re` and Java read as that one literal character."""
    if code < 128:
        char = chr(code)
        if char.isalnum() or (not in_class and 32 < code < 127 and char not in _META):
            return char
        if 32 < code < 127:
            return "\\" + char
        return f"\\x{code:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return chr(code)


def _class_text(ranges: Ranges) -> str:
    """A set of code points as one Python (and Java) regex atom."""
    if not ranges:
        return "(?!)"
    if ranges == ((0, _MAX),):
        return "(?s:.)"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _char(ranges[0][0], False)
    parts = []
    for low, high in ranges:
        parts.append(_char(low, True))
        if high > low:
            parts.append(("-" if high > low + 1 else "") + _char(high, True))
    return "[" + "".join(parts) + "]"


@dataclass(slots=True)
class _ClassFrame:
    """An open `[...]`: its items so far (each a set), and the set left of its `&&` if it has one."""

    start: int
    negated: bool
    items: list[Ranges] = field(default_factory=list)
    left: Ranges | None = None
    nested: bool = False


class _Translator:
    """One pass over a Java pattern, with an explicit stack of open groups (no recursion on deep nesting)."""

    def __init__(self, pattern: str, source: str) -> None:
        self.pattern = pattern
        self.source = source
        self.i = 0
        self.out: list[str] = []
        self.flags: set[str] = set()
        self.stack: list[tuple[set[str], int]] = []  # flags before each open group, and its number (0: none)
        self.groups = 0
        self.closed: set[int] = set()
        self.names: dict[str, int] = {}
        self.pending: list[tuple[int, int, int]] = []  # back-references to groups not closed yet
        self.repeatable = False

    def fail(self, message: str, position: int | None = None) -> PatternError:
        at = self.i if position is None else position
        return PatternError(f"invalid regular expression {self.source!r}: {message} at position {at}")

    def refuse(self, what: str, position: int, hint: str = "") -> PatternError:
        return PatternError(
            f"cannot translate the Java regular expression {self.source!r} to Python's: {what}, at position "
            f"{position}, has no exact equivalent{hint}"
        )

    # -- reading -------------------------------------------------------------------------------------------------

    def peek(self) -> str:
        self.skip_comments()
        return self.pattern[self.i] if self.i < len(self.pattern) else ""

    def skip_comments(self) -> None:
        """Under `(?x)` whitespace and `#` comments (to the end of the line) are not part of the pattern."""
        if "x" not in self.flags:
            return
        pattern, size = self.pattern, len(self.pattern)
        while self.i < size:
            char = pattern[self.i]
            if char in _SPACE:
                self.i += 1
            elif char == "#":
                ends = "\n" if "d" in self.flags else _TERMINATORS
                while self.i < size and pattern[self.i] not in ends:
                    self.i += 1
            else:
                return

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise self.fail("unexpected end of pattern")
        self.i += 1
        return char

    # -- the pattern ---------------------------------------------------------------------------------------------

    def translate(self) -> str:
        while True:
            char = self.peek()
            if not char:
                break
            start = self.i
            self.i += 1
            if char == "\\":
                self.escape(start)
            elif char == "[":
                self.emit(_class_text(self.char_class(start)))
            elif char == "(":
                self.open_group(start)
            elif char == ")":
                self.close_group(start)
            elif char == "|":
                self.out.append("|")
                self.repeatable = False
            elif char in "*+?{":
                self.quantifier(char, start)
            elif char == ".":
                self.emit(self.dot())
            elif char == "^":
                self.emit(self.caret())
            elif char == "$":
                self.emit(self.dollar())
            else:
                self.literal(ord(char))
        if self.stack:
            raise self.fail("missing ), unterminated subpattern", len(self.pattern))
        for index, number, start in self.pending:
            if number <= self.groups:
                raise self.refuse(f"a back-reference to group {number} before that group closes", start)
            self.out[index] = "(?!)"  # Java: a reference to a group that never matched fails
        return "".join(self.out)

    def emit(self, text: str, repeatable: bool = True) -> None:
        self.out.append(text)
        self.repeatable = repeatable

    def literal(self, code: int) -> None:
        if "i" in self.flags and (65 <= code <= 90 or 97 <= code <= 122):
            self.emit(_class_text(_fold_ascii(((code, code),))))
        else:
            self.emit(_char(code, False))

    def dot(self) -> str:
        if "s" in self.flags:
            return "(?s:.)"
        return "." if "d" in self.flags else "[^\\n\\r\\x85\\u2028\\u2029]"

    def caret(self) -> str:
        if "m" not in self.flags:
            return "^"
        if "d" in self.flags:
            return "(?:(?!\\Z)(?:\\A|(?<=\\n)))"
        return "(?:(?!\\Z)(?:\\A|(?<=[\\n\\r\\x85\\u2028\\u2029])(?!(?<=\\r)\\n)))"

    def dollar(self, multiline: bool | None = None) -> str:
        multiline = "m" in self.flags if multiline is None else multiline
        if "d" in self.flags:
            return "(?=\\n|\\Z)" if multiline else "(?=\\n?\\Z)"
        if multiline:
            return "(?:(?=[\\n\\r\\x85\\u2028\\u2029]|\\Z)(?!(?<=\\r)\\n))"
        return "(?:(?=(?:\\r\\n|[\\n\\r\\x85\\u2028\\u2029])?\\Z)(?!(?<=\\r)\\n))"

    def quantifier(self, char: str, start: int) -> None:
        """`* + ? {n} {n,} {n,m}`, each maybe lazy (`?`) or possessive (`+`).

        Java reads a `{n,m}` with nothing before it to repeat as repeating the empty string: it matches nothing.
        """
        if not self.repeatable and char != "{":
            raise self.fail(f"dangling meta character {char!r}", start)
        if self.repeatable and self.out[-1] in ("^", "\\A", "\\Z"):
            self.out[-1] = f"(?:{self.out[-1]})"
        text = char
        if char == "{":
            bounds = _X_BOUNDS if "x" in self.flags else _BOUNDS  # under (?x) Java skips spaces after a digit
            match = bounds.match(self.pattern, self.i)
            if not match:
                raise self.fail("illegal repetition", start)
            low, comma, high = (re.sub(f"[{_SPACE}]", "", g) if g else g for g in match.groups())
            if high and int(high) < int(low):
                raise self.fail("illegal repetition range", start)
            text = "{" + low + (comma or "") + (high or "") + "}"
            self.i = match.end()
        if self.peek() in ("?", "+"):
            text += self.pattern[self.i]
            self.i += 1
        if self.repeatable:
            self.out.append(text)
        self.repeatable = False

    # -- groups --------------------------------------------------------------------------------------------------

    def open_group(self, start: int) -> None:
        saved = set(self.flags)
        pattern = self.pattern
        if not pattern.startswith("?", self.i):
            self.groups += 1
            self.stack.append((saved, self.groups))
            self.emit("(", False)
            return
        self.i += 1
        for prefix in (":", "=", "!", ">", "<=", "<!"):
            if pattern.startswith(prefix, self.i):
                self.i += len(prefix)
                self.stack.append((saved, 0))
                self.emit("(?" + prefix, False)
                return
        if pattern.startswith("<", self.i):
            match = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)>").match(pattern, self.i)
            if not match:
                raise self.fail("bad named group", start)
            if match.group(1) in self.names:
                raise self.fail(f"named capturing group <{match.group(1)}> is already defined", start)
            self.i = match.end()
            self.groups += 1
            self.names[match.group(1)] = self.groups
            self.stack.append((saved, self.groups))
            self.emit("(", False)
            return
        match = re.compile(r"([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])").match(pattern, self.i)
        if not match:
            raise self.fail("unknown inline modifier", self.i)
        on, off, end = match.group(1), match.group(2) or "", match.group(3)
        for flag in on + off:
            if flag in "uU":
                raise self.refuse(f"the (?{flag}) flag (Unicode case and classes)", start)
            if flag not in _FLAGS:
                raise self.fail(f"unknown inline modifier {flag!r}", self.i)
        self.i = match.end()
        if end == ":":
            self.stack.append((saved, 0))
            self.out.append("(?:")
        self.repeatable = False
        self.flags = (self.flags | set(on)) - set(off)

    def close_group(self, start: int) -> None:
        if not self.stack:
            raise self.fail("unbalanced parenthesis", start)
        self.flags, number = self.stack.pop()
        if number:
            self.closed.add(number)
        self.emit(")")

    # -- escapes -------------------------------------------------------------------------------------------------

    def escape(self, start: int) -> None:
        """A backslash sequence outside a class: a character, a class, an anchor, a quote or a back-reference."""
        if self.i >= len(self.pattern):
            raise self.fail("the pattern ends with a backslash", start)
        char = self.pattern[self.i]
        if char in "123456789" or char == "k":
            self.backreference(start)
            return
        anchors = {"A": "\\A", "G": "\\A", "z": "\\Z"}
        if char in anchors:
            self.i += 1
            self.emit(anchors[char])
            return
        if char == "Z":
            self.i += 1
            self.emit(self.dollar(multiline=False))
            return
        item = self.escaped_item(start)
        if isinstance(item, int):
            self.literal(item)
        else:
            self.emit(_class_text(item))

    def backreference(self, start: int) -> None:
        if "i" in self.flags:
            raise self.refuse("a case-insensitive back-reference", start)
        if self.pattern[self.i] == "k":
            match = re.compile(r"k<([a-zA-Z][a-zA-Z0-9]*)>").match(self.pattern, self.i)
            if not match:
                raise self.fail("\\k is not followed by <name>", start)
            if match.group(1) not in self.names:
                raise self.fail(f"named capturing group <{match.group(1)}> does not exist", start)
            number = self.names[match.group(1)]
            self.i = match.end()
        else:
            number = int(self.pattern[self.i])
            self.i += 1
            while self.i < len(self.pattern) and self.pattern[self.i].isdigit():
                longer = number * 10 + int(self.pattern[self.i])
                if longer > self.groups:
                    break
                number = longer
                self.i += 1
        if number not in self.closed:
            self.pending.append((len(self.out), number, start))
        self.emit(f"(?:\\{number})")

    def escaped_item(self, start: int) -> int | Ranges:
        """The code point or class a backslash sequence stands for (inside or outside a class)."""
        char = self.pattern[self.i]
        self.i += 1
        if char in _REFUSED:
            what, hint = _REFUSED[char]
            raise self.refuse(what, start, hint)
        if char in _CLASSES:
            return _CLASSES[char]
        if char in "DSWHV":
            return _complement(_CLASSES[char.lower()])
        if char in "pP":
            ranges = self.property(start)
            ranges = _fold_ascii(ranges) if "i" in self.flags else ranges  # Java folds, then complements \P
            return _complement(ranges) if char == "P" else ranges
        if char in _ESCAPED_CHARS:
            return ord(_ESCAPED_CHARS[char])
        if char == "0":
            match = re.compile(r"[0-3][0-7]{2}|[0-7]{1,2}").match(self.pattern, self.i)
            if not match:
                raise self.fail("illegal octal escape sequence", start)
            self.i = match.end()
            return int(match.group(), 8)
        if char == "x":
            match = re.compile(r"\{([0-9a-fA-F]+)\}|[0-9a-fA-F]{2}").match(self.pattern, self.i)
            if not match or int(match.group(1) or match.group(), 16) > _MAX:
                raise self.fail("illegal hexadecimal escape sequence", start)
            self.i = match.end()
            return int(match.group(1) or match.group(), 16)
        if char == "u":
            return self.unicode_escape(start)
        if char == "c":
            if self.i >= len(self.pattern):
                raise self.fail("illegal control escape sequence", start)
            self.i += 1
            return ord(self.pattern[self.i - 1]) ^ 64
        if char.isalnum() and char.isascii():
            raise self.fail(f"illegal/unsupported escape sequence \\{char}", start)
        return ord(char)

    def unicode_escape(self, start: int) -> int:
        match = re.compile(r"[0-9a-fA-F]{4}").match(self.pattern, self.i)
        if not match:
            raise self.fail("illegal Unicode escape sequence", start)
        self.i = match.end()
        code = int(match.group(), 16)
        if 0xD800 <= code <= 0xDBFF:
            low = re.compile(r"\\u(d[c-f][0-9a-f]{2})", re.IGNORECASE).match(self.pattern, self.i)
            if low:
                self.i = low.end()
                return 0x10000 + ((code - 0xD800) << 10) + (int(low.group(1), 16) - 0xDC00)
        return code

    def property(self, start: int) -> Ranges:
        """`\\p{Name}`: the POSIX classes (US-ASCII, as Java defines them); Unicode properties are refused."""
        match = re.compile(r"\{([^}]*)\}|([A-Za-z])").match(self.pattern, self.i)
        if not match:
            raise self.fail("bad \\p escape: expected \\p{Name}", start)
        self.i = match.end()
        name = match.group(1) if match.group(1) is not None else match.group(2)
        if name in _POSIX:
            return _POSIX[name]
        raise self.refuse(f"\\p{{{name}}}", start, "; only the POSIX classes such as \\p{Alpha} translate")

    # -- character classes -----------------------------------------------------------------------------------------

    def char_class(self, start: int) -> Ranges:
        """A `[...]` class as a set, with an explicit stack of the nested classes still open.

        Java reads `&&` with quirks that differ between its versions (`[a&&[b]&c]` matches `a` in Java 17, a later
        `&&` nests inside the right operand); only the plain `[X&&Y]`, both sides non-empty, is translated.
        """
        frames: list[_ClassFrame] = []
        frame = self.new_class_frame(start)
        while True:
            char = self.peek()
            if not char:
                raise self.fail("unclosed character class", start)
            position = self.i
            if char == "]" and (frame.items or frame.left is not None):
                self.i += 1
                result = self.finish_class(frame)
                if not frames:
                    return result
                frame = frames.pop()
                frame.items.append(result)
            elif char == "[":
                self.i += 1
                frame.nested = True
                frames.append(frame)
                frame = self.new_class_frame(position)
            elif self.pattern.startswith("&&", self.i):
                if frame.left is not None or not frame.items:
                    raise self.refuse("a class with && other than [X&&Y] (Java versions read it differently)", start)
                self.i += 2
                frame.nested = True
                frame.left, frame.items = _union(r for item in frame.items for r in item), []
            elif char == "&" and frame.left is not None:
                raise self.refuse("a class with && other than [X&&Y] (Java versions read it differently)", start)
            else:
                self.class_range(frame)

    def new_class_frame(self, start: int) -> _ClassFrame:
        negated = self.pattern.startswith("^", self.i)
        self.i += negated
        return _ClassFrame(start, negated)

    def finish_class(self, frame: _ClassFrame) -> Ranges:
        """The union of the items, intersected with the left side of `&&` if any, complemented after `^`."""
        result = _union(r for item in frame.items for r in item)
        if frame.left is not None:
            if not frame.items:
                raise self.refuse("a class with && other than [X&&Y] (Java versions read it differently)", frame.start)
            result = _intersect(frame.left, result)
        if frame.negated:
            if frame.nested:
                raise self.refuse("a negated class holding a nested class or && (Java 8 and 9+ differ)", frame.start)
            result = _complement(result)
        return result

    def class_range(self, frame: _ClassFrame) -> None:
        """One element of a class: a character, a range `a-z`, or an escape (`a-[` is `a`, then a literal `-`)."""
        start = self.i
        first = self.class_atom()
        if isinstance(first, tuple):
            frame.items.append(first)
            return
        following = self.pattern[self.i + 1 : self.i + 2]
        if self.peek() == "-" and following not in ("]", "["):
            self.i += 1
            last = self.class_atom()
            if not isinstance(last, int) or last < first:
                raise self.fail("illegal character range", start)
            ranges: Ranges = ((first, last),)
        else:
            ranges = ((first, first),)
        frame.items.append(_fold_ascii(ranges) if "i" in self.flags else ranges)

    def class_atom(self) -> int | Ranges:
        """A code point, or a class (from an escape such as `\\d`)."""
        start = self.i
        char = self.take()
        if char != "\\":
            return ord(char)
        if self.i >= len(self.pattern):
            raise self.fail("the pattern ends with a backslash", start)
        if self.pattern[self.i] in "123456789kAGzZRbBE":
            raise self.fail(f"illegal/unsupported escape sequence \\{self.pattern[self.i]} in a class", start)
        return self.escaped_item(start)


def _unquote(pattern: str) -> str:
    """Java's first step (`Pattern.RemoveQEQuoting`): each character between `\\Q` and `\\E` becomes a literal in
    place (`\\Qa.b\\E` is `a\\.b`), so a quoted character can end a class range as any other can."""
    if "\\Q" not in pattern:
        return pattern
    out: list[str] = []
    index, size = 0, len(pattern)
    while index < size:
        if pattern[index] != "\\" or index + 1 == size:
            out.append(pattern[index])
            index += 1
        elif pattern[index + 1] != "Q":
            out.append(pattern[index : index + 2])
            index += 2
        else:
            end = pattern.find("\\E", index + 2)
            for char in pattern[index + 2 : size if end < 0 else end]:
                if char.isascii() and char.isdigit():
                    out.append("\\x3" + char)
                elif char.isascii() and not char.isalpha():
                    out.append("\\" + char)
                else:
                    out.append(char)
            index = size if end < 0 else end + 2
    return "".join(out)


def translate_java_regex(pattern: str, whole: bool) -> str:
    """A Python pattern equal to the Java regex `pattern`: for `String.matches` (`whole`) or for `find` (else).

    Raises `PatternError` for an invalid pattern or one without an exact Python equivalent (see the module).
    """
    if not isinstance(pattern, str):
        raise PatternError(f"a regular expression must be a string, got {pattern!r}")
    body = _Translator(_unquote(pattern), pattern).translate()
    translated = f"^(?:{body})\\Z" if whole else body
    try:
        compile_linear(translated)
    except UnsupportedPatternError as exc:
        raise UnsupportedPatternError(
            pattern,
            exc.what,
            f"cannot translate the Java regular expression {pattern!r} to a linear-time match: it has {exc.what}, "
            f"which can't be matched in time linear in the value",
        ) from None
    except PatternError as exc:
        reason = str(exc).rsplit(": ", 1)[-1]
        raise PatternError(
            f"cannot translate the Java regular expression {pattern!r} to Python's: Python's re rejects it ({reason})"
        ) from None
    return translated
