"""The gateway served as a model endpoint: OpenAI Chat Completions (``/v1/chat/completions``),
Anthropic Messages (``/v1/messages``) and ``/v1/models``, for agents that run elsewhere.

- ``keys``: gateway keys (made on the room page, stored hashed, revocable) and the
  lookup that turns a request's key into the room and agent profile it may act as.
- ``wire``: plain Python: the checks of a client's request body, the provider-shaped
  error bodies, the model lists.
- ``upstream``: the call to the agent profile's provider through its official SDK,
  relayed to the client as it comes (streamed or not).
- ``views``: thin async views over the three.
"""
