"""The grammars in llama.cpp's GBNF, for where llguidance cannot be used.

llama.cpp's JSON-Schema converter enforces less than llguidance (it ignores
``format`` and numeric bounds, among others) and its sampler is slower, so this
is a fallback, used only when llguidance is missing or refuses a grammar, and
always with a warning.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._grammars import CALL_CLOSE, CALL_OPEN, Grammar

__all__ = ["to_gbnf"]


#: llama.cpp spells a length bound as that many nested optionals, and sampling
#: under a bound of a few hundred crawls; longer bounds are left to the
#: dispatcher's validation after decoding.
_MAX_GBNF_LENGTH = 32


def _loose_lengths(node: Any) -> Any:
    if isinstance(node, list):
        return [_loose_lengths(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _loose_lengths(value) for key, value in node.items()}
    if isinstance(out.get("maxLength"), int) and out["maxLength"] > _MAX_GBNF_LENGTH:
        del out["maxLength"]
    return out


def to_gbnf(grammar: Grammar) -> str:
    """`grammar` in GBNF; raises ValueError for a grammar with no known shape."""
    shape = grammar.shape
    if shape is None:
        raise ValueError("this grammar has no GBNF form (it was not built by tooluse.decoding)")
    if shape.kind == "code":
        return "\n".join(
            [
                'root ::= answer | prose? "```python\\n" code',
                "answer ::= [^`]+",
                "prose ::= [^`]+",
                'code ::= ([^`] | "`" [^`] | "``" [^`])* "\\n```"',
            ]
        )
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    schema = _loose_lengths(json.loads(shape.body_schema))
    schema.pop("x-guidance", None)
    # Keep the converter's own rule names apart from ours.
    body = re.sub(
        r"^root ::=", "call-body ::=", json_schema_to_gbnf(json.dumps(schema)), flags=re.M
    )
    calls = 'calls ::= call ("\\n" call)*' if shape.parallel else "calls ::= call"
    rules = [
        "root ::= calls | answer" if shape.allow_answer else "root ::= calls",
        calls,
        f'call ::= "{CALL_OPEN}" call-body "{CALL_CLOSE}"',
        body,
    ]
    if shape.allow_answer:
        rules.append("answer ::= [^<\\x20\\t\\n] [^\\x00]*")
    return "\n".join(rules)
