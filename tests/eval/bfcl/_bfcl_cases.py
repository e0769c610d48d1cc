"""Model outputs built from BFCL ground truth, and systematic perturbations of them.

A ground-truth answer lists options per parameter; the model output takes the first
option (the first one that is not ``""``), leaves out optional parameters whose
options include ``""``, and for Java and JavaScript renders each value as the source
text BFCL's decoders hand to the checker.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tooluse.eval.bfcl._single_turn import _chosen_value, _first_option, language_of
from tooluse.eval.bfcl._values import _js_literal
from tooluse.eval.bfcl._values import _literal as _java_literal

from ._official import Entry

Calls = list[dict[str, dict[str, Any]]]


@dataclass(frozen=True)
class Case:
    label: str
    calls: Calls
    dots_as_underscores: bool = False


def _description(entry: Entry, name: str) -> Mapping[str, Any]:
    return next(f for f in entry.functions if f["name"] == name)


# --- choosing values from the ground truth ------------------------------------------


def python_calls(entry: Entry) -> Calls:
    """The ground truth's first options as Python values, before any rendering."""
    calls: Calls = []
    for expected in entry.ground_truth:
        ((name, options_by_param),) = expected.items()
        description = _description(entry, name)
        properties = description["parameters"].get("properties", {})
        required = set(description["parameters"].get("required", []))
        arguments = {}
        for param, options in options_by_param.items():
            if "" in options and param not in required:
                continue
            found, option = _first_option(options)
            if found:
                arguments[param] = _chosen_value(option, properties.get(param, {}))
        calls.append({name: arguments})
    return calls


# --- rendering Java and JavaScript source text -------------------------------------


_JAVA_ARRAY_ELEMENT = {
    "String": "String",
    "any": "Object",
    "char": "char",
    "integer": "int",
    "long": "long",
    "boolean": "boolean",
}


def java_text(
    value: Any, java_type: str, item_type: str | None, *, alternative: bool = False
) -> str:
    """Java source for ``value`` as BFCL's decoder would pass it to the checker.

    ``alternative`` picks the other spelling of a collection: an ArrayList filled in an
    initializer block, a HashMap without spaces.
    """
    if isinstance(value, str):
        # String literals arrive unquoted; identifiers arrive as written.
        return value
    if java_type == "Array" and isinstance(value, list):
        elements = ", ".join(_java_array_element(item, item_type) for item in value)
        return f"new {_JAVA_ARRAY_ELEMENT.get(item_type or 'any', 'Object')}[]{{{elements}}}"
    if java_type == "ArrayList" and isinstance(value, list):
        if not value:
            return "new ArrayList<>()"
        if alternative:
            adds = " ".join(f"add({_java_list_element(item, item_type)});" for item in value)
            return f"new ArrayList<Object>() {{{{ {adds} }}}}"
        elements = ", ".join(_java_list_element(item, item_type) for item in value)
        return f"new ArrayList<>(Arrays.asList({elements}))"
    if java_type == "HashMap" and isinstance(value, dict):
        if not value:
            return "new HashMap<>()"
        puts = " ".join(f'put("{key}", {_java_literal(item)});' for key, item in value.items())
        if alternative:
            return f"new HashMap<>(){{{{{puts.replace('; ', ';')}}}}}"
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    if java_type == "long" and type(value) is int:
        return f"{value}L"
    if java_type == "float" and type(value) in (int, float):
        return f"{value}f"
    return _java_literal(value)


def _java_array_element(value: Any, item_type: str | None) -> str:
    # BFCL keeps the quotes of String elements in a Java array, so the element
    # that matches a ground-truth string is the bare text.
    if isinstance(value, str):
        return value
    return java_text(value, item_type or "any", None)


def _java_list_element(value: Any, item_type: str | None) -> str:
    if isinstance(value, str):
        return f'"{value}"' if item_type in ("String", "char") else value
    return java_text(value, item_type or "any", None)


