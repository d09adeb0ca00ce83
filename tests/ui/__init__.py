"""Tests of the app explorer page in a real browser."""
