"""Alerts that reach someone: one row per problem, sent after commit to pluggable backends.

A bottom-layer app: it imports no other app of the shop, so orders, payments and chat (and
anything else) can raise an alert without importing upward. The back office shows the rows.
"""
