"""How a call runs: validation, the dispatcher and its threads, scripts, plans, the ledger.

A call the model (or a script, or a plan) makes passes validation, then the policy, then
runs on the dispatcher, which keeps one record of it in the ledger.
"""

from ._dispatch import DirectRun, Dispatcher, Ledger
from ._scripts import ScriptRun, arun_script, run_script

__all__ = ["DirectRun", "Dispatcher", "Ledger", "ScriptRun", "arun_script", "run_script"]
