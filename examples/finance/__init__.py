"""A small personal-finance toolbox and an eval file of ten tasks over it.

tooluse eval examples/finance/evals.yaml --tools examples.finance.tools:toolbox
"""
