"""Command-line arguments of the tiny experiment runs the tests share (one place, so that every test that
trains the sparse-majority sweep through the CLI trains the same tiny model)."""

# one model of the sparse-majority task, 40 Adam steps, one thread on the CPU (about a second)
SPARSE_MAJORITY_TINY = [
    "--steps",
    "40",
    "--warmup",
    "5",
    "--n-train",
    "40",
    "--n-val",
    "30",
    "--n-test",
    "50",
    "--no-m-star",
    "--threads",
    "1",
    "--device",
    "cpu",
]
