"""Rules of the BFCL-compatible AST check, one at a time."""

from __future__ import annotations

from typing import Any

import pytest

import tooluse.eval
from tooluse.eval import AstVerdict, check_ast
from tooluse.eval._matching import maximum_matching
from tooluse.eval.bfcl._java_js import java_value, js_value


def function(name: str, required: list[str] | None = None, **params: Any) -> dict[str, Any]:
    """A BFCL function description; each keyword is a parameter and its type spec."""
    properties = {
        key: spec if isinstance(spec, dict) else {"type": spec} for key, spec in params.items()
    }
    return {
        "name": name,
        "description": "",
        "parameters": {"type": "dict", "properties": properties, "required": required or []},
    }


def check_one(
    spec: str | dict[str, Any],
    value: Any,
    options: list[Any],
    category: str = "simple_python",
) -> AstVerdict:
    """Check a single call of ``f(x=value)`` against ``x``'s options."""
    return check_ast(
        [function("f", x=spec)], [{"f": {"x": value}}], [{"f": {"x": options}}], category
    )


def test_public_names() -> None:
    assert tooluse.eval.__all__ == [
        "SUITES",
        "AstVerdict",
        "Bench",
        "BenchConfig",
        "BenchDataError",
        "Call",
        "CallMetrics",
        "CallPolicy",
        "Case",
        "CaseTask",
        "ChainTask",
        "Check",
        "Contains",
        "Crossover",
        "Dataset",
        "ExpectedCall",
        "FanoutTask",
        "LineFit",
        "Number",
        "OracleModel",
        "OracleTurn",
        "Predicate",
        "RayOptions",
        "Regex",
        "Row",
        "Score",
        "Setup",
        "SuiteOptions",
        "Task",
        "TaskFileError",
        "Turn",
        "build_tasks",
        "call_metrics",
        "check_ast",
        "crossover",
        "evaluate",
        "fit_line",
        "oracle_for",
        "paper_crossover",
        "read_rows",
        "write_plots",
        "write_summary",
    ]


# --- types -----------------------------------------------------------------------


def test_int_is_accepted_for_a_float() -> None:
    assert check_one("float", 3, [3.0]).passed


def test_float_is_rejected_for_an_integer() -> None:
    verdict = check_one("integer", 3.0, [3])
    assert not verdict.passed
    assert verdict.error_type == "type_error:simple"


def test_bool_is_not_an_integer() -> None:
    assert check_one("integer", True, [1]).error_type == "type_error:simple"


def test_tuple_is_accepted_for_a_tuple_parameter_only() -> None:
    tuple_spec = {"type": "tuple", "items": {"type": "float"}}
    array_spec = {"type": "array", "items": {"type": "float"}}
    assert check_one(tuple_spec, (1.0, 2.0), [[1.0, 2.0]]).passed
    assert check_one(array_spec, (1.0, 2.0), [[1.0, 2.0]]).error_type == "type_error:simple"


def test_items_of_the_wrong_type_fail_the_nested_check() -> None:
    spec = {"type": "array", "items": {"type": "integer"}}
    assert check_one(spec, [1, 2], [[1, 2]]).passed
    assert check_one(spec, ["1", "2"], [[1, 2]]).error_type == "type_error:nested"


def test_ints_inside_a_float_array_are_not_converted() -> None:
    # BFCL turns a top-level int into a float, but not the items of an array.
    spec = {"type": "array", "items": {"type": "float"}}
    assert check_one(spec, [1.0, 2.5], [[1.0, 2.5]]).passed
    assert check_one(spec, [1, 2.5], [[1.0, 2.5]]).error_type == "type_error:nested"


def test_a_variable_name_in_the_answer_is_compared_as_written() -> None:
    # The answer holds a variable name where the description declares an integer.
    assert check_one("integer", "maxSize", ["maxSize"]).passed
    assert check_one("integer", "maxsize", ["maxSize"]).error_type == "value_error:others"


