"""Broadcast without code (issue 24): pull feeds for video switchers (feeds.py, rows.py)
and text files for OBS/Wirecast text sources (textfiles.py, cli.py)."""
