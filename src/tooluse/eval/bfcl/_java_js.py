"""Java and JavaScript argument text turned into Python values, the way BFCL reads them.

BFCL's Java and JavaScript decoders hand every argument over as source text
(``"42L"``, ``"new int[]{1, 2}"``, ``"{method: 'GET'}"``). Its checker converts that
text according to the parameter's declared type and then applies the Python rules.
Text that does not fit the declared type is returned unchanged, so the caller's type
check reports it (or accepts it as a variable name when the expected answer is one).

BFCL's quirks are kept where they decide verdicts (a long needs its ``L``, String
elements of a Java array keep their quotes, quoted numbers inside a JavaScript object
become numbers). Nesting is parsed by matching brackets and quotes, where BFCL's
patterns stop at the first closing bracket; on flat values the two agree.
"""

from __future__ import annotations

import re

from ...conventions._scan import JAVA_JS, closing_bracket, split_top_level

JAVA_TYPES: dict[str, type] = {
    "byte": int,
    "short": int,
    "integer": int,
    "long": int,
    "float": float,
    "double": float,
    "boolean": bool,
    "char": str,
    "String": str,
    "any": str,
    "Array": list,
    "ArrayList": list,
    "HashMap": dict,
}
"""Java type names in BFCL function descriptions and the Python type of their converted value."""

JAVA_ITEM_TYPED = frozenset({"Array", "ArrayList"})

JS_TYPES: dict[str, type] = {
    "String": str,
    "integer": int,
    "float": float,
    "Bigint": int,
    "Boolean": bool,
    "any": str,
    "array": list,
    "dict": dict,
}
"""JavaScript type names in BFCL function descriptions and their Python type."""

JS_ITEM_TYPED = frozenset({"array"})

_INT = re.compile(r"-?\d+")
_DECIMAL = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_JAVA_LONG = re.compile(r"(-?\d+)[lL]")
_JAVA_FLOAT = re.compile(rf"({_DECIMAL})[fF]")
_JAVA_DOUBLE = re.compile(_DECIMAL)
_JS_FLOAT = re.compile(r"-?\d+(?:\.\d+)?")
_JS_BIGINT = re.compile(r"(-?\d+)n")
_ANY_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")

_JAVA_ARRAY = re.compile(r"new\s+[\w.]+\s*\[\s*\]\s*\{(.*)\}", re.DOTALL)
_JAVA_AS_LIST = re.compile(
    r"new\s+ArrayList\s*<[^>]*>\s*\(\s*Arrays\s*\.\s*asList\s*\((.*)\)\s*\)", re.DOTALL
)
_JAVA_ADD_BLOCK = re.compile(r"new\s+ArrayList\s*<[^>]*>\s*\(\s*\)\s*\{\s*\{(.*)\}\s*\}", re.DOTALL)
_JAVA_EMPTY_LIST = re.compile(r"new\s+ArrayList\s*<[^>]*>\s*\(\s*\)")
_JAVA_MAP = re.compile(
    r"new\s+HashMap\s*(?:<.*?>)?\s*\(\s*\)\s*(?:\{\s*(?:\{(.*)\}|)\s*\})?", re.DOTALL
)

_QUOTES = "\"'"


def java_value(text: str, java_type: str, item_type: str | None = None) -> object:
    """Convert Java source text for a parameter declared as ``java_type``."""
    text = text.strip()
    if java_type == "Array":
        return _java_array(text, item_type)
    if java_type == "ArrayList":
        return _java_array_list(text, item_type)
    if java_type == "HashMap":
        return _java_map(text)
    return _java_scalar(text, java_type)


def js_value(text: str, js_type: str, item_type: str | None = None) -> object:
    """Convert JavaScript source text for a parameter declared as ``js_type``."""
    text = text.strip()
    if js_type == "array":
        return _js_array(text, item_type)
    if js_type == "dict":
        return _js_object(text)
    return _js_scalar(text, js_type)


def _java_scalar(text: str, java_type: str) -> object:
    if java_type in ("byte", "short", "integer"):
        return int(text) if _INT.fullmatch(text) else text
    if java_type == "long":
        # A long needs its L suffix: BFCL reads a bare "42" for a long as text.
        match = _JAVA_LONG.fullmatch(text)
        return int(match.group(1)) if match else text
    if java_type == "float":
        match = _JAVA_FLOAT.fullmatch(text)
        return float(match.group(1)) if match else text
    if java_type == "double":
        return float(text) if _JAVA_DOUBLE.fullmatch(text) else text
    if java_type == "boolean":
        return {"true": True, "false": False}.get(text, text)
    if java_type in ("Array", "ArrayList", "HashMap"):
        return java_value(text, java_type)
    # String, char and any keep their text as written, quotes included: BFCL's
    # decoder has already unquoted a top-level string literal.
    return text


def _java_array(text: str, item_type: str | None) -> object:
    match = _JAVA_ARRAY.fullmatch(text)
    if match is None:
        return text
    elements = [part for part in split_top_level(match.group(1), JAVA_JS) if part]
    if item_type is None:
        return [_java_literal(part) for part in elements]
    # String elements of a Java array keep their quotes: BFCL converts each element
    # by the item type, and a String conversion leaves the text as it is.
    return [_java_scalar(part, item_type) for part in elements]


