"""`tooluse.lint`: each check fires on a tool that breaks its rule and stays quiet on
one that keeps it; ``tooluse tools lint`` prints one finding per line."""

from __future__ import annotations

import enum
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from typing_extensions import TypedDict

from examples.seed_tools import toolbox as example_tools
from tooluse import Tool, Toolbox, tool
from tooluse.lint import Finding, lint

ROOT = Path(__file__).resolve().parent.parent.parent
TOOLUSE = Path(sys.executable).parent / "tooluse"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
LINE = re.compile(r"^\S+ \[(reliability|documentation|atomicity|parseable)\] [^:]+: .+; .+$")


def rules(*tools: Tool, **options: Any) -> list[str]:
    return [f.rule for f in lint(tools, **options)]


def raw(
    name: str = "get_record",
    description: str = "Look up one record of the archive by its id.",
    properties: dict[str, Any] | None = None,
    **options: Any,
) -> Tool:
    async def echo(**arguments: Any) -> dict[str, Any]:
        return arguments

    if properties is None:
        properties = {"record_id": {"type": "string", "description": "Record id, e.g. 'r-12'"}}
    schema = {"type": "object", "properties": properties}
    return Tool.from_schema(name, description, schema, echo, **options)


class Hotel(TypedDict):
    name: str
    price: float


# --- the output ---------------------------------------------------------------------------


def test_a_finding_prints_as_one_line_with_its_fix() -> None:
    finding = Finding(
        "search_and_summarize",
        "atomicity",
        "name",
        "'and' joins two jobs",
        "split it into search and summarize",
    )
    assert str(finding) == (
        "search_and_summarize [atomicity] name: 'and' joins two jobs; "
        "split it into search and summarize"
    )


def test_the_example_tools_are_clean() -> None:
    assert lint(example_tools) == []


# --- documentation --------------------------------------------------------------------------


def test_a_missing_description_is_found() -> None:
    assert rules(raw(description="")) == ["no-description"]
    assert rules(raw()) == []


def test_a_description_that_only_repeats_the_name_is_vague() -> None:
    @tool
    def get_weather(city: str) -> float:
        """Get the weather.

        Args:
            city: City and country, e.g. 'Paris, France'
        """
        return 18.0

    @tool
    def get_temperature(city: str) -> float:
        """Current air temperature in degrees Celsius at a city's main station.

        Args:
            city: City and country, e.g. 'Paris, France'
        """
        return 18.0

    (finding,) = lint([get_weather])
    assert (finding.rule, finding.where) == ("vague-description", "description")
    assert rules(get_temperature) == []


def test_a_parameter_without_a_description_is_found_unless_its_values_are_listed() -> None:
    @tool
    def convert_length(value: float, unit: Literal["m", "ft"]) -> float:
        """Convert a length between metres and feet, to the other unit."""
        return value

    (finding,) = lint([convert_length])
    assert (finding.rule, finding.where) == ("undocumented-parameter", "parameter 'value'")
    assert str(finding).startswith("convert_length [documentation] parameter 'value': ")

    @tool
    def read_thermometer(unit: Unit, precision: Literal[1, 2] | None = None) -> float:
        """Read the lobby thermometer, in the unit asked for."""
        return 21.0

    # Values listed through a reference or in a member of a union count as well.
    assert rules(read_thermometer) == []


def test_a_parameter_description_that_only_repeats_its_name_is_vague() -> None:
    vague = raw(properties={"city": {"type": "string", "description": "The city."}})
    good = raw(properties={"city": {"type": "string", "description": "City name, e.g. 'Oslo'"}})
    assert rules(vague) == ["vague-parameter"]
    assert rules(good) == []


# --- reliability -------------------------------------------------------------------------


def test_untyped_parameters_are_found_at_any_depth() -> None:
    @tool
    def store_values(key: Any, values: list[Any]) -> None:
        """Keep values under a key in the session's scratch space.

        Args:
            key: Name to keep them under, e.g. 'totals'
            values: What to keep
        """

    @tool
    def keep_totals(key: str, values: list[float]) -> None:
        """Keep numbers under a key in the session's scratch space.

        Args:
            key: Name to keep them under, e.g. 'totals'
            values: The numbers to keep
        """

    found = lint([store_values])
    assert [(f.rule, f.where) for f in found] == [
        ("untyped-parameter", "parameter 'key'"),
        ("untyped-parameter", "parameter 'values[]'"),
    ]
    assert rules(keep_totals) == []
    untyped_raw = raw(properties={"record_id": {"description": "Record id, e.g. 'r-12'"}})
    assert rules(untyped_raw) == ["untyped-parameter"]


