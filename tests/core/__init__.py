"""Tests of the shared machinery in ``fastmv/_core`` that no solver test covers."""
