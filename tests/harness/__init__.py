"""Trace harness: real instrumentation libraries replaying recorded OpenAI cassettes.

See conftest.py (``run_instrumented`` fixture), scenario.py and make_venvs.py.
"""
