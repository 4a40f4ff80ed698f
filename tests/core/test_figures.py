"""Figures that read: every plotting function of genbound, drawn at the column width in the book's style,
has no overlapping tick labels, no tick label or axis label outside the figure and no panels running
into each other (genbound.plotting.tick_label_problems, on the Agg backend)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from genbound import plotting  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_checker_sees_overlap_and_labels_outside():
    """The check can fail: crowded labels on a narrow log axis, a label pushed out of the figure."""
    fig, ax = plotting.new_axes()
    ax.set_xscale("log")
    ax.plot([2.6e-1, 3.4e-1], [1, 2])  # less than a decade: matplotlib labels the minor ticks
    ax.tick_params(axis="x", labelsize=14)
    probs = plotting.tick_label_problems(fig)
    assert any("x: tick labels overlap" in p for p in probs), probs
    plotting.fit_tick_labels(fig)
    assert plotting.tick_label_problems(fig) == []
    assert len([t for t in ax.get_xticklabels(minor=True) if t.get_text()]) == 0

    fig2, ax2 = plotting.new_axes()
    ax2.plot([0, 1], [0, 1])
    ax2.set_ylabel("y")
    ax2.yaxis.set_label_coords(-0.5, 0.5)
    assert any("outside the figure" in p for p in plotting.tick_label_problems(fig2))

    fig3, (a, b) = plotting.new_axes(2)
    a.set_ylabel("a long label that runs into the next panel " * 2)
    b.plot([0, 1e6], [0, 1e6])
    a.yaxis.set_label_coords(1.6, 0.5)
    assert plotting.tick_label_problems(fig3)


def test_new_axes_draws_at_the_column_width():
    for shape in [(1, 1), (2, 1), (2, 2), (3, 1)]:
        fig, _ = plotting.new_axes(*shape)
        assert fig.get_size_inches()[0] == plotting.COLUMN_WIDTH


def test_plot_schatten_curve():
    fig, ax = plotting.new_axes()
    g = torch.Generator().manual_seed(0)
    for name, scale in [("fast decay", 0.5), ("flat", 1.0)]:
        s = torch.sort(
            torch.rand(40, generator=g, dtype=torch.float64) ** (1 / scale), descending=True
        ).values
        plotting.plot_schatten_curve(s, ax=ax, label=name)
    ax.legend()
    fig.tight_layout()
    assert plotting.tick_label_problems(fig) == []


def test_plot_contributions(tmp_path):
    from genbound import spectral_adaptive_bound
    from genbound.testing import make_bert_checkpoint

    make_bert_checkpoint(tmp_path, layers=6, heads=4, hidden=16, d_ff=32, seed=0, std=0.3)
    r = spectral_adaptive_bound(tmp_path)
    ax = plotting.plot_contributions(r)
    ax.figure.tight_layout()
    assert plotting.tick_label_problems(ax.figure) == []
    assert ax.get_yscale() == "log" and len(ax.get_legend().get_texts()) == 4


def test_plot_sweep_on_the_saved_sweep():
    """The sparse-majority chapter's figure, from its saved data, in the shared 2 x 2 column layout."""
    from genbound.experiments import sparse_majority as sm

    df = sm.read_csv()  # the saved sweep, through the results-file reader
    fitted = df[df["fitted"]]
    fig, axes = plotting.new_axes(2, 2, height=5.6)
    sm.plot_sweep(fitted, axes.ravel(), m=300)
    fig.tight_layout()
    plotting.fit_tick_labels(fig)
    assert plotting.tick_label_problems(fig) == []


def test_fit_tick_labels_on_narrow_log_panels():
    """The Part V layout: four log-x panels, values spanning a fraction of a decade (the overlapping
    "2.6x10^..." labels the issue reports), fixed by fit_tick_labels."""
    rng = np.random.default_rng(0)
    fig, axes = plotting.new_axes(2, 2, height=5.6, sharey=True)
    for ax, (lo, hi) in zip(axes.ravel(), [(2.55e4, 2.75e4), (1e2, 1e5), (0.9, 1.3), (3e-3, 4e-3)]):
        ax.scatter(rng.uniform(lo, hi, 30), rng.uniform(0, 0.3, 30), s=10)
        ax.set_xscale("log")
        ax.set_xlabel("measure")
    fig.tight_layout()
    assert any("tick labels overlap" in p for p in plotting.tick_label_problems(fig))
    plotting.fit_tick_labels(fig)
    assert plotting.tick_label_problems(fig) == []
