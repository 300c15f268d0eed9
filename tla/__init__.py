"""The TLA+ specifications and the TLC runner (``python -m tla``)."""
