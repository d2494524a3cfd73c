"""ARNA's plans: a small JSON grammar of tool steps with if/while/break, and its interpreter.

The model's "action plan" and "reasoning functions" (paper §4.5, Appendix D.2/E) are never
run as Python: no ``exec``, ``eval`` or ``compile`` anywhere. They are JSON data in this
grammar, checked by :func:`validate` (anything outside it is rejected with every problem
listed) and run by :class:`Interpreter`, which counts every statement it executes and
stops at its limits.

Grammar (``Program``)::

    {"functions": {NAME: [STMT, ...], ...},   # reasoning functions (optional)
     "main": [STMT, ...]}                      # the action plan
    STMT := {"step": KIND, "goal": TEXT, "as"?: VAR}    # a high-level step; the model picks
                                                         # the exact tool call when it runs
          | {"tool": TOOL, "args": {...}, "as"?: VAR}   # an exact tool call
          | {"run": NAME, "as"?: VAR}                   # call a reasoning function
          | {"if": COND, "then": [STMT], "else"?: [STMT]}
          | {"while": COND, "body": [STMT], "max_iterations"?: INT}
          | {"break": true}                             # inside a while only
          | {"return": VAR | null}                      # end the function (or the plan)
          | {"answer": TEXT}                            # check termination and answer now
    COND  := {"found": VAR} | {"not": COND} | {"all": [COND]} | {"any": [COND]} | {"always": true}
    KIND  := goto | explore | getinfo | analyze | rotate

The main plan's statements carry line numbers (:meth:`Program.listing`). The interpreter
runs in program order unless its ``select`` hook names another line before a step runs: it
then continues from that line (the model chooses the next step, paper §4.5, Alg. 1 l. 5),
still within the grammar (a ``break`` leaves its loop, a branch resumed inside goes on after
its ``if``) and its statement budget. A ``found`` condition is decided by the ``judge`` hook
(the model, from its memory and the step's findings, Appendix E.2); without one it reads the
``found`` flag of the result last stored in ``VAR`` (a variable never set is not found).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vlnverse.errors import VLNVerseError

STEP_KINDS = ("goto", "explore", "getinfo", "analyze", "rotate")
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")
MAX_TEXT = 400
MAX_STATEMENTS = 120          # statements and conditions in the whole program
MAX_DEPTH = 6                 # nested blocks
MAX_FUNCTIONS = 8
DEFAULT_ITERATIONS = 10
MAX_ITERATIONS = 50

_STMT_KEYS = {
    "step": ({"step", "goal"}, {"as"}),
    "tool": ({"tool"}, {"args", "as"}),
    "run": ({"run"}, {"as"}),
    "if": ({"if", "then"}, {"else"}),
    "while": ({"while", "body"}, {"max_iterations"}),
    "break": ({"break"}, set()),
    "return": ({"return"}, set()),
    "answer": ({"answer"}, set()),
}


class PlanRejected(VLNVerseError):
    """A plan is outside the grammar; ``problems`` lists every reason."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("plan rejected: " + "; ".join(self.problems[:8])
                         + (f" (+{len(self.problems) - 8} more)" if len(self.problems) > 8 else ""))


class StepLimit(VLNVerseError):
    """The interpreter reached its limit of executed statements."""


@dataclass(frozen=True)
class Program:
    """A validated plan."""

    main: tuple[Mapping[str, Any], ...]
    functions: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"functions": {k: list(v) for k, v in self.functions.items()}, "main": list(self.main)}

    @property
    def lines(self) -> tuple[tuple[Any, ...], ...]:
        """The main plan's statement paths in listing order (line n is ``lines[n - 1]``)."""
        return tuple(path for path, _ in _walk(self.main, ()))

    def stored_by(self, var: str) -> str:
        """The statement that stores ``var`` (``as``), as a short line."""
        blocks = [self.main, *self.functions.values()]
        return next((describe(stmt) for block in blocks for _, stmt in _walk(block, ()) if stmt.get("as") == var),
                    "no statement")

    def line_of(self, path: tuple[Any, ...]) -> int:
        return self.lines.index(path) + 1

    def listing(self) -> str:
        """The plan as the model reads it: the main plan by line number, then the functions."""
        lines = ["main (line numbers):"]
        for path, stmt in _walk(self.main, ()):
            depth = sum(1 for key in path if isinstance(key, str))
            branch = "else: " if path[-2:-1] == ("else",) and path[-1] == 0 else ""
            lines.append(f"{'  ' * (depth + 1)}{branch}{self.line_of(path)}. {describe(stmt)}")
        for name, body in self.functions.items():
            lines.append(f"function {name} (run it with run_function):")
            lines += [f"{'  ' * (sum(isinstance(k, str) for k in path) + 1)}- {describe(stmt)}"
                      for path, stmt in _walk(body, ())]
        return "\n".join(lines)


