"""`dsl.If`/`dsl.Elif`/`dsl.Else`: the CEL condition a task's `triggerPolicy.condition` holds, read and evaluated.

The KFP compiler writes one small subset of CEL (`kfp.compiler.pipeline_spec_builder`): comparisons of a task
input with a literal or another input, joined by `&&`, each possibly negated as `!( … )` (an `Elif` or `Else`
is the negation of the branches before it):

    inputs.parameter_values['pipelinechannel--item-subvar-target'] == 'cpu'
    !(inputs.parameter_values['a'] == 'cpu') && int(inputs.parameter_values['n']) >= 2

Operands: `inputs.parameter_values['<input>']`, `int(…)`, `double(…)`, a `'string'`, a number, `true`/`false`;
operators `==`, `!=`, `<`, `<=`, `>`, `>=`; `&&`, `||`, `!`, parentheses. That subset is evaluated exactly as CEL
does: operands of different kinds do not compare (a string with a number: CEL has no such overload, an error, not
false; int and double do), `int()` of a
string parses it. Any other expression is refused when the spec is read (`parse_condition`), naming the task and
the expression, so no condition is ever guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Union

Value = Union[str, int, float, bool]

_TOKEN = re.compile(r"""\s*(?:
    (?P<parameter>inputs\.parameter_values\['(?P<name>[^']*)'\])
  | (?P<string>'[^'\\]*')
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
  | (?P<word>true|false|int|double)
  | (?P<symbol>==|!=|<=|>=|&&|\|\||[<>!()])
)""", re.VERBOSE)
_COMPARISONS: dict[str, Callable[[Value, Value], bool]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,  # type: ignore[operator]
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,  # type: ignore[operator]
}


class UnsupportedCondition(ValueError):
    """An expression outside the subset KFP compiles (or one that cannot be evaluated): names it."""


class ConditionError(ValueError):
    """A condition that CEL would refuse on these inputs (a missing input, operands of different types)."""


@dataclass(frozen=True)
class Condition:
    """A parsed `triggerPolicy.condition`; `holds(parameter_values)` evaluates it on a task's input values."""

    expression: str
    tree: tuple

    @property
    def inputs(self) -> set[str]:
        """The input parameters it reads."""
        return set(_names(self.tree))

    def holds(self, parameter_values: dict[str, object]) -> bool:
        result = _evaluate(self.tree, parameter_values, self.expression)
        if not isinstance(result, bool):
            raise ConditionError(f"condition {self.expression!r} is not a boolean expression")
        return result


def parse_condition(expression: str) -> Condition:
    tokens = _tokens(expression)
    parser = _Parser(tokens, expression)
    tree = parser.disjunction()
    if parser.position != len(tokens):
        raise UnsupportedCondition(f"condition {expression!r}: unexpected {tokens[parser.position][1]!r}")
    return Condition(expression, tree)