# --- values ----------------------------------------------------------------------


def test_strings_ignore_case_spaces_and_some_punctuation() -> None:
    assert check_one("string", "NEW YORK, ny.", ["New York, NY"]).passed
    assert check_one("string", "2024-01-01", ["20240101"]).passed
    assert check_one("string", "it's", ['it"s']).passed


def test_other_string_differences_fail() -> None:
    verdict = check_one("string", "Bostn", ["Boston", "Boston, MA"])
    assert not verdict.passed
    assert verdict.error_type == "value_error:string"
    assert "Bostn" in verdict.errors[0]


def test_list_strings_are_normalised_and_order_matters() -> None:
    spec = {"type": "array", "items": {"type": "string"}}
    assert check_one(spec, ["new york", "LA"], [["New York", "la"]]).passed
    assert check_one(spec, ["la", "new york"], [["New York", "la"]]).error_type == (
        "value_error:list/tuple"
    )


def test_numbers_must_be_one_of_the_options() -> None:
    assert check_one("integer", 5, [5, 10]).passed
    assert check_one("integer", 6, [5, 10]).error_type == "value_error:others"


def test_dict_values_are_compared_per_key() -> None:
    options = [{"city": ["Paris", "paris, france"], "days": [3], "units": ["metric", ""]}]
    assert check_one("dict", {"city": "PARIS", "days": 3}, options).passed
    assert check_one("dict", {"city": "Paris"}, options).error_type == "value_error:dict_key"
    assert check_one("dict", {"city": "Rome", "days": 3}, options).error_type == (
        "value_error:dict_value"
    )
    assert check_one("dict", {"city": "Paris", "days": 3, "x": 1}, options).error_type == (
        "value_error:dict_key"
    )


def test_lists_of_dicts_are_compared_position_by_position() -> None:
    spec = {"type": "array", "items": {"type": "dict"}}
    options = [[{"name": ["a"]}, {"name": ["b"]}]]
    assert check_one(spec, [{"name": "A"}, {"name": "b"}], options).passed
    assert not check_one(spec, [{"name": "b"}, {"name": "a"}], options).passed
    assert check_one(spec, [{"name": "a"}], options).error_type == "value_error:list_dict_count"


# --- parameters and names --------------------------------------------------------


def test_an_optional_parameter_may_be_left_out_only_when_its_options_contain_empty() -> None:
    functions = [function("f", required=["a"], a="integer", b="string")]
    calls = [{"f": {"a": 1}}]
    assert check_ast(functions, calls, [{"f": {"a": [1], "b": ["x", ""]}}], "simple_python").passed
    verdict = check_ast(functions, calls, [{"f": {"a": [1], "b": ["x"]}}], "simple_python")
    assert verdict.error_type == "simple_function_checker:missing_optional"


def test_missing_required_and_unexpected_parameters_fail() -> None:
    functions = [function("f", required=["a"], a="integer")]
    answer = [{"f": {"a": [1]}}]
    assert check_ast(functions, [{"f": {}}], answer, "simple_python").error_type == (
        "simple_function_checker:missing_required"
    )
    assert check_ast(functions, [{"f": {"a": 1, "z": 2}}], answer, "simple_python").error_type == (
        "simple_function_checker:unexpected_param"
    )


def test_function_names_must_match_and_can_be_spelled_without_dots() -> None:
    functions = [function("math.sqrt", x="integer")]
    answer = [{"math.sqrt": {"x": [4]}}]
    dotted = [{"math.sqrt": {"x": 4}}]
    underscored = [{"math_sqrt": {"x": 4}}]
    assert check_ast(functions, dotted, answer, "simple_python").passed
    assert check_ast(functions, underscored, answer, "simple_python").error_type == (
        "simple_function_checker:wrong_func_name"
    )
    assert check_ast(
        functions, underscored, answer, "simple_python", dots_as_underscores=True
    ).passed
    assert not check_ast(
        functions, dotted, answer, "simple_python", dots_as_underscores=True
    ).passed


