"""Constrained decoding: schemas normalized for grammars, grammars compiled with llguidance.

The grammar text builders and the schema normalizer are pure Python; only
`GrammarCompiler` needs llguidance (the ``local`` extra).
"""

from ._engine import GrammarCompiler, GrammarError, TokenMask
from ._gbnf import to_gbnf
from ._grammars import (
    CALL_CLOSE,
    CALL_OPEN,
    Grammar,
    GrammarTool,
    answer_grammar,
    call_grammar,
    calls_grammar,
    code_grammar,
    python_calls_grammar,
)
from ._normalize import NormalizedSchema, normalize_schema
from ._python_grammar import is_call_name

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "Grammar",
    "GrammarCompiler",
    "GrammarError",
    "GrammarTool",
    "NormalizedSchema",
    "TokenMask",
    "answer_grammar",
    "call_grammar",
    "calls_grammar",
    "code_grammar",
    "is_call_name",
    "normalize_schema",
    "python_calls_grammar",
    "to_gbnf",
]
