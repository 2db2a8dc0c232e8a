"""Long-session evals: scenarios, the scripted agent, checks, the runner and the ledger
(docs/evals.md)."""
