"""Generalization bounds, one module per source paper, each a pure function of named quantities."""
