"""Developer tools of the project that are not part of any layer (``python -m tools.diagrams``)."""
