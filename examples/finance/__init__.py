"""A small personal-finance assistant: typed tools, its ledger as the run's
dependency, a third-party MCP server for the date, approval before a payment, a
conversation kept in SQLite, and an eval file of ten tasks over the same tools.

python -m examples.finance.assistant --model scripted:examples/finance/session.jsonl
tooluse eval examples/finance/evals.yaml
"""
