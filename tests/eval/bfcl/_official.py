"""BFCL's own AST checker and data, loaded from the installed ``bfcl-eval`` wheel.

Install it without its provider SDKs: ``pip install --no-deps bfcl-eval==2026.3.23``.

Importing the checker pulls ``bfcl_eval.constants.model_config``, which imports every
provider SDK; the checker only reads ``MODEL_CONFIG_MAPPING[model].underscore_to_dot``
from it, so a two-model stand-in is registered under that name instead.
"""

from __future__ import annotations

import importlib
import json
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

_MODEL_CONFIG = "bfcl_eval.constants.model_config"
PLAIN_MODEL = "tooluse-plain"
"""Model name under which the checker expects function names as described."""
DOTLESS_MODEL = "tooluse-dotless"
"""Model name under which the checker expects ``.`` in function names as ``_``."""


@dataclass(frozen=True)
class Entry:
    id: str
    category: str
    functions: list[dict[str, Any]]
    ground_truth: list[dict[str, dict[str, list[Any]]]]


@dataclass(frozen=True)
class OfficialChecker:
    check: Callable[..., dict[str, Any]]
    simple_check: Callable[..., dict[str, Any]]
    java_convert: Callable[..., Any]
    js_convert: Callable[..., Any]
    languages: Mapping[str, Any]
    data_dir: Path

    def verdict(
        self,
        entry: Entry,
        calls: Sequence[Mapping[str, Any]],
        *,
        dots_as_underscores: bool = False,
    ) -> dict[str, Any]:
        """The checker's result dict for ``calls`` against ``entry``'s ground truth."""
        return self.check(
            entry.functions,
            calls,
            entry.ground_truth,
            self.language(entry.category),
            entry.category,
            DOTLESS_MODEL if dots_as_underscores else PLAIN_MODEL,
        )

    def pair_passes(self, entry: Entry, call: Mapping[str, Any], expected_index: int) -> bool:
        """Whether BFCL's single-call checker accepts ``call`` for one expected call."""
        expected = entry.ground_truth[expected_index]
        name = next(iter(expected))
        description = next(f for f in entry.functions if f["name"] == name)
        result = self.simple_check(
            description, call, expected, self.language(entry.category), PLAIN_MODEL
        )
        return bool(result["valid"])

    def language(self, category: str) -> Any:
        if "javascript" in category:
            return self.languages["javascript"]
        if "java" in category:
            return self.languages["java"]
        return self.languages["python"]

    def load(self, category: str) -> list[Entry]:
        prompts = _read_jsonl(self.data_dir / f"BFCL_v4_{category}.json")
        answers = _read_jsonl(self.data_dir / "possible_answer" / f"BFCL_v4_{category}.json")
        if [p["id"] for p in prompts] != [a["id"] for a in answers]:
            raise AssertionError(f"{category}: prompts and answers are not aligned")
        return [
            Entry(p["id"], category, p["function"], a["ground_truth"])
            for p, a in zip(prompts, answers, strict=True)
        ]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    # BFCL names its JSON Lines files .json.
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_official() -> OfficialChecker:
    """Import BFCL's checker; the project's setup installs bfcl-eval, so its absence fails."""
    try:
        bfcl_eval = importlib.import_module("bfcl_eval")
    except ImportError:
        pytest.fail(
            "bfcl-eval is not installed: run `make setup` (pip install --no-deps bfcl-eval)"
        )
    if _MODEL_CONFIG not in sys.modules:
        stand_in = types.ModuleType(_MODEL_CONFIG)
        stand_in.MODEL_CONFIG_MAPPING = {  # type: ignore[attr-defined]
            PLAIN_MODEL: types.SimpleNamespace(underscore_to_dot=False),
            DOTLESS_MODEL: types.SimpleNamespace(underscore_to_dot=True),
        }
        sys.modules[_MODEL_CONFIG] = stand_in
    mapping = sys.modules[_MODEL_CONFIG].MODEL_CONFIG_MAPPING
    if PLAIN_MODEL not in mapping:
        raise RuntimeError(f"{_MODEL_CONFIG} was imported before the stand-in was registered")

    # Imported only now: the checker module reads the stand-in at import time.
    enums = importlib.import_module("bfcl_eval.constants.enums")
    checker = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
    return OfficialChecker(
        check=checker.ast_checker,
        simple_check=checker.simple_function_checker,
        java_convert=checker.java_type_converter,
        js_convert=checker.js_type_converter,
        languages={language.value: language for language in enums.Language},
        data_dir=Path(bfcl_eval.__file__).parent / "data",
    )
