"""AgentDojo (Debenedetti et al. 2024) through tooluse's dispatcher and conventions.

Needs the ``agentdojo`` package (``pip install 'tooluse[agentdojo]'``); the
suites ship with it. ``tooluse bench agentdojo`` drives this; in Python::

    from tooluse.eval.agentdojo import AgentDojoBench, AgentDojoConfig

    AgentDojoBench(AgentDojoConfig(out=Path("runs/dojo"), model="obedient",
                                   suites=("banking",), limit=2)).run()

Scores are AgentDojo's own: each user task's ``utility`` check and each
injection task's ``security`` check.
"""

from ._models import GroundTruthModel, Instruction
from ._report import Figures, figures, summary_lines, write_agentdojo_summary
from ._row import AgentDojoRow
from ._run import (
    ATTACK,
    CONVENTIONS,
    DEFENSES,
    AgentDojoBench,
    AgentDojoConfig,
    read_agentdojo_rows,
)
from ._suites import DEFAULT_VERSION, SUITE_NAMES, Suite, load_suite, load_suites
from ._tools import ToolFacts, build_toolbox, tool_facts

__all__ = [
    "ATTACK",
    "CONVENTIONS",
    "DEFAULT_VERSION",
    "DEFENSES",
    "SUITE_NAMES",
    "AgentDojoBench",
    "AgentDojoConfig",
    "AgentDojoRow",
    "Figures",
    "GroundTruthModel",
    "Instruction",
    "Suite",
    "ToolFacts",
    "build_toolbox",
    "figures",
    "load_suite",
    "load_suites",
    "read_agentdojo_rows",
    "summary_lines",
    "tool_facts",
    "write_agentdojo_summary",
]
