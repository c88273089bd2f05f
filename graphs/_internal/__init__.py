"""LangGraph's private `langgraph._internal` path, for the few names ported code reads from it.

Only what compares with something graphs gives, or the one hook it calls, is here (see
`_constants`); the rest of LangGraph's private modules (its other config keys, its Pregel
pieces) has no counterpart.
"""