def _tokens(expression: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(expression.rstrip()):
        match = _TOKEN.match(expression, position)
        if match is None or match.end() == position:
            raise UnsupportedCondition(f"condition {expression!r}: cannot read {expression[position:].strip()!r} "
                                       "(not the CEL subset KFP compiles)")
        kind = match.lastgroup if match.lastgroup != "name" else "parameter"
        text = match.group("name") if kind == "parameter" else match.group(kind or "")
        tokens.append((kind or "", text))
        position = match.end()
    return tokens


@dataclass
class _Parser:
    """Recursive descent over: disjunction := conjunction ('||' conjunction)*; conjunction := unary ('&&' unary)*;
    unary := '!' unary | '(' disjunction ')' | comparison; comparison := operand OP operand."""

    tokens: list[tuple[str, str]]
    expression: str
    position: int = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.position] if self.position < len(self.tokens) else ("end", "")

    def take(self, text: str) -> None:
        if self.peek()[1] != text:
            found = self.peek()[1] or "the end"
            raise UnsupportedCondition(f"condition {self.expression!r}: expected {text!r}, found {found!r}")
        self.position += 1

    def disjunction(self) -> tuple:
        tree = self.conjunction()
        while self.peek() == ("symbol", "||"):
            self.position += 1
            tree = ("or", tree, self.conjunction())
        return tree

    def conjunction(self) -> tuple:
        tree = self.unary()
        while self.peek() == ("symbol", "&&"):
            self.position += 1
            tree = ("and", tree, self.unary())
        return tree

    def unary(self) -> tuple:
        if self.peek() == ("symbol", "!"):
            self.position += 1
            return ("not", self.unary())
        if self.peek() == ("symbol", "("):
            self.position += 1
            tree = self.disjunction()
            self.take(")")
            return tree
        left = self.operand()
        kind, operator = self.peek()
        if kind != "symbol" or operator not in _COMPARISONS:
            raise UnsupportedCondition(f"condition {self.expression!r}: expected a comparison after an operand, "
                                       f"found {operator or 'the end'!r}")
        self.position += 1
        return ("compare", operator, left, self.operand())

    def operand(self) -> tuple:
        kind, text = self.peek()
        self.position += 1
        if kind == "parameter":
            return ("input", text)
        if kind == "string":
            return ("literal", text[1:-1])
        if kind == "number":
            return ("literal", float(text) if any(c in text for c in ".eE") else int(text))
        if kind == "word" and text in ("true", "false"):
            return ("literal", text == "true")
        if kind == "word":  # int( … ) or double( … )
            self.take("(")
            inner = self.operand()
            self.take(")")
            return ("convert", text, inner)
        raise UnsupportedCondition(f"condition {self.expression!r}: expected an operand, found {text or 'the end'!r}")


def _names(tree: tuple):
    if tree[0] == "input":
        yield tree[1]
    for part in tree[1:]:
        if isinstance(part, tuple):
            yield from _names(part)


def _evaluate(tree: tuple, values: dict[str, object], expression: str):
    kind = tree[0]
    if kind == "or":
        return _truth(tree[1], values, expression) or _truth(tree[2], values, expression)
    if kind == "and":
        return _truth(tree[1], values, expression) and _truth(tree[2], values, expression)
    if kind == "not":
        return not _truth(tree[1], values, expression)
    if kind == "compare":
        left, right = _evaluate(tree[2], values, expression), _evaluate(tree[3], values, expression)
        if _cel_type(left) != _cel_type(right):
            raise ConditionError(f"condition {expression!r}: cannot compare {left!r} with {right!r} (CEL compares "
                                 "only operands of one type)")
        return _COMPARISONS[tree[1]](left, right)
    if kind == "literal":
        return tree[1]
    if kind == "input":
        if tree[1] not in values:
            raise ConditionError(f"condition {expression!r}: the task has no input parameter {tree[1]!r}")
        value = values[tree[1]]
        if not isinstance(value, (str, int, float, bool)):
            raise ConditionError(f"condition {expression!r}: input {tree[1]!r} is {value!r}, not a primitive value")
        return value
    assert kind == "convert"
    return _convert(tree[1], _evaluate(tree[2], values, expression), expression)


def _truth(tree: tuple, values: dict[str, object], expression: str) -> bool:
    result = _evaluate(tree, values, expression)
    if not isinstance(result, bool):
        raise ConditionError(f"condition {expression!r}: {result!r} is not a boolean")
    return result


def _convert(function: str, value: Value, expression: str) -> Value:
    """CEL's `int()` (of a string: parsed; of a double: truncated toward zero) and `double()`."""
    try:
        if isinstance(value, bool):
            raise ValueError("a boolean")
        if function == "int":
            return int(value) if not isinstance(value, str) else int(value.strip())
        return float(value)
    except ValueError as error:
        raise ConditionError(f"condition {expression!r}: {function}({value!r}) fails ({error})") from None


def _cel_type(value: Value) -> str:
    """The type CEL compares by: int and double are one numeric kind (CEL's heterogeneous numeric comparison:
    `2.0 == 2`), a string never equals a number, a bool only a bool."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "string"
