"""The experiments' runtime floor: what every experiment package shares and none owns: the command-line
arguments they share (:mod:`genbound.experiments.runtime.cli`), results files
(:mod:`genbound.experiments.runtime.results`), the machine record
(:mod:`genbound.experiments.runtime.machine`), seeds (:mod:`genbound.experiments.runtime.seeds`) and the
paths of the saved data (:mod:`genbound.experiments.runtime.paths`). Nothing here imports an experiment
package.
"""