def _walk(block: Iterable[Mapping[str, Any]], prefix: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], Mapping[str, Any]]]:
    """``(path, statement)`` of a block and everything nested in it, in listing order; a path
    is indices and branch names (``(0, "body", 1)``: the second statement of the first one's body)."""
    found = []
    for i, stmt in enumerate(block):
        path = (*prefix, i)
        found.append((path, stmt))
        for key in ("then", "else", "body"):
            if key in stmt:
                found += _walk(stmt[key], (*path, key))
    return found


def describe(stmt: Mapping[str, Any]) -> str:
    """One statement as a short line."""
    if "step" in stmt:
        return f"{stmt['step'].upper()}({stmt['goal']})" + (f" -> {stmt['as']}" if "as" in stmt else "")
    if "tool" in stmt:
        return f"{stmt['tool']}({_args(stmt.get('args', {}))})" + (f" -> {stmt['as']}" if "as" in stmt else "")
    if "run" in stmt:
        return f"RUN {stmt['run']}" + (f" -> {stmt['as']}" if "as" in stmt else "")
    if "if" in stmt:
        return f"IF {_cond(stmt['if'])}:"
    if "while" in stmt:
        return f"WHILE {_cond(stmt['while'])}:"
    if "break" in stmt:
        return "BREAK"
    if "return" in stmt:
        return f"RETURN {stmt['return'] or ''}".rstrip()
    return f"ANSWER({stmt['answer']})"


