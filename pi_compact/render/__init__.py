"""Rendering messages as Pi serialises them for its summary requests (``serialize``)."""
