"""Helpers shared by the tests: import them from here, not from conftest files."""
