"""Reading YAML or JSON into data plus a map from JSON pointers to line numbers.

Errors carry a line (from yaml's marks) and a JSON-pointer path so a person
can find the spot in the file.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from toolhub import text as text_rules
from toolhub.strictjson import nested_deeper_than

# Aliases can make a small file expand enormously ("billion laughs"): refuse
# documents with more nodes than this once aliases are expanded.
MAX_NODES = 200_000
# A tool catalog is a few levels deep; an alias that contains itself is infinitely
# deep. Both this and the length of all paths together bound the work of indexing.
MAX_DEPTH = 100
MAX_PATH_CHARS = 20_000_000


@dataclass
class Problem:
    """One error or warning about the input: where (path, line) and what."""

    message: str
    path: str = ""
    line: int | None = None
    code: str = "invalid"

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path or "/",
            "line": self.line,
            "message": self.message,
            "code": self.code,
        }

    def __str__(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.path:
            where.append(self.path)
        return f"{', '.join(where)}: {self.message}" if where else self.message


class SourceError(Exception):
    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


def pointer(*parts: Any) -> str:
    """A JSON pointer (``/tools/3/name``) from path parts."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass
class Document:
    """One YAML document: its data and the line of each path (1-based)."""

    data: Any
    lines: dict[str, int] = field(default_factory=dict)
    base: str = ""  # prefix of every path (``/2`` for the third document of a stream)

    def line(self, path: str) -> int | None:
        """The line of ``path`` or of its nearest ancestor that has one."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            path = path.rsplit("/", 1)[0]

    def problem(self, path: str, message: str, code: str = "invalid") -> Problem:
        return Problem(message=message, path=self.base + path, line=self.line(path), code=code)


def _index(loader: yaml.SafeLoader, root: yaml.Node) -> tuple[dict[str, int], list[Problem]]:
    lines: dict[str, int] = {"": root.start_mark.line + 1}
    problems: list[Problem] = []
    nodes, path_chars = MAX_NODES, MAX_PATH_CHARS
    # Each entry: a node, its path, and the ids of the collections that contain it.
    stack: list[tuple[yaml.Node, str, tuple[int, ...]]] = [(root, "", ())]

    def refuse(message: str, path: str) -> SourceError:
        return SourceError([Problem(message, path or "/", lines.get(path))])

    while stack:
        node, path, outer = stack.pop()
        nodes -= 1
        path_chars -= len(path)
        if nodes < 0 or path_chars < 0:
            raise refuse("the document is too large once its aliases are expanded", path)
        if not isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            continue
        if id(node) in outer:
            raise refuse(
                f"an alias refers to a node that contains it (line {node.start_mark.line + 1}): "
                "recursive documents are not supported",
                path,
            )
        if len(outer) >= MAX_DEPTH:
            raise refuse(f"the document is nested more than {MAX_DEPTH} levels deep", path)
        inner = (*outer, id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = (
                    loader.construct_object(key_node, deep=True)
                    if isinstance(key_node, yaml.ScalarNode)
                    else key_node.start_mark.line
                )
                line = key_node.start_mark.line + 1
                child = f"{path}{pointer(key)}"
                if isinstance(key, str | int | float | bool) and key in seen:
                    problems.append(
                        Problem(
                            f"duplicate key {key!r} (first on line {seen[key]})",
                            child,
                            line,
                            "duplicate_key",
                        )
                    )
                else:
                    seen[key] = line
                lines.setdefault(child, line)
                stack.append((value_node, child, inner))
        else:
            for index, item in enumerate(node.value):
                child = f"{path}/{index}"
                lines.setdefault(child, item.start_mark.line + 1)
                stack.append((item, child, inner))
    return lines, problems


def _plain(value: Any, path: str, problems: list[Problem], lines: dict[str, int]) -> Any:
    """JSON values only: dates become ISO strings; other YAML-only types are errors."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            child = f"{path}{pointer(key)}"
            if not isinstance(key, str):
                problems.append(
                    Problem(f"keys must be strings, got {key!r}", child, lines.get(child))
                )
                continue
            if not text_rules.is_storable_text(key):
                shown = f"{path}{pointer(text_rules.shown(key))}"
                problems.append(Problem(text_rules.MESSAGE, shown, lines.get(child), "unencodable"))
                continue
            out[key] = _plain(item, child, problems, lines)
        return out
    if isinstance(value, list):
        return [_plain(v, f"{path}/{i}", problems, lines) for i, v in enumerate(value)]
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, float) and value != value:  # NaN
        problems.append(Problem("NaN is not a JSON value", path, lines.get(path)))
        return None
    if isinstance(value, str) and not text_rules.is_storable_text(value):
        problems.append(Problem(text_rules.MESSAGE, path, lines.get(path), "unencodable"))
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    problems.append(
        Problem(f"{type(value).__name__} values are not supported", path, lines.get(path))
    )
    return None


def _yaml_problem(exc: yaml.YAMLError) -> Problem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and context_mark is not None and mark is not None and context_mark.line != mark.line:
        context = f"{context} (started on line {context_mark.line + 1})"
    parts = [context, getattr(exc, "problem", None)]
    message = " ".join(p for p in parts if p) or str(exc).split("\n", 1)[0]
    if mark is not None:
        return Problem(
            f"YAML syntax error: {message} (column {mark.column + 1})",
            line=mark.line + 1,
            code="syntax",
        )
    return Problem(f"YAML syntax error: {message}", code="syntax")


def load_documents(text: str) -> list[Document]:
    """Every non-empty document in ``text`` (YAML, or JSON); raises ``SourceError``."""
    if not isinstance(text, str) or not text.strip():
        raise SourceError([Problem("the file is empty", code="empty")])
    try:
        # The reader refuses characters YAML does not allow (control characters) here.
        loader = yaml.SafeLoader(text)
    except yaml.YAMLError as exc:
        raise SourceError([_yaml_problem(exc)]) from None
    documents: list[Document] = []
    try:
        index = 0
        while loader.check_node():
            node = loader.get_node()
            lines, problems = _index(loader, node)
            data = loader.construct_document(node)
            data = _plain(data, "", problems, lines)
            if problems:
                raise SourceError(problems)
            documents.append(Document(data=data, lines=lines))
            index += 1
    except yaml.YAMLError as exc:
        if text.lstrip()[:1] in "{[":
            return [_load_json(text)]
        raise SourceError([_yaml_problem(exc)]) from None
    except RecursionError:  # the YAML composer recurses once per level of nesting
        raise _too_deep() from None
    finally:
        loader.dispose()
    documents = [d for d in documents if d.data is not None]
    if not documents:
        raise SourceError([Problem("the file holds no data", code="empty")])
    if len(documents) > 1:
        for index, doc in enumerate(documents):
            doc.base = f"/{index}"
    return documents


def _too_deep() -> SourceError:
    return SourceError(
        [Problem(f"the document is nested more than {MAX_DEPTH} levels deep", code="too_deep")]
    )


def _load_json(text: str) -> Document:
    try:
        data = json.loads(text)
    except RecursionError:
        raise _too_deep() from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        message = getattr(exc, "msg", str(exc))
        column = getattr(exc, "colno", None)
        suffix = f" (column {column})" if column else ""
        raise SourceError(
            [Problem(f"JSON syntax error: {message}{suffix}", line=line, code="syntax")]
        ) from None
    if nested_deeper_than(data, MAX_DEPTH):
        raise _too_deep()
    problems: list[Problem] = []
    data = _plain(data, "", problems, {})
    if problems:
        raise SourceError(problems)
    return Document(data=data)