def test_a_single_call_is_expected_outside_parallel_categories() -> None:
    functions = [function("f", x="integer")]
    answer = [{"f": {"x": [1]}}]
    twice = [{"f": {"x": 1}}, {"f": {"x": 1}}]
    assert check_ast(functions, twice, answer, "simple_python").error_type == (
        "simple_function_checker:wrong_count"
    )
    assert check_ast(functions, twice, answer, "multiple").error_type == (
        "multiple_function_checker:wrong_count"
    )


def test_output_that_is_not_a_list_of_calls_is_a_format_error() -> None:
    functions = [function("f", x="integer")]
    answer = [{"f": {"x": [1]}}]
    for output in ("f(x=1)", [{"f": 1}], [{"f": {"x": 1}, "g": {}}]):
        verdict = check_ast(functions, output, answer, "simple_python")  # type: ignore[arg-type]
        assert verdict.error_type == "ast_decoder:decoder_wrong_output_format"


def test_descriptions_bfcl_does_not_define_are_errors_of_the_caller() -> None:
    with pytest.raises(ValueError, match="no python parameter type 'number'"):
        check_one("number", 1, [1])
    with pytest.raises(ValueError, match="not among the functions"):
        check_ast([function("f")], [{"g": {}}], [{"g": {}}], "simple_python")


# --- parallel calls --------------------------------------------------------------

PRICE = [function("price", company="string", day="string")]


def price(company: str, day: str) -> dict[str, Any]:
    return {"price": {"company": company, "day": day}}


def test_parallel_calls_may_come_in_any_order() -> None:
    answer = [
        {"price": {"company": ["Apple"], "day": ["mon"]}},
        {"price": {"company": ["IBM"], "day": ["tue"]}},
    ]
    assert check_ast(PRICE, [price("IBM", "tue"), price("Apple", "mon")], answer, "parallel").passed


def test_parallel_matching_is_one_to_one_and_optimal() -> None:
    # The first expected call accepts either company. First fit would hand it the
    # Apple call and leave the expected Apple call unmatched.
    answer = [
        {"price": {"company": ["Microsoft", "Apple"], "day": ["mon"]}},
        {"price": {"company": ["Apple"], "day": ["mon"]}},
    ]
    assert check_ast(
        PRICE, [price("Apple", "mon"), price("Microsoft", "mon")], answer, "parallel"
    ).passed
    duplicated = [price("Apple", "mon"), price("Apple", "mon")]
    assert check_ast(PRICE, duplicated, answer, "parallel").passed
    verdict = check_ast(PRICE, [price("Microsoft", "mon")] * 2, answer, "parallel")
    assert verdict.error_type == "parallel_function_checker_no_order:cannot_find_match"
    assert "expected call 1" in verdict.errors[0]


def test_parallel_call_count_must_match() -> None:
    answer = [{"price": {"company": ["Apple"], "day": ["mon"]}}] * 2
    verdict = check_ast(PRICE, [price("Apple", "mon")], answer, "live_parallel")
    assert verdict.error_type == "parallel_function_checker_no_order:wrong_count"


def test_maximum_matching_reassigns_earlier_pairs() -> None:
    assert maximum_matching([[True, True], [True, False]]) == {0: 1, 1: 0}
    assert len(maximum_matching([[True, False], [True, False]])) == 1
    assert maximum_matching([]) == {}