def _args(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


def _cond(cond: Mapping[str, Any]) -> str:
    if "found" in cond:
        return f"found({cond['found']})"
    if "not" in cond:
        return f"not {_cond(cond['not'])}"
    if "all" in cond:
        return "(" + " and ".join(_cond(c) for c in cond["all"]) + ")"
    if "any" in cond:
        return "(" + " or ".join(_cond(c) for c in cond["any"]) + ")"
    return "true"


class _Checker:
    def __init__(self, tools: Mapping[str, Callable[[Mapping[str, Any]], list[str]]],
                 functions: Iterable[str]) -> None:
        self.tools = tools
        self.functions = set(functions)
        self.problems: list[str] = []
        self.count = 0
        self.calls: dict[str, set[str]] = {}

    def text(self, value: Any, where: str) -> None:
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
            self.problems.append(f"{where}: expected a non-empty text of at most {MAX_TEXT} characters")

    def name(self, value: Any, where: str) -> None:
        if not isinstance(value, str) or not NAME_RE.match(value):
            self.problems.append(f"{where}: {value!r:.60} is not a valid name")

    def block(self, block: Any, where: str, depth: int, in_loop: bool, owner: str) -> None:
        if not isinstance(block, list) or not block:
            self.problems.append(f"{where}: expected a non-empty list of statements")
            return
        if depth > MAX_DEPTH:
            self.problems.append(f"{where}: nested deeper than {MAX_DEPTH}")
            return
        for i, stmt in enumerate(block, 1):
            self.statement(stmt, f"{where}.{i}", depth, in_loop, owner)

    def statement(self, stmt: Any, where: str, depth: int, in_loop: bool, owner: str) -> None:
        self.count += 1
        if not isinstance(stmt, dict):
            self.problems.append(f"{where}: a statement must be a JSON object")
            return
        kind = next((k for k in _STMT_KEYS if k in stmt), None)
        if kind is None:
            self.problems.append(f"{where}: unknown statement with keys {sorted(stmt)[:6]}")
            return
        required, optional = _STMT_KEYS[kind]
        missing, extra = required - set(stmt), set(stmt) - required - optional
        if missing or extra:
            self.problems.append(f"{where}: {kind} statement " + ", ".join(
                [f"lacks {sorted(missing)}"] * bool(missing) + [f"has unknown keys {sorted(extra)}"] * bool(extra)))
            return
        if "as" in stmt:
            self.name(stmt["as"], f"{where}.as")
        if kind == "step":
            if stmt["step"] not in STEP_KINDS:
                self.problems.append(f"{where}: step kind {stmt['step']!r:.40} is not one of {STEP_KINDS}")
            self.text(stmt["goal"], f"{where}.goal")
        elif kind == "tool":
            args = stmt.get("args", {})
            if not isinstance(stmt["tool"], str) or stmt["tool"] not in self.tools:
                self.problems.append(f"{where}: unknown tool {stmt['tool']!r:.60}")
            elif not isinstance(args, dict):
                self.problems.append(f"{where}: args must be a JSON object")
            else:
                self.problems += [f"{where}: {p}" for p in self.tools[stmt["tool"]](args)]
        elif kind == "run":
            if not isinstance(stmt["run"], str) or stmt["run"] not in self.functions:
                self.problems.append(f"{where}: unknown function {stmt['run']!r:.60}")
            else:
                self.calls.setdefault(owner, set()).add(stmt["run"])
        elif kind == "if":
            self.condition(stmt["if"], f"{where}.if", 0)
            self.block(stmt["then"], f"{where}.then", depth + 1, in_loop, owner)
            if "else" in stmt:
                self.block(stmt["else"], f"{where}.else", depth + 1, in_loop, owner)
        elif kind == "while":
            self.condition(stmt["while"], f"{where}.while", 0)
            limit = stmt.get("max_iterations", DEFAULT_ITERATIONS)
            if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_ITERATIONS:
                self.problems.append(f"{where}: max_iterations must be an integer in [1, {MAX_ITERATIONS}]")
            self.block(stmt["body"], f"{where}.body", depth + 1, True, owner)
        elif kind == "break":
            if stmt["break"] is not True or not in_loop:
                self.problems.append(f"{where}: break must be true and inside a while")
        elif kind == "return":
            if stmt["return"] is not None:
                self.name(stmt["return"], f"{where}.return")
        else:
            self.text(stmt["answer"], f"{where}.answer")

    def condition(self, cond: Any, where: str, depth: int) -> None:
        self.count += 1   # conditions count toward the plan's size: each is evaluated at every test
        if depth > MAX_DEPTH or not isinstance(cond, dict) or len(cond) != 1:
            self.problems.append(f"{where}: a condition is one JSON object with one key")
            return
        (key, value), = cond.items()
        if key == "found":
            self.name(value, where)
        elif key == "not":
            self.condition(value, f"{where}.not", depth + 1)
        elif key in ("all", "any"):
            if not isinstance(value, list) or not value:
                self.problems.append(f"{where}.{key}: expected a non-empty list of conditions")
                return
            for i, sub in enumerate(value):
                self.condition(sub, f"{where}.{key}[{i}]", depth + 1)
        elif key == "always":
            if value is not True:
                self.problems.append(f"{where}: always must be true")
        else:
            self.problems.append(f"{where}: unknown condition {key!r:.40}")

    def recursion(self) -> None:
        def reaches(start: str, seen: tuple[str, ...]) -> None:
            for callee in self.calls.get(start, ()):
                if callee in seen:
                    self.problems.append(f"function {seen[0]} calls itself (through {' -> '.join(seen[1:] + (callee,))})")
                    return
                reaches(callee, seen + (callee,))

        for name in self.functions:
            reaches(name, (name,))


def validate(data: Any, tools: Mapping[str, Callable[[Mapping[str, Any]], list[str]]]) -> Program:
    """The :class:`Program` of ``data`` (parsed JSON).

    Args:
        data: The plan as JSON data.
        tools: Tool name → a function listing what is wrong with given arguments.

    Raises:
        PlanRejected: ``data`` is outside the grammar (all problems listed).
    """
    if not isinstance(data, dict):
        raise PlanRejected(["a plan must be a JSON object with 'main' (and optional 'functions')"])
    extra = set(data) - {"main", "functions"}
    functions = data.get("functions") or {}
    problems = [f"unknown top-level key(s) {sorted(extra)}"] if extra else []
    if not isinstance(functions, dict) or len(functions) > MAX_FUNCTIONS:
        raise PlanRejected(problems + [f"functions must be an object of at most {MAX_FUNCTIONS} entries"])
    checker = _Checker(tools, functions)
    checker.problems += problems
    for name, body in functions.items():
        checker.name(name, f"function {name!r:.40}")
        checker.block(body, f"function {name}", 1, False, name)
    checker.block(data.get("main"), "main", 1, False, "main")
    checker.recursion()
    if checker.count > MAX_STATEMENTS:
        checker.problems.append(f"{checker.count} statements and conditions; at most {MAX_STATEMENTS}")
    if checker.problems:
        raise PlanRejected(checker.problems)
    return Program(tuple(data["main"]), {k: tuple(v) for k, v in functions.items()})


class _Break(Exception):
    pass


class _Jump(Exception):
    def __init__(self, path: tuple[Any, ...]) -> None:
        self.path = path


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


EXECUTABLE = ("step", "tool", "run", "answer")


class Interpreter:
    """Runs a :class:`Program`; a generator so that navigation can suspend it.

    Args:
        program: The validated plan.
        execute: ``execute(stmt) -> generator`` runs one step/tool statement (it may yield
            to the caller, e.g. while the robot moves) and returns its result, an object
            with a ``found`` flag; or, for ``answer``, whatever the executor decides.
        max_statements: Statements executed in all (loop iterations included) before
            :class:`StepLimit`.
        select: ``select(line, stmt) -> generator`` before every step, tool, run or answer
            statement (``line``: its main-plan line, None inside a function); returns the
            main-plan line to run instead, or None to run this one.
        judge: ``judge(var) -> bool`` decides a ``found(var)`` condition.
    """

    def __init__(self, program: Program, execute: Callable[[Mapping[str, Any]], Generator[Any, Any, Any]],
                 max_statements: int, *, select: Callable[[int | None, Mapping[str, Any]], Generator[Any, Any, Any]]
                 | None = None, judge: Callable[[str], bool] | None = None) -> None:
        self.program = program
        self.execute = execute
        self.max_statements = max_statements
        self.select = select
        self.judge = judge
        self.executed = 0
        self.variables: dict[str, Any] = {}
        self.trace: list[str] = []
        self._lines = program.lines

    def run(self, start: int | None = None) -> Generator[Any, Any, Any]:
        """Run ``main`` (from line ``start`` when given); returns the value of a top-level
        ``return`` (or None)."""
        path = self._lines[start - 1] if start else ()
        while True:
            try:
                yield from self._block(self.program.main, "main", (), path)
            except _Jump as jump:
                path = jump.path
                continue
            except _Return as done:
                return self.variables.get(done.value) if done.value else None
            return None

    def call(self, name: str) -> Generator[Any, Any, Any]:
        """Run reasoning function ``name`` now (the executor's "algorithm" step), on the same
        statement count and variables; returns its ``return`` value."""
        try:
            yield from self._block(self.program.functions[name], name, None)
        except _Return as done:
            return self.variables.get(done.value) if done.value else None
        return None

    def _tick(self, where: str, stmt: Mapping[str, Any]) -> None:
        if self.executed >= self.max_statements:
            raise StepLimit(f"the plan executed {self.max_statements} statements (its limit)")
        self.executed += 1
        self.trace.append(f"{where}: {describe(stmt)}")

    def _block(self, block: tuple[Mapping[str, Any], ...] | list[Mapping[str, Any]], where: str,
               prefix: tuple[Any, ...] | None, start: tuple[Any, ...] = ()) -> Generator[Any, Any, None]:
        """Run ``block`` (at ``prefix`` in main; None inside a function) from path ``start``."""
        for i in range(start[0] if start else 0, len(block)):
            stmt, here = block[i], f"{where}.{i + 1}"
            path = None if prefix is None else (*prefix, i)
            inner = start[1:] if start and i == start[0] else ()
            if inner:   # a chosen line lies inside this statement: resume there
                key, rest = inner[0], inner[1:]
                if "while" in stmt:
                    try:
                        yield from self._block(stmt["body"], here, (*path, "body"), rest)
                    except _Break:
                        continue
                    yield from self._loop(stmt, here, path, stmt.get("max_iterations", DEFAULT_ITERATIONS) - 1)
                else:
                    yield from self._block(stmt[key], here, (*path, key), rest)
                continue
            self._tick(here, stmt)
            if "if" in stmt:
                key = "then" if self._test(stmt["if"]) else "else"
                yield from self._block(stmt.get(key, ()), here, None if path is None else (*path, key))
            elif "while" in stmt:
                yield from self._loop(stmt, here, path, stmt.get("max_iterations", DEFAULT_ITERATIONS))
            elif "break" in stmt:
                raise _Break()
            elif "return" in stmt:
                raise _Return(stmt["return"])
            else:
                if self.select is not None:
                    chosen = yield from self.select(None if path is None else self.program.line_of(path), stmt)
                    if chosen is not None and path is not None and self._lines[chosen - 1] != path:
                        raise _Jump(self._lines[chosen - 1])
                if "run" in stmt:
                    value = yield from self.call(stmt["run"])
                else:
                    value = yield from self.execute(stmt)
                if "as" in stmt:
                    self.variables[stmt["as"]] = value

    def _loop(self, stmt: Mapping[str, Any], here: str, path: tuple[Any, ...] | None,
              iterations: int) -> Generator[Any, Any, None]:
        for _ in range(max(0, iterations)):
            if not self._test(stmt["while"]):
                break
            try:
                yield from self._block(stmt["body"], here, None if path is None else (*path, "body"))
            except _Break:
                break

    def _test(self, cond: Mapping[str, Any]) -> bool:
        (key, value), = cond.items()
        if key == "found":
            if self.judge is not None:
                return self.judge(value)
            return bool(getattr(self.variables.get(value), "found", False))
        if key == "not":
            return not self._test(value)
        if key == "all":
            return all(self._test(c) for c in value)
        if key == "any":
            return any(self._test(c) for c in value)
        return True
