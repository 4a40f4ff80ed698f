"""Input corruption for the Part V pilots (issue 27): what a flip does to each task's inputs, the rate
of the draws, bad input, and that ``fit_stack`` draws a step's corruption once (``on_step``)."""

import pytest
import torch

from genbound.errors import ParameterError
from genbound.experiments import predict_gap as pg
from genbound.experiments.fullbatch import AdamProtocol, fit_stack


def test_sparse_majority_flip_is_the_embedding_of_the_flipped_bits():
    from genbound.experiments import sparse_majority as sm
    from genbound.experiments.predict_gap.family import _SM_SEQ_LEN
    from genbound.experiments.runtime.seeds import family_data_seed

    d = pg.make_task_data("sparse-majority", width=12, n_train=20, seed=3, n_max=40)
    ds = family_data_seed("sparse-majority", 3)
    t = sm.make_task(_SM_SEQ_LEN, d=12, seed=ds)
    bits, _ = t.sample(40, torch.Generator().manual_seed(ds + 1))
    assert torch.equal(d.X_train, t.embed(bits[:20]))
    # every position flipped: the inputs of the complemented bits; [CLS] untouched
    full = pg.corrupt_inputs(
        d.X_train, d.flip, 1.0, torch.Generator().manual_seed(0), unit=d.flip_unit
    )
    assert torch.allclose(full, t.embed(1 - bits[:20]), atol=1e-15)
    assert torch.equal(full[:, -1], d.X_train[:, -1]) and d.flip_unit == "position"


def test_digits_flip_inverts_pixel_intensities_only():
    d = pg.make_task_data("digits", width=12, n_train=25, seed=1, n_max=100)
    full = pg.corrupt_inputs(
        d.X_train, d.flip, 1.0, torch.Generator().manual_seed(0), unit=d.flip_unit
    )
    assert torch.allclose(full[:, :8, :8], 1 - d.X_train[:, :8, :8], atol=1e-15)
    assert torch.equal(full[:, :, 8:], d.X_train[:, :, 8:]) and torch.equal(
        full[:, 8], d.X_train[:, 8]
    )
    assert d.flip_unit == "coordinate"


@pytest.mark.parametrize("unit,rho", [("position", 0.1), ("coordinate", 0.3)])
def test_corruption_rate_and_unit(unit, rho):
    X, f = torch.zeros(400, 9, 5, dtype=torch.float64), torch.ones(400, 9, 5, dtype=torch.float64)
    out = pg.corrupt_inputs(X, f, rho, torch.Generator().manual_seed(7), unit=unit)
    if unit == "position":  # a row is flipped whole or not at all
        assert torch.all((out.sum(-1) == 0) | (out.sum(-1) == 5))
        share = float((out[..., 0] == 1).double().mean())
        n = 400 * 9
    else:
        share = float(out.mean())
        n = 400 * 9 * 5
    assert abs(share - rho) < 4 * (rho * (1 - rho) / n) ** 0.5
    # seeded: the same generator state gives the same draw
    again = pg.corrupt_inputs(X, f, rho, torch.Generator().manual_seed(7), unit=unit)
    assert torch.equal(out, again)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(rho=1.5), "rho"),
        (dict(rho=-0.1), "rho"),
        (dict(unit="row"), "unit"),
        (dict(flip=torch.ones(2, 3)), "shape"),
    ],
)
def test_corruption_bad_input(kw, match):
    args = dict(X=torch.zeros(2, 3, 1), flip=torch.ones(2, 3, 1), rho=0.5, gen=torch.Generator())
    args.update(kw)
    unit = args.pop("unit", "position")
    with pytest.raises(ParameterError, match=match):
        pg.corrupt_inputs(args["X"], args["flip"], args["rho"], args["gen"], unit=unit)


def test_fit_stack_calls_on_step_once_per_step_before_the_losses():
    calls = []
    P = {"w": torch.zeros(2, 3)}
    y = torch.tensor([[0, 1, 0], [1, 0, 1]])

    def loss_logits(Pa, idx, weights=None):
        calls.append(("loss", len(idx)))
        z = torch.stack([Pa["w"], -Pa["w"]], -1)
        return torch.nn.functional.cross_entropy(z.transpose(1, 2), y[idx], reduction="none").mean(
            -1
        ), z

    out = fit_stack(
        P,
        loss_logits,
        y,
        AdamProtocol(lr=0.1, steps=30, warmup=1, eval_every=30),
        progress=False,
        on_step=lambda step: calls.append(("step", step)),
    )
    steps = [c[1] for c in calls if c[0] == "step"]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 2
    assert calls[0] == ("step", 1) and all(c[0] == "loss" for c in calls[1:2])
    assert all(out.fitted)


def test_pilot_rows_without_corruption_equal_the_family_path():
    # rho = 0 takes the family's code path: same stack, same rows (the corruption hook is not installed)
    cfg = pg.FamilyConfig(
        depths=(1,),
        widths=(12,),
        lrs=(1e-2,),
        init_scales=(1.0,),
        batches=(0,),
        weight_decays=(0.0,),
        label_noises=(0.0,),
        n_train={"digits": (40,)},
        tasks=("digits",),
        seeds=2,
        stack=2,
        steps=40,
        warmup=5,
    )
    setting = cfg.settings()[0]
    a = pg.train_setting(setting, [0, 1], cfg)
    b = pg.train_setting({**setting, "input_flip": 0.0}, [0, 1], cfg)
    c = pg.train_setting({**setting, "input_flip": 0.2}, [0, 1], cfg)
    strip = lambda r: {k: v for k, v in r.row().items() if k != "seconds"}  # noqa: E731
    assert [strip(r) for r in a] == [strip(r) for r in b]
    assert [strip(r) for r in a] != [strip(r) for r in c]
