"""Tasks and sessions: what people ask for in a room and each agent's attempt at it, run
on Celery workers; their events, approvals, reviews, provider calls and observation
ledgers; the pages, sockets and services around them."""
