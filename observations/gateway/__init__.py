"""The context gateway core: plain Python over plain data, no Django.

It decides what every model request of a session contains. The runtime calls it at
each step boundary; the replay evaluator calls it offline. `tests/gateway/` holds a
guard that fails if anything here imports Django.
"""
