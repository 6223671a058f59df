"""Query templates: placeholders found outside literals and comments, bound by the driver."""

from __future__ import annotations

from dataclasses import dataclass

from executions.executors.database.values import _DOLLAR_TAG, _NAME, _PYFORMAT, POSTGRESQL


class TemplateError(ValueError):
    """The query template cannot be used (unterminated literal, several statements…)."""


@dataclass(frozen=True)
class CompiledQuery:
    sql: str  # in the driver's placeholder style
    names: tuple[str, ...]  # distinct placeholder names, in order of first use
    first_keyword: str  # upper-cased first word of the statement ("" if none)


def _is_word_char(ch: str) -> bool:
    return bool(ch) and (ch.isalnum() or ch in "_$")


def _quoted_end(text: str, start: int, quote_char: str, backslash_escapes: bool) -> int:
    """Index just past the literal/identifier opened at ``start`` (doubled quotes escape)."""
    j, n = start + 1, len(text)
    while j < n:
        ch = text[j]
        if backslash_escapes and ch == "\\":
            j += 2
            continue
        if ch == quote_char:
            if j + 1 < n and text[j + 1] == quote_char:
                j += 2
                continue
            return j + 1
        j += 1
    raise TemplateError(f"unterminated {quote_char} quoted text starting at character {start + 1}")


def _block_comment_end(text: str, start: int, nested: bool) -> int:
    if not nested:  # SQLite: the first */ ends the comment
        end = text.find("*/", start + 2)
        if end == -1:
            raise TemplateError(f"unterminated /* comment starting at character {start + 1}")
        return end + 2
    depth, j, n = 0, start, len(text)
    while j < n:
        if text.startswith("/*", j):
            depth += 1
            j += 2
        elif text.startswith("*/", j):
            depth -= 1
            j += 2
            if depth == 0:
                return j
        else:
            j += 1
    raise TemplateError(f"unterminated /* comment starting at character {start + 1}")


def compile_query(template: str, dialect: str) -> CompiledQuery:
    """Rewrite ``:name`` / ``%(name)s`` placeholders into the driver's named style.

    PostgreSQL (psycopg) gets ``%(name)s`` and every literal ``%`` doubled;
    SQLite gets ``:name``. Text inside literals and comments is copied as is.
    """
    return _Compiler(template, dialect).compile()


class _Compiler:
    """One pass over a template, a character or a whole token at a time."""

    def __init__(self, template: str, dialect: str) -> None:
        self.template = template
        self.pg = dialect == POSTGRESQL
        self.out: list[str] = []
        self.names: list[str] = []
        self.first_keyword: str | None = None
        self.ended = False  # a ';' was seen: only whitespace and comments may follow
        self.i = 0

    def compile(self) -> CompiledQuery:
        while self.i < len(self.template):
            if not self._layout():
                self._statement_token()
        return CompiledQuery(
            sql="".join(self.out).strip(),
            names=tuple(self.names),
            first_keyword=self.first_keyword or "",
        )

    def _literal(self, text: str) -> str:
        return text.replace("%", "%%") if self.pg else text

    def _placeholder(self, name: str) -> str:
        if name not in self.names:
            self.names.append(name)
        return f"%({name})s" if self.pg else f":{name}"

    def _copy_to(self, end: int) -> None:
        self.out.append(self._literal(self.template[self.i : end]))
        self.i = end

    def _layout(self) -> bool:
        """Whitespace or a comment, copied as is (allowed after the ';'); False for anything else."""
        t, i = self.template, self.i
        if t[i].isspace():
            self._copy_to(i + 1)
        elif t.startswith("--", i):
            end = t.find("\n", i)
            self._copy_to(len(t) if end == -1 else end)
        elif t.startswith("/*", i):
            self._copy_to(_block_comment_end(t, i, nested=self.pg))
        else:
            return False
        return True

    def _statement_token(self) -> None:
        t, i = self.template, self.i
        ch = t[i]
        if self.ended:
            raise TemplateError(
                "query_template must hold a single SQL statement (text found after ';')"
            )
        if ch == ";":
            self.ended = True  # the trailing ';' is dropped (DECLARE … FOR <query> refuses it)
            self.i += 1
            return
        if self.first_keyword is None and ch != "(":
            word = _NAME.match(t, i)
            self.first_keyword = word.group().upper() if word else ""
        prev = t[i - 1] if i else ""
        end = self._quoted_end(ch, prev)
        if end is not None:
            self._copy_to(end)
        elif ch == ":" and self._colon(prev):
            return
        elif ch == "%":
            self._percent()
        else:
            self.out.append(ch)
            self.i += 1

    def _quoted_end(self, ch: str, prev: str) -> int | None:
        """Where the literal, quoted identifier or dollar-quoted string opened here ends."""
        t, i, pg = self.template, self.i, self.pg
        if ch == "'":
            escapes = pg and prev in ("e", "E") and (i < 2 or not _is_word_char(t[i - 2]))
            return _quoted_end(t, i, "'", escapes)
        if ch == '"' or (ch == "`" and not pg):
            return _quoted_end(t, i, ch, False)
        if ch == "[" and not pg:  # SQLite [identifier]
            close = t.find("]", i + 1)
            if close == -1:
                raise TemplateError(f"unterminated [ identifier starting at character {i + 1}")
            return close + 1
        if ch == "$" and pg and not _is_word_char(prev):
            tag = _DOLLAR_TAG.match(t, i)
            if tag:
                close = t.find(tag.group(), tag.end())
                if close == -1:
                    raise TemplateError(
                        f"unterminated dollar-quoted string starting at character {i + 1}"
                    )
                return close + len(tag.group())
        return None

    def _colon(self, prev: str) -> bool:
        """A ``::cast`` or a ``:name`` placeholder (False: a plain ':')."""
        t, i = self.template, self.i
        if t.startswith("::", i):  # PostgreSQL cast
            self.out.append("::")
            self.i += 2
            return True
        word = _NAME.match(t, i + 1)
        if word and not (_is_word_char(prev) or prev == ":"):
            self.out.append(self._placeholder(word.group()))
            self.i = word.end()
            return True
        return False

    def _percent(self) -> None:
        """A ``%(name)s`` placeholder, ``%%`` or a lone ``%`` (both one literal '%')."""
        t, i = self.template, self.i
        match = _PYFORMAT.match(t, i)
        if match:
            self.out.append(self._placeholder(match.group(1)))
            self.i = match.end()
            return
        self.out.append(self._literal("%"))
        self.i += 2 if t.startswith("%%", i) else 1