def _java_array_list(text: str, item_type: str | None) -> object:
    as_list = _JAVA_AS_LIST.fullmatch(text)
    if as_list is not None:
        elements = split_top_level(as_list.group(1), JAVA_JS)
    else:
        add_block = _JAVA_ADD_BLOCK.fullmatch(text)
        if add_block is not None:
            elements = _call_arguments(add_block.group(1), "add")
        elif _JAVA_EMPTY_LIST.fullmatch(text):
            return []
        else:
            return text
    return [_java_list_element(part, item_type) for part in elements]


def _java_list_element(text: str, item_type: str | None) -> object:
    # Unlike arrays, BFCL unquotes String and char elements of an ArrayList.
    if item_type in ("String", "char"):
        return _unquote(text)
    if item_type is None:
        return _java_literal(text)
    return _java_scalar(text, item_type)


def _java_map(text: str) -> object:
    match = _JAVA_MAP.fullmatch(text)
    if match is None:
        return text
    result: dict[str, object] = {}
    for arguments in _call_argument_lists(match.group(1) or "", "put"):
        if len(arguments) != 2 or not _is_quoted(arguments[0], '"'):
            continue
        result[arguments[0][1:-1]] = _java_literal(arguments[1])
    return result


def _java_literal(text: str) -> object:
    """Read a Java literal whose type is not declared (map values, untyped lists)."""
    if text in ("true", "false"):
        return text == "true"
    if _is_quoted(text, '"'):
        return text[1:-1]
    if long_match := _JAVA_LONG.fullmatch(text):
        return int(long_match.group(1))
    if float_match := _JAVA_FLOAT.fullmatch(text):
        return float(float_match.group(1))
    return _number_or_text(text)


def _js_scalar(text: str, js_type: str) -> object:
    if js_type == "String":
        return _unquote(text)
    if js_type == "integer":
        return int(text) if _INT.fullmatch(text) else text
    if js_type == "float":
        # No exponent form: BFCL reads "1e3" for a JavaScript float as text.
        return float(text) if _JS_FLOAT.fullmatch(text) else text
    if js_type == "Bigint":
        match = _JS_BIGINT.fullmatch(text)
        return int(match.group(1)) if match else text
    if js_type == "Boolean":
        return {"true": True, "false": False}.get(text, text)
    if js_type in ("array", "dict"):
        return js_value(text, js_type)
    return text


def _js_array(text: str, item_type: str | None) -> object:
    body = _js_array_body(text)
    if body is None:
        return text
    elements = [part for part in split_top_level(body, JAVA_JS) if part]
    if any(_js_array_body(part) is not None for part in elements):
        # BFCL reads nested arrays without their declared item type.
        return [_js_literal(part) for part in elements]
    if item_type is None:
        return [_js_literal(part) for part in elements]
    return [_js_scalar(part, item_type) for part in elements]


def _js_array_body(text: str) -> str | None:
    if text.startswith("[") and closing_bracket(text, 0, JAVA_JS) == len(text) - 1:
        return text[1:-1]
    match = re.match(r"new\s+Array\s*\(", text)
    if match and closing_bracket(text, match.end() - 1, JAVA_JS) == len(text) - 1:
        return text[match.end() : -1]
    return None


def _js_object(text: str) -> object:
    if not (text.startswith("{") and closing_bracket(text, 0, JAVA_JS) == len(text) - 1):
        return text
    result: dict[str, object] = {}
    for pair in split_top_level(text[1:-1], JAVA_JS):
        if not pair:
            continue
        key, colon, value = pair.partition(":")
        if not colon:
            return text
        result[key.strip().strip(_QUOTES)] = _js_object_value(value.strip())
    return result


def _js_object_value(text: str) -> object:
    if _js_array_body(text) is not None:
        return _js_array(text, None)
    if text.startswith("{"):
        return _js_object(text)
    # BFCL strips every surrounding quote before reading the value, so a quoted
    # "5" or "true" inside an object becomes a number or a boolean.
    return _js_literal(text.strip(_QUOTES))


def _js_literal(text: str) -> object:
    """Read a JavaScript literal whose type is not declared."""
    if _js_array_body(text) is not None:
        return _js_array(text, None)
    if text in ("true", "false"):
        return text == "true"
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        return text[1:-1]
    return _number_or_text(text)


def _number_or_text(text: str) -> object:
    if _INT.fullmatch(text):
        return int(text)
    if _ANY_FLOAT.fullmatch(text):
        return float(text)
    return text


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] == text[0]:
        return text[1:-1]
    return text


def _is_quoted(text: str, quote: str) -> bool:
    return len(text) >= 2 and text[0] == quote and text[-1] == quote


def _call_argument_lists(text: str, method: str) -> list[list[str]]:
    """Arguments of each ``method(...)`` call in a block such as ``put("a", 1); put("b", 2);``."""
    opener = re.compile(rf"\b{method}\s*\(")
    calls: list[list[str]] = []
    position = 0
    while (match := opener.search(text, position)) is not None:
        close = closing_bracket(text, match.end() - 1, JAVA_JS)
        if close is None:
            break
        calls.append(split_top_level(text[match.end() : close], JAVA_JS))
        position = close + 1
    return calls


def _call_arguments(text: str, method: str) -> list[str]:
    return [", ".join(arguments) for arguments in _call_argument_lists(text, method)]