def js_text(value: Any, js_type: str, item_type: str | None, *, alternative: bool = False) -> str:
    """JavaScript source for ``value`` as BFCL's decoder would pass it to the checker.

    ``alternative`` picks the other spelling of a collection: ``new Array(...)``, an
    object with quoted keys.
    """
    if isinstance(value, str):
        return value
    if js_type == "Bigint" and type(value) is int:
        return f"{value}n"
    if alternative and isinstance(value, list) and value:
        return "new Array(" + ", ".join(_js_literal(item) for item in value) + ")"
    if alternative and isinstance(value, dict):
        return "{" + ", ".join(f"'{k}': {_js_literal(v)}" for k, v in value.items()) + "}"
    return _js_literal(value)


def render(entry: Entry, calls: Calls, *, alternative: bool = False) -> Calls:
    """Calls with every value turned into Java or JavaScript source where needed."""
    language = language_of(entry.category)
    if language == "python":
        return calls
    rendered: Calls = []
    for call in calls:
        ((name, arguments),) = call.items()
        properties = _properties(entry, name)
        out = {}
        for param, value in arguments.items():
            spec = properties.get(param, {})
            type_name = spec.get("type", "any")
            item_type = spec.get("items", {}).get("type")
            out[param] = (
                java_text(value, type_name, item_type, alternative=alternative)
                if language == "java"
                else js_text(value, type_name, item_type, alternative=alternative)
            )
        rendered.append({name: out})
    return rendered


def _properties(entry: Entry, name: str) -> Mapping[str, Any]:
    for function in entry.functions:
        if function["name"] == name:
            properties: Mapping[str, Any] = function["parameters"].get("properties", {})
            return properties
    return {}


# --- perturbations ---------------------------------------------------------------