def test_an_empty_enum_and_an_enum_value_of_the_wrong_type_are_found() -> None:
    empty = raw(properties={"kind": {"type": "string", "enum": [], "description": "Record kind"}})
    wrong = raw(
        properties={"rooms": {"type": "integer", "enum": ["1", "2"], "description": "Rooms"}}
    )
    good = raw(properties={"rooms": {"type": "integer", "enum": [1, 2], "description": "Rooms"}})
    assert rules(empty) == ["empty-enum"]
    in_defs = Tool.from_schema(
        "get_record",
        "Look up one record of the archive by its kind.",
        {
            "type": "object",
            "properties": {"kind": {"$ref": "#/$defs/Kind", "description": "Record kind"}},
            "$defs": {"Kind": {"type": "string", "enum": []}},
        },
        lambda **kwargs: kwargs,
    )
    (finding,) = lint([in_defs])
    assert (finding.rule, finding.where) == ("empty-enum", "parameter 'kind'")
    (finding,) = lint([wrong])
    assert finding.rule == "enum-breaks-schema" and '"1"' in finding.message
    assert rules(good) == []


class Unit(enum.Enum):
    celsius = "celsius"
    fahrenheit = "fahrenheit"


def test_a_default_that_breaks_its_own_schema_is_found() -> None:
    @tool
    def list_rooms(floor: int = "ground") -> list[str]:  # type: ignore[assignment]
        """List the free rooms on one floor of the hotel.

        Args:
            floor: Floor number, 0 for the ground floor
        """
        return []

    @tool
    def read_thermometer(unit: Unit = Unit.celsius, room: str | None = None) -> float:
        """Read the thermometer of one room, or of the lobby.

        Args:
            unit: Temperature unit to return
            room: Room number, e.g. '204'; the lobby when left out
        """
        return 21.0

    (finding,) = lint([list_rooms])
    assert (finding.rule, finding.where) == ("default-breaks-schema", "parameter 'floor'")
    # A default given through $defs (an enum class) and a null default on an optional
    # parameter are both fine.
    assert rules(read_thermometer) == []
    optional_null = {"type": "string", "default": None, "description": "Record id, e.g. 'r-1'"}
    assert rules(raw(properties={"record_id": optional_null})) == []
    boolean_text = {"type": "boolean", "default": "false", "description": "Include deleted ones"}
    assert rules(raw(properties={"deleted": boolean_text})) == ["default-breaks-schema"]


def test_a_schema_that_is_not_json_schema_is_found() -> None:
    broken = raw(
        properties={"record_id": {"type": "strnig", "description": "Record id, e.g. 'r-1'"}}
    )
    assert rules(broken) == ["invalid-schema"]
    nowhere = {"$ref": "#/nowhere", "default": 1, "description": "Record id, e.g. 'r-1'"}
    (finding,) = lint([raw(properties={"record_id": nowhere})])
    assert finding.rule == "invalid-schema"
    assert finding.message == "the $ref '#/nowhere' points nowhere"
    # Not a JSON object where one belongs: still one finding, no exception.
    assert rules(raw(properties=[])) == ["invalid-schema"]  # type: ignore[arg-type]


def test_defaults_are_checked_through_refs_and_the_schemas_own_draft() -> None:
    unit = {"$ref": "#/definitions/Unit", "default": "kelvin", "description": "Unit to use"}
    draft7 = Tool.from_schema(
        "read_gauge",
        "Read the gauge of one tank, in the unit asked for.",
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"unit": unit},
            "definitions": {"Unit": {"type": "string", "enum": ["bar", "psi"]}},
        },
        lambda **kwargs: kwargs,
    )
    (finding,) = lint([draft7])
    assert finding.rule == "default-breaks-schema"
    assert finding.message.startswith('the default "kelvin" breaks its own schema')


