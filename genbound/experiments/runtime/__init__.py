"""The experiments' runtime floor: what every experiment package shares and none owns (the command-line
arguments they share, :mod:`genbound.experiments.runtime.cli`; results files, the machine record, seeds
and data paths as they move here). Nothing here imports an experiment package.
"""
