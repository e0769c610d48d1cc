"""How a call runs: validation, the dispatcher and its threads, scripts, plans, the ledger.

A call the model (or a script, or a plan) makes passes validation, then the policy, then
runs on the dispatcher, which keeps one record of it in the ledger.
"""