# --- Java ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "java_type", "item_type", "expected"),
    [
        ("42", "integer", None, 42),
        ("-7", "short", None, -7),
        ("42L", "long", None, 42),
        ("42", "long", None, "42"),  # a long needs its suffix
        ("1.5f", "float", None, 1.5),
        ("1.5", "float", None, "1.5"),  # a float needs its suffix
        ("2.5e3", "double", None, 2500.0),
        ("true", "boolean", None, True),
        ("True", "boolean", None, "True"),
        ("a", "char", None, "a"),
        ("mapController", "any", None, "mapController"),
        ("new int[]{1, 2, 3}", "Array", "integer", [1, 2, 3]),
        ('new String[]{"a", "b"}', "Array", "String", ['"a"', '"b"']),  # quotes kept
        ("new String[]{-v, -p}", "Array", "String", ["-v", "-p"]),
        ("new long[]{1L, 2}", "Array", "long", [1, "2"]),
        ('new ArrayList<>(Arrays.asList("a", "b"))', "ArrayList", "String", ["a", "b"]),
        ("new ArrayList<Integer>() {{ add(1); add(2); }}", "ArrayList", "integer", [1, 2]),
        ("new ArrayList<>()", "ArrayList", "String", []),
        (
            'new HashMap<String, Object>() {{ put("limit", 50); put("on", true); put("s", "x"); }}',
            "HashMap",
            None,
            {"limit": 50, "on": True, "s": "x"},
        ),
        ("new HashMap<>()", "HashMap", None, {}),
        ("params", "HashMap", None, "params"),
    ],
)
def test_java_text_conversion(
    text: str, java_type: str, item_type: str | None, expected: object
) -> None:
    assert java_value(text, java_type, item_type) == expected


def test_java_values_must_be_source_text() -> None:
    verdict = check_one("integer", 42, [42], category="simple_java")
    assert verdict.error_type == "type_error:java"
    assert check_one("integer", "42", [42], category="simple_java").passed
    assert check_one("long", "42", [42], category="simple_java").error_type == "type_error:simple"


def test_java_collections_are_checked_after_conversion() -> None:
    spec = {"type": "ArrayList", "items": {"type": "String"}}
    text = 'new ArrayList<String>(Arrays.asList("GC pause"))'
    assert check_one(spec, text, [["GC pause"]], category="simple_java").passed
    params = 'new HashMap<String, String>() {{ put("limit", 50); }}'
    assert check_one("HashMap", params, [{"limit": [50]}], category="simple_java").passed


# --- JavaScript ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "js_type", "item_type", "expected"),
    [
        ("'userInputField'", "String", None, "userInputField"),
        ("userInputField", "String", None, "userInputField"),
        ("12", "integer", None, 12),
        ("4.0", "float", None, 4.0),
        ("1e3", "float", None, "1e3"),  # no exponent form
        ("10n", "Bigint", None, 10),
        ("false", "Boolean", None, False),
        ('["completed", "failed"]', "array", "String", ["completed", "failed"]),
        ("new Array(60, 30)", "array", "float", [60.0, 30.0]),
        ("[[1, 2], [3, 4]]", "array", "float", [[1, 2], [3, 4]]),
        ("[]", "array", "String", []),
        ("{method: 'GET', retries: 3}", "dict", None, {"method": "GET", "retries": 3}),
        # Quoted numbers and booleans inside an object become numbers and booleans.
        ('{"n": "5", "ok": "true"}', "dict", None, {"n": 5, "ok": True}),
        (
            # BFCL stops at the first "}" and keeps "{k: 1" as text; nesting is parsed here.
            "{list: ['a', 'b'], inner: {k: 1}}",
            "dict",
            None,
            {"list": ["a", "b"], "inner": {"k": 1}},
        ),
        ("{}", "dict", None, {}),
        ("responseData", "dict", None, "responseData"),
    ],
)
def test_javascript_text_conversion(
    text: str, js_type: str, item_type: str | None, expected: object
) -> None:
    assert js_value(text, js_type, item_type) == expected


def test_javascript_values_must_be_source_text() -> None:
    assert check_one("Boolean", True, [True], category="simple_javascript").error_type == (
        "type_error:js"
    )
    assert check_one("Boolean", "true", [True], category="simple_javascript").passed
    spec = {"type": "array", "items": {"type": "String"}}
    assert check_one(spec, "['a', 'B']", [["a", "b"]], category="simple_javascript").passed
