"""What a run may do: approvals before a call, provenance of what tools returned, scopes.

The dispatcher asks these before running a call; the run records what they decided.
"""
