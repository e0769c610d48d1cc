"""What a run may do: approvals before a call, provenance of what tools returned, scopes.

The dispatcher asks these before running a call; the run records what they decided.
"""

from ._approval import Approval, ApprovalPolicy, ApprovalRecord, ApprovalRequest, ProvenancePolicy
from ._approval_store import ApprovalStore
from ._provenance import FREE_TEXT, Suspicious

__all__ = [
    "FREE_TEXT",
    "Approval",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalRequest",
    "ApprovalStore",
    "ProvenancePolicy",
    "Suspicious",
]