def test_a_tool_whose_name_says_it_writes_must_declare_side_effects() -> None:
    def send_email(to: str, body: str) -> None:
        """Send an email from the team's address.

        Args:
            to: Recipient's email address
            body: Plain-text body of the mail
        """

    (finding,) = lint([tool(send_email)])
    assert (finding.rule, finding.principle) == ("undeclared-writes", "reliability")
    assert "'send'" in finding.message
    assert rules(tool(side_effects=True)(send_email)) == []
    # A read verb first, a verb that reads as a noun (last, or beside a read verb), or
    # "add" alone: no write.
    for name in ("get_email_address", "sports_match_schedule", "flight_schedule_get_times", "add"):
        assert rules(raw(name=name)) == [], name
    assert rules(raw(name="add_contact")) == ["undeclared-writes"]
    # An MCP server's readOnlyHint on such a tool is a claim the name contradicts.
    hinted = raw(name="delete_record", side_effects=False, annotations={"readOnlyHint": True})
    assert rules(hinted) == ["read-only-writer"]


# --- parseable ------------------------------------------------------------------------------


def test_free_text_returned_where_the_docstring_promises_structure_is_found() -> None:
    def search_hotels(city: str) -> str:
        """Search the hotels of a city. Returns a list of hotels, each with name and price.

        Args:
            city: City name, e.g. 'Lisbon'
        """
        return "[]"

    def find_hotels(city: str) -> list[Hotel]:
        """Search the hotels of a city. Returns a list of hotels, each with name and price.

        Args:
            city: City name, e.g. 'Lisbon'
        """
        return []

    (finding,) = lint([tool(search_hotels)])
    assert (finding.rule, finding.where) == ("free-text-return", "returns")
    assert rules(tool(find_hotels)) == []
    # The structure must be the result's: here the list is the input.
    filtering = raw(description="Filters a list of strings, returning those that match a regex.")
    assert rules(filtering) == []
    promised = raw(description="Look up a record. Returns a JSON object with its fields.")
    assert rules(promised) == ["undeclared-return"]
    structured = raw(
        description="Look up a record. Returns a JSON object with its fields.",
        returns={"type": "object", "properties": {"id": {"type": "string"}}},
    )
    assert rules(structured) == []


# --- atomicity ------------------------------------------------------------------------------


def test_and_between_two_jobs_in_a_name_is_found_with_the_split() -> None:
    (finding,) = lint([raw(name="search_and_summarize")])
    assert str(finding) == (
        "search_and_summarize [atomicity] name: 'and' joins two jobs; "
        "split it into search and summarize"
    )
    assert rules(raw(name="get_name_and_address")) == []


def test_and_between_two_jobs_in_the_summary_is_found() -> None:
    two = raw(description="Search the web for a query and summarize the top pages.")
    one = raw(description="Send a GET request to a URL and return the body it answers.")
    steps = raw(description="Builds a search query from keywords and sends it to the index.")
    assert rules(two) == ["two-jobs-summary"]
    noun = raw(description="Retrieve a person's contact details, their phone and email address.")
    assert rules(noun) == []
    assert rules(one) == []
    assert rules(steps) == []


def test_a_schema_over_the_token_limit_is_found() -> None:
    long = raw(description="Look up one record of the archive by its id. " * 20)
    (finding,) = lint([long], max_schema_tokens=100)
    assert finding.rule == "large-schema" and finding.where == "schema"
    assert rules(long) == []  # under the default limit


# --- the command ----------------------------------------------------------------------------

BAD_TOOLBOX = '''
from typing import Any
from tooluse import Toolbox, tool


@tool
def search_and_summarize(query: Any) -> str:
    """Search."""
    return ""


@tool
def lookup_capital(country: str) -> str:
    """Return the capital city of a country.

    Args:
        country: Country name in English, e.g. 'Kenya'
    """
    return "Nairobi"


toolbox = Toolbox([search_and_summarize, lookup_capital])
'''


