"""BFCL's AST check: does a model's decoded calls match a ground-truth answer?

The rules follow the Berkeley Function Calling Leaderboard's checker so that scores
are comparable with the leaderboard's, with one deliberate difference: parallel calls
are paired with an optimal one-to-one matching instead of BFCL's first fit, which
rejects some correct answers when the expected calls' options overlap.

Shapes, as in BFCL's data:

- ``functions``: function descriptions, ``{"name", "description", "parameters":
  {"type": "dict", "properties": {...}, "required": [...]}}``.
- ``calls``: the model's decoded output, ``[{function_name: {param: value}}, ...]``.
  Java and JavaScript values are source text (``"42L"``, ``"[1, 2]"``).
- ``possible_answer``: ``[{function_name: {param: [option, ...]}}, ...]``. An option
  ``""`` means the parameter may be left out.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._matching import maximum_matching
from ._java_js import (
    JAVA_ITEM_TYPED,
    JAVA_TYPES,
    JS_ITEM_TYPED,
    JS_TYPES,
    java_value,
    js_value,
)

FunctionDescription = Mapping[str, Any]
Call = Mapping[str, Any]
ExpectedCall = Mapping[str, Mapping[str, Sequence[Any]]]


@dataclass(frozen=True)
class AstVerdict:
    """Outcome of one AST check.

    ``error_type`` uses BFCL's names (``"simple_function_checker:missing_required"``,
    ``"type_error:simple"``, ``"value_error:string"``,
    ``"parallel_function_checker_no_order:cannot_find_match"``, ...); it is ``None``
    when the check passed.
    """

    passed: bool
    error_type: str | None = None
    errors: list[str] = field(default_factory=list)


_PASSED = AstVerdict(passed=True)


def _fail(error_type: str, *errors: str) -> AstVerdict:
    return AstVerdict(passed=False, error_type=error_type, errors=list(errors))


class _Language(enum.Enum):
    PYTHON = "python"
    JAVA = "java"
    JAVASCRIPT = "javascript"


_PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    # Tuples arrive as lists once the ground truth has been through JSON.
    "tuple": list,
    "dict": dict,
    "any": str,
}

_TYPES: dict[_Language, dict[str, type]] = {
    _Language.PYTHON: _PYTHON_TYPES,
    _Language.JAVA: JAVA_TYPES,
    _Language.JAVASCRIPT: JS_TYPES,
}

# Container types whose declared item type is checked as well.
_ITEM_TYPED: dict[_Language, frozenset[str]] = {
    _Language.PYTHON: frozenset({"array", "tuple"}),
    _Language.JAVA: JAVA_ITEM_TYPED,
    _Language.JAVASCRIPT: JS_ITEM_TYPED,
}

_IGNORED_IN_STRINGS = re.compile(r"[ ,./\-_*^]")


def check_ast(
    functions: Sequence[FunctionDescription],
    calls: Sequence[Call],
    possible_answer: Sequence[ExpectedCall],
    category: str,
    *,
    dots_as_underscores: bool = False,
) -> AstVerdict:
    """Check a model's decoded calls against one BFCL ground-truth entry.

    ``category`` is a BFCL test category such as ``"simple_python"``,
    ``"simple_java"``, ``"multiple"``, ``"parallel"`` or ``"live_parallel_multiple"``:
    it selects the language (``java``, ``javascript``, else Python) and whether calls
    are matched as a set (``parallel``) or one for one. Set ``dots_as_underscores``
    when the model was shown function names with ``.`` replaced by ``_`` (APIs that
    forbid dots in tool names); the calls are then expected under that spelling.

    Raises ``ValueError`` when a ground-truth call names a function that is not
    described, or a parameter is declared with a type BFCL does not define.
    """
    if not _is_decoded_call_list(calls):
        return _fail(
            "ast_decoder:decoder_wrong_output_format",
            f"Expected a list of {{function_name: {{parameter: value}}}} dicts, got {calls!r}.",
        )
    checker = _CallChecker(functions, _language_of(category), dots_as_underscores)
    if "parallel" in category:
        return _check_unordered(checker, calls, possible_answer)
    if "multiple" in category:
        return _check_in_order(checker, calls, possible_answer, "multiple_function_checker")
    return _check_in_order(checker, calls, possible_answer, "simple_function_checker")


def _language_of(category: str) -> _Language:
    if "javascript" in category:
        return _Language.JAVASCRIPT
    if "java" in category:
        return _Language.JAVA
    return _Language.PYTHON


def _is_decoded_call_list(calls: object) -> bool:
    if not isinstance(calls, list | tuple):
        return False
    return all(
        isinstance(call, Mapping)
        and len(call) == 1
        and isinstance(next(iter(call.values())), Mapping)
        for call in calls
    )


def _check_in_order(
    checker: _CallChecker,
    calls: Sequence[Call],
    possible_answer: Sequence[ExpectedCall],
    checker_name: str,
) -> AstVerdict:
    if len(calls) != len(possible_answer):
        return _fail(
            f"{checker_name}:wrong_count",
            f"Expected {len(possible_answer)} function call(s), got {len(calls)}.",
        )
    for call, expected in zip(calls, possible_answer, strict=True):
        verdict = checker.check(call, expected)
        if not verdict.passed:
            return verdict
    return _PASSED


def _check_unordered(
    checker: _CallChecker, calls: Sequence[Call], possible_answer: Sequence[ExpectedCall]
) -> AstVerdict:
    if len(calls) != len(possible_answer):
        return _fail(
            "parallel_function_checker_no_order:wrong_count",
            f"Expected {len(possible_answer)} function call(s), got {len(calls)}.",
        )
    verdicts = [[checker.check(call, expected) for call in calls] for expected in possible_answer]
    matching = maximum_matching([[verdict.passed for verdict in row] for row in verdicts])
    if len(matching) == len(possible_answer):
        return _PASSED
    errors = []
    for index, row in enumerate(verdicts):
        if index in matching:
            continue
        reasons = "; ".join(
            f"call {column}: {' '.join(verdict.errors)}" for column, verdict in enumerate(row)
        )
        errors.append(
            f"No model call can be paired with expected call {index} "
            f"({_name_of(possible_answer[index])!r}) in a one-to-one matching. {reasons}"
        )
    return _fail("parallel_function_checker_no_order:cannot_find_match", *errors)


def _name_of(expected: ExpectedCall) -> str:
    return next(iter(expected))


class _CallChecker:
    """Checks one model call against one expected call."""

    def __init__(
        self,
        functions: Sequence[FunctionDescription],
        language: _Language,
        dots_as_underscores: bool,
    ) -> None:
        self._functions = {function["name"]: function for function in functions}
        self._language = language
        self._dots_as_underscores = dots_as_underscores

    def check(self, call: Call, expected: ExpectedCall) -> AstVerdict:
        name = _name_of(expected)
        description = self._functions.get(name)
        if description is None:
            raise ValueError(f"The ground truth calls {name!r}, which is not among the functions.")
        shown_name = name.replace(".", "_") if self._dots_as_underscores else name
        if shown_name not in call:
            return _fail(
                "simple_function_checker:wrong_func_name",
                f"Expected a call to {shown_name!r}, got {list(call)!r}.",
            )
        arguments: Mapping[str, Any] = call[shown_name]
        options_by_param = expected[name]
        schema = description["parameters"]
        properties: Mapping[str, Any] = schema.get("properties", {})

        for param in schema.get("required", []):
            if param not in arguments:
                return _fail(
                    "simple_function_checker:missing_required",
                    f"Missing required parameter {param!r}.",
                )
        for param, value in arguments.items():
            if param not in properties or param not in options_by_param:
                return _fail(
                    "simple_function_checker:unexpected_param", f"Unexpected parameter {param!r}."
                )
            verdict = self._check_argument(param, value, properties[param], options_by_param[param])
            if not verdict.passed:
                return verdict
        for param, options in options_by_param.items():
            if param not in arguments and "" not in options:
                return _fail(
                    "simple_function_checker:missing_optional",
                    f"Parameter {param!r} was left out, but the answer requires it.",
                )
        return _PASSED

    def _check_argument(
        self, param: str, value: object, spec: Mapping[str, Any], options: Sequence[Any]
    ) -> AstVerdict:
        type_name: str = spec.get("type", "")
        expected_type = self._python_type(type_name)
        item_type_name: str | None = None
        item_type: type | None = None
        if type_name in _ITEM_TYPED[self._language] and "items" in spec:
            item_type_name = spec["items"].get("type", "")
            item_type = self._python_type(item_type_name or "")

        if self._language is not _Language.PYTHON:
            if not isinstance(value, str):
                return _fail(
                    "type_error:java" if self._language is _Language.JAVA else "type_error:js",
                    f"Parameter {param!r} should be {self._language.value} source text "
                    f"(a string), got {type(value).__name__}: {value!r}.",
                )
            if self._language is _Language.JAVA:
                value = java_value(value, type_name, item_type_name)
            else:
                value = js_value(value, type_name, item_type_name)
        elif type(value) is tuple and type_name == "tuple":
            value = list(value)
        elif type(value) is int and type_name == "float":
            value = float(value)

        # The ground truth sometimes holds a variable name (a string) where the
        # description declares another type; a value of the answer's own type is then
        # compared as written, without the type-specific matching below.
        answer_type = _answer_type(options)
        if type(value) is expected_type:
            is_variable = answer_type is not None and answer_type is not expected_type
            if (
                item_type is not None
                and isinstance(value, list)
                and not _items_match_types(value, options, item_type)
            ):
                return _fail(
                    "type_error:nested",
                    f"Items of parameter {param!r} should be {item_type.__name__}: {value!r}.",
                )
        elif answer_type is not None and type(value) is answer_type:
            is_variable = True
        else:
            return _fail(
                "type_error:simple",
                f"Parameter {param!r} should be {type_name}, got {type(value).__name__}: "
                f"{value!r}.",
            )

        if is_variable:
            return _match_exactly(param, value, options)
        if isinstance(value, dict):
            return _match_dict(param, value, options)
        if isinstance(value, list) and item_type is dict:
            return _match_dict_list(param, value, options)
        if isinstance(value, str):
            return _match_string(param, value, options)
        if isinstance(value, list):
            return _match_list(param, value, options)
        return _match_exactly(param, value, options)

    def _python_type(self, type_name: str) -> type:
        try:
            return _TYPES[self._language][type_name]
        except KeyError:
            raise ValueError(
                f"BFCL defines no {self._language.value} parameter type {type_name!r}."
            ) from None


def _answer_type(options: Sequence[Any]) -> type | None:
    """The type of the first option that is not the "may be left out" marker."""
    for option in options:
        if option != "":
            return type(option)
    return None


def _items_match_types(value: list[Any], options: Sequence[Any], item_type: type) -> bool:
    for option in options:
        if not isinstance(option, list):
            # Only list-shaped options constrain the items; "" or a variable name
            # among the options waives the item check, as in BFCL.
            return True
        option_item_type = _answer_type(option)
        if all(
            type(item) is item_type
            or (option_item_type is not None and type(item) is option_item_type)
            for item in value
        ):
            return True
    return False


def normalize_string(text: str) -> str:
    """BFCL's lenient string form: lower case, without spaces and ``,./-_*^``.

    Single quotes become double quotes, so ``"it's"`` and ``'it"s'`` compare equal.
    """
    return _IGNORED_IN_STRINGS.sub("", text).lower().replace("'", '"')


def _normalized(value: object) -> object:
    return normalize_string(value) if isinstance(value, str) else value


def _match_exactly(param: str, value: object, options: Sequence[Any]) -> AstVerdict:
    if value in options:
        return _PASSED
    return _fail(
        "value_error:others",
        f"Invalid value for parameter {param!r}: {value!r}. Expected one of {list(options)!r}.",
    )


def _match_string(param: str, value: str, options: Sequence[Any]) -> AstVerdict:
    if normalize_string(value) in {normalize_string(o) for o in options if isinstance(o, str)}:
        return _PASSED
    return _fail(
        "value_error:string",
        f"Invalid value for parameter {param!r}: {value!r}. Expected one of {list(options)!r} "
        "(compared without case, spaces or ,./-_*^).",
    )


def _as_list_option(option: object) -> list[Any] | None:
    # An empty list stands in for "left out": BFCL accepts [] where "" is an option.
    if option == "":
        return []
    return option if isinstance(option, list) else None


def _match_list(param: str, value: list[Any], options: Sequence[Any]) -> AstVerdict:
    normalized = [_normalized(item) for item in value]
    for option in options:
        candidate = _as_list_option(option)
        if candidate is not None and normalized == [_normalized(item) for item in candidate]:
            return _PASSED
    return _fail(
        "value_error:list/tuple",
        f"Invalid value for parameter {param!r}: {value!r}. Expected one of {list(options)!r}.",
    )


def _match_dict(param: str, value: Mapping[str, Any], options: Sequence[Any]) -> AstVerdict:
    verdict = _fail("dict_checker:unclear", f"No option for parameter {param!r} to compare with.")
    for option in options:
        if option == "":
            continue
        verdict = _match_dict_option(value, option)
        if verdict.passed:
            return verdict
    return verdict


def _match_dict_option(value: Mapping[str, Any], option: object) -> AstVerdict:
    """Compare one level deep: each key's value against that key's options."""
    if not isinstance(option, Mapping):
        return _fail("value_error:dict_value", f"Expected {option!r}, got a dict: {value!r}.")
    for key, item in value.items():
        if key not in option:
            return _fail("value_error:dict_key", f"Unexpected dict key {key!r}.")
        allowed = [_normalized(choice) for choice in _as_options(option[key])]
        if _normalized(item) not in allowed:
            return _fail(
                "value_error:dict_value",
                f"Invalid value for dict key {key!r}: {item!r}. Expected one of {allowed!r}.",
            )
    for key, choices in option.items():
        if key not in value and "" not in _as_options(choices):
            return _fail("value_error:dict_key", f"Missing dict key {key!r}.")
    return _PASSED


def _as_options(choices: object) -> list[Any]:
    return choices if isinstance(choices, list) else [choices]


def _match_dict_list(param: str, value: list[Any], options: Sequence[Any]) -> AstVerdict:
    """Each dict is compared with the dict at the same position of one option."""
    verdict = _fail("list_dict_checker:unclear", f"No option for parameter {param!r}.")
    for option in options:
        candidate = _as_list_option(option)
        if candidate is None:
            continue
        if len(candidate) != len(value):
            verdict = _fail(
                "value_error:list_dict_count",
                f"Parameter {param!r} has {len(value)} dicts, an option has {len(candidate)}.",
            )
            continue
        verdict = _PASSED
        for item, item_option in zip(value, candidate, strict=True):
            verdict = (
                _match_dict(param, item, [item_option])
                if isinstance(item, Mapping)
                else _fail("value_error:dict_value", f"Expected a dict, got {item!r}.")
            )
            if not verdict.passed:
                break
        if verdict.passed:
            return verdict
    return verdict
