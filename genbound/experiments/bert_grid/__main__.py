"""``python -m genbound.experiments.bert_grid train|extract ...``: the parser of
``genbound experiment bert-grid`` (:func:`~genbound.experiments.bert_grid._cli.add_arguments`) under the
module's name; an error genbound raises on purpose is one ``genbound: error:`` line, exit status 2.
"""

from __future__ import annotations

import argparse
import sys

from ...errors import GenboundError
from ._cli import add_arguments


def main(argv=None) -> int:
    """Parse ``argv`` (default: the command line) and run the subcommand; its exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m genbound.experiments.bert_grid",
        description="Train the BERT grid of Part III and store its spectra.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except GenboundError as exc:
        print(f"genbound: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
