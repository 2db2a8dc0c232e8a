"""Reading a session back for people: trace analysis, transcript, context chart, and the
live loop alarm. Everything here is plain Python over plain facts (sessions.analysis.facts)
except `selectors`, which builds those facts from the database."""
