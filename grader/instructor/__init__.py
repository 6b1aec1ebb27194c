"""Authoring checks: validate, its remembered verdicts, and the case-by-mistake matrix."""