def tooluse(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_prints_one_finding_per_line_and_exits_1_only_when_strict(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad_tools.py").write_text(BAD_TOOLBOX)
    proc = tooluse("tools", "lint", "bad_tools:toolbox", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(LINE.match(line) for line in lines), lines
    assert {line.split(" [")[0] for line in lines} == {"search_and_summarize"}
    assert "search_and_summarize [atomicity] name: 'and' joins two jobs" in proc.stdout
    assert "search_and_summarize [reliability] parameter 'query': has no type" in proc.stdout
    assert proc.stderr.strip().startswith("2 tools, 1 with findings: ")
    strict = tooluse("tools", "lint", "bad_tools:toolbox", "--strict", cwd=tmp_path)
    assert strict.returncode == 1 and strict.stdout == proc.stdout
    clean = tooluse("tools", "lint", "examples.seed_tools:toolbox", "--strict")
    assert clean.returncode == 0 and clean.stdout == ""


def test_the_command_refuses_a_bad_target_in_one_line() -> None:
    proc = tooluse("tools", "lint", "examples.seed_tools:nothing")
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("error: module 'examples.seed_tools' has no attribute 'nothing'")
    assert tooluse("tools", "lint").returncode == 2  # neither a toolbox nor --mcp


def test_the_command_lints_a_real_mcp_servers_tools() -> None:
    server = f"python {ROOT / 'tests' / 'lint' / 'lint_server.py'}"
    proc = tooluse("tools", "lint", "--mcp", server, "--strict")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        "delete_note [reliability] side effects: the server marks it read-only (readOnlyHint), "
        "yet its name says it writes ('delete'); drop readOnlyHint on the server if it writes, "
        "or rename it if it only reads"
    ]
    time = tooluse("tools", "lint", "--mcp", "python -m mcp_server_time", "--strict")
    assert time.returncode == 0, time.stderr
    assert time.stderr.strip() == "2 tools, 0 with findings"


def test_toolbox_and_plain_lists_lint_alike() -> None:
    tools = [raw(name="search_and_summarize"), raw()]
    assert lint(Toolbox(tools)) == lint(tools)


def test_a_tool_with_side_effects_is_never_advised_to_show_an_example_value() -> None:
    @tool(side_effects=True)
    def pay_bill(payee: str, amount: float) -> str:
        """Pay a bill from the current account and return the payment's reference."""
        return "ref-1"

    @tool
    def quote_bill(payee: str, amount: float) -> str:
        """Quote the fee of paying a bill from the current account."""
        return "0.50"

    acting = lint([pay_bill])
    assert {f.rule for f in acting} == {"undocumented-parameter"}
    assert all("without an example value" in f.fix for f in acting)
    assert all(f.fix.endswith("@tool(examples=[...]) instead") for f in acting)
    # No tool is advised to put a value in a description: examples are whole calls.
    reading = lint([quote_bill])
    assert reading and all("example value" not in f.fix for f in reading)
    assert all(
        f.fix.endswith("show whole example calls with @tool(examples=[...])") for f in reading
    )


def test_a_tool_with_examples_is_not_sent_to_add_them() -> None:
    @tool(examples=[{"arguments": {"payee": "Harbour Gas", "amount": 41.5}, "result": "0.50"}])
    def quote_bill(payee: str, amount: float) -> str:
        """Quote the fee of paying a bill from the current account."""
        return "0.50"

    findings = lint([quote_bill])
    assert {f.rule for f in findings} == {"undocumented-parameter"}
    assert [f.fix for f in findings] == ["say what it is", "say what it is"]


@pytest.mark.parametrize(
    "description",
    [
        "Amount in EUR, e.g. 92.15",
        "Who is paid, for example 'ACME Power'",
        "The recipient, such as bills@acme.example",
        "Amount to pay (eg. 12)",
    ],
)
def test_an_example_value_in_a_side_effecting_tool_is_a_copyable_example(
    description: str,
) -> None:
    acting = raw(
        name="pay_bill",
        description="Pay a bill from the current account and return its reference.",
        properties={"amount": {"type": "string", "description": description}},
        side_effects=True,
    )
    reading = raw(
        name="quote_bill",
        description="Quote the fee of paying a bill from the current account.",
        properties={"amount": {"type": "string", "description": description}},
    )
    assert "copyable-example" in rules(acting)
    assert "copyable-example" not in rules(reading)
    (finding,) = [f for f in lint([acting]) if f.rule == "copyable-example"]
    assert finding.principle == "reliability" and finding.where == "parameter 'amount'"
    assert "a model may copy into a real call" in finding.message
    assert finding.fix.endswith("move the value into a whole call with @tool(examples=[...])")


def test_a_format_without_a_value_is_not_a_copyable_example() -> None:
    acting = raw(
        name="pay_bill",
        description="Pay a bill from the current account and return its reference.",
        properties={
            "amount": {"type": "string", "description": "Amount in EUR, two decimals, positive"}
        },
        side_effects=True,
    )
    assert "copyable-example" not in rules(acting)
