"""The pure core: the clock, the match clock, the frame rules, commands, events, errors.

No I/O: nothing here imports asyncio, time, sockets, SQLite, FastAPI or a driver.
"""
