"""Experiments behind the book: seeded data sets and small training loops (CPU-sized, larger on a GPU)."""
