"""The ``shotclock`` command: parsing and the composition root.
"""