def wrong_value(value: Any) -> Any:
    """A value of the same shape that differs somewhere, nested values included."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        return value + "Zq"
    if isinstance(value, list):
        return [wrong_value(value[0]), *value[1:]] if value else ["Zq"]
    if isinstance(value, dict):
        if not value:
            return {"zq": "Zq"}
        first, *rest = value
        return {first: wrong_value(value[first]), **{key: value[key] for key in rest}}
    return "Zq"


def wrong_types(value: Any) -> list[tuple[str, Any]]:
    """Values of other Python types, labelled, for a Python parameter."""
    if isinstance(value, bool):
        return [("str", "true" if value else "false"), ("int", int(value))]
    if isinstance(value, int):
        return [("str", str(value)), ("float", float(value)), ("bool", value != 0)]
    if isinstance(value, float):
        variants: list[tuple[str, Any]] = [("str", str(value))]
        if value.is_integer():
            # Not a wrong type: an int where a float is declared is accepted.
            variants.append(("int", int(value)))
        return variants
    if isinstance(value, str):
        return [("int", 42), ("list", [value])]
    if isinstance(value, list):
        return [("str", ", ".join(map(str, value))), ("tuple", tuple(value))]
    if isinstance(value, dict):
        return [("str", str(value)), ("list", list(value.values()))]
    return [("str", "None")]


def string_variant(value: Any) -> Any:
    """The same text in upper case with spaces and punctuation BFCL ignores."""
    if isinstance(value, str):
        return " " + value.upper().replace(" ", "  ") + "."
    if isinstance(value, list):
        return [string_variant(item) for item in value]
    return value


def _java_js_variants(value: Any, spec: Mapping[str, Any], language: str) -> list[tuple[str, Any]]:
    """Non-text values and literals of the wrong form for a Java/JavaScript parameter."""
    variants: list[tuple[str, Any]] = [("not_text", 42 if isinstance(value, str) else value)]
    type_name = spec.get("type")
    if type(value) is int and type_name in ("long", "Bigint"):
        variants.append(("no_suffix", str(value)))
    if type(value) in (int, float) and type_name == "float" and language == "java":
        variants.append(("no_suffix", repr(float(value))))
    if type(value) in (int, float) and type_name in ("integer", "long"):
        variants.append(("decimal", repr(float(value))))
    if isinstance(value, bool):
        variants.append(("capitalised", "True" if value else "False"))
    if isinstance(value, str) and type_name == "String":
        variants.append(("quoted", f'"{value}"'))
    return variants


def _replace_argument(calls: Calls, index: int, param: str, value: Any) -> Calls:
    ((name, arguments),) = calls[index].items()
    changed = [dict(call) for call in calls]
    changed[index] = {name: {**arguments, param: value}}
    return changed


def _without_argument(calls: Calls, index: int, param: str) -> Calls:
    ((name, arguments),) = calls[index].items()
    changed = [dict(call) for call in calls]
    changed[index] = {name: {key: v for key, v in arguments.items() if key != param}}
    return changed


def _renamed(calls: Calls, index: int, new_name: str) -> Calls:
    ((_, arguments),) = calls[index].items()
    changed = list(calls)
    changed[index] = {new_name: arguments}
    return changed


def cases(entry: Entry) -> Iterator[Case]:
    """The ground-truth output first, then every perturbation of it."""
    language = language_of(entry.category)
    chosen = python_calls(entry)
    base = render(entry, chosen)
    yield Case("ground_truth", base)

    for index, call in enumerate(chosen):
        ((name, arguments),) = call.items()
        properties = _properties(entry, name)
        for param, options in entry.ground_truth[index][name].items():
            found, option = _first_option(options)
            if param not in arguments and found:
                given = _chosen_value(option, properties.get(param, {}))
                yield Case(
                    f"optional_given:{index}:{param}",
                    render(entry, _replace_argument(chosen, index, param, given)),
                )
        if language != "python":
            alternative = render(entry, chosen, alternative=True)
            if alternative != base:
                yield Case(f"alternative_syntax:{index}", alternative)
        for param, value in arguments.items():
            where = f"{index}:{param}"
            yield Case(
                f"wrong_value:{where}",
                render(entry, _replace_argument(chosen, index, param, wrong_value(value))),
            )
            if language == "python" and string_variant(value) != value:
                yield Case(
                    f"string_variant:{where}",
                    _replace_argument(chosen, index, param, string_variant(value)),
                )
            if language == "python":
                for kind, other in wrong_types(value):
                    yield Case(
                        f"wrong_type_{kind}:{where}",
                        _replace_argument(chosen, index, param, other),
                    )
            else:
                for kind, other in _java_js_variants(value, properties.get(param, {}), language):
                    yield Case(
                        f"wrong_type_{kind}:{where}",
                        _replace_argument(base, index, param, other),
                    )
            yield Case(f"missing:{where}", _without_argument(base, index, param))
        unknown = "1" if language != "python" else 1
        yield Case(f"extra_param:{index}", _replace_argument(base, index, "zq_unknown", unknown))
        yield Case(f"wrong_name:{index}", _renamed(base, index, name + "_zq"))
        if "." in name:
            yield Case(f"underscored_name:{index}", _renamed(base, index, name.replace(".", "_")))

    if any("." in next(iter(call)) for call in base):
        underscored = [{next(iter(c)).replace(".", "_"): next(iter(c.values()))} for c in base]
        yield Case("dots_as_underscores:underscored", underscored, dots_as_underscores=True)
        yield Case("dots_as_underscores:dotted", base, dots_as_underscores=True)

    count = len(base)
    yield Case("appended_copy", [*base, base[0]])
    yield Case("no_calls", [])
    if count > 1:
        yield Case("reversed", base[::-1])
        for shift in range(1, count):
            yield Case(f"rotated:{shift}", base[shift:] + base[:shift])
        for index in range(count):
            yield Case(f"dropped:{index}", base[:index] + base[index + 1 :])
            duplicated = list(base)
            duplicated[(index + 1) % count] = base[index]
            yield Case(f"duplicated:{index}", duplicated)
