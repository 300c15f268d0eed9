"""The threaded implementation of the queue contract (placeholder until issue 3 lands)."""
