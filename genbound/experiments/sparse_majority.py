"""The sparse-majority experiment of Trauger & Tewari, reproduced and extended. Book: :ref:`ch-sparse-majority`.

The task (protocol of the authors' public script, see the digest section 6): a sequence of ``T`` i.i.d.
uniform bits; the label is the majority of ``s = 9`` fixed positions drawn once per run. Token ``b`` is
embedded as ``e_b`` (two random vectors, Gram-Schmidt orthogonalised, each scaled to unit l1 norm), a
``[CLS]`` row ``e_cls`` (orthogonalised against both, unit l1) is appended **last**, and the authors'
sinusoidal encoding ``PE[j, i] = sin(j / 10000^(i/d))`` (even ``i``) or ``cos(...)`` (odd ``i``) is added
to every row ``j = 0..T``. The model is :class:`genbound.nets.ReferenceTransformer` with ``d = 64``, two
heads of width 64, biases, score scale ``1/8``, ReLU, a dense map and a 2-logit readout at the last row,
initialised as Keras initialises the original (:func:`keras_init_`). Training: binary cross-entropy on
one-hot targets, SGD (lr 0.01, momentum 0.9, ``lr <- max(0.001, 0.999 lr)`` at the start of every
epoch), batches of 128, stopping at the end of the first epoch whose (running, Keras-style) training
accuracy is 1.0, or at ``max_epochs``.

What differs from the original, and why, is listed in the chapter. In short: seeds are fixed; the
checkpoint is chosen on a **separate validation split**, never on the test set (the original chose the
lowest test loss); validation is evaluated every ``eval_every`` epochs; the test set is evaluated once
at the end (and, only to show what the original selection would have given, at the same cadence as the
validation set); epochs are capped and capped runs are reported, not dropped.

Speed. Only the ``[CLS]`` row reaches the output and every non-``[CLS]`` row is ``e_{b_t} + PE_t``, so
the forward pass needs neither the ``T x T`` attention matrix nor the embedded sequences:
:func:`cls_logits` evaluates exactly ``ReferenceTransformer.forward`` (a test compares them) from the bits,
in ``O(T d)`` per sequence, and it trains several seeds at once (a leading model axis ``K``; the seeds
do not interact, each has its own data, initialisation, shuffling and stopping epoch).

>>> task = make_task(12, seed=0)
>>> bits, y = task.sample(4, torch.Generator().manual_seed(1))
>>> bits.shape, task.embed(bits).shape
(torch.Size([4, 12]), torch.Size([4, 13, 64]))
>>> bool((y == (bits[:, task.positions].sum(1) >= 5).long()).all())
True
>>> [round(float(v), 12) for v in task.embeddings.abs().sum(1)]
[1.0, 1.0, 1.0]
"""

from __future__ import annotations

import csv
import math
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable, Iterable, Sequence

import torch

from .._validate import check_positive_int, check_real
from ..device import resolve_device, resolve_dtype
from ..errors import ParameterError

__all__ = ["D_MODEL", "N_HEADS", "D_HEAD", "S_RELEVANT", "RESULT_KEYS", "sinusoidal_encoding",
           "token_embeddings", "SparseMajorityTask", "make_task", "SparseMajorityConfig", "build_model",
           "keras_init_", "stack_parameters", "load_stacked", "cls_logits", "bce_one_hot",
           "evaluate_stack", "ramp_risk", "bounds_for", "sample_size_needed", "TrainOutcome", "train_stack", "RunResult", "initial_model", "run_seq_len", "run_sweep",
           "write_csv", "read_csv", "SAVED_SWEEP", "to_frame", "summarize", "plot_sweep"]

#: Width, heads, head width and number of relevant positions of the authors' script.
D_MODEL, N_HEADS, D_HEAD, S_RELEVANT = 64, 2, 64, 9

#: Keys of every run record (the JSON objects of ``genbound experiment sparse-majority --json``).
RESULT_KEYS = ("seq_len", "seed", "train_acc", "test_acc", "acc_gap", "train_loss", "test_loss",
               "loss_gap", "l11_norm_sum", "tt_bound", "edelman_bound", "epochs", "seconds")

#: The saved larger sweep (CSV) and its notes (command, machine, wall time).
SAVED_SWEEP = Path(__file__).resolve().parents[1] / "data" / "sparse_majority_sweep.csv"

_PARAM_NAMES = ("W_Q", "b_Q", "W_K", "b_K", "W_V", "b_V", "W_O", "b_O", "W_C", "b_C", "w", "b_w")


# ---------------------------------------------------------------------------------------------- data
def sinusoidal_encoding(n_positions: int, d: int, *, dtype=torch.float64) -> torch.Tensor:
    """The authors' positional encoding: ``PE[j, i] = sin(j / 10000^(i/d))`` for even ``i``, ``cos`` for odd.

    The exponent is ``i / d`` (not the usual ``2 floor(i/2) / d``), as in the original script.

    >>> pe = sinusoidal_encoding(3, 4)
    >>> pe.shape, pe[0].tolist()
    (torch.Size([3, 4]), [0.0, 1.0, 0.0, 1.0])
    """
    n_positions = check_positive_int(n_positions, "n_positions")
    d = check_positive_int(d, "d")
    j = torch.arange(n_positions, dtype=torch.float64)[:, None]
    i = torch.arange(d, dtype=torch.float64)[None, :]
    angle = j / 10000.0 ** (i / d)
    return torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle)).to(resolve_dtype(dtype))


def token_embeddings(d: int, generator: torch.Generator) -> torch.Tensor:
    """Rows ``e_0, e_1, e_cls`` (shape ``(3, d)``): ``U(-1, 1)^d`` draws, Gram-Schmidt, unit l1 norm each.

    ``e_1`` is orthogonalised against ``e_0``, ``e_cls`` against both (in that order, as in the original).

    >>> E = token_embeddings(8, torch.Generator().manual_seed(0))
    >>> abs(float(E[0] @ E[1])) < 1e-15 and abs(float(E[2] @ E[1])) < 1e-15
    True
    """
    d = check_positive_int(d, "d", minimum=3)
    e = torch.rand(3, d, generator=generator, dtype=torch.float64) * 2 - 1
    e0, e1, ec = e[0], e[1], e[2]
    e1 = e1 - (e1 @ e0) / (e0 @ e0) * e0
    ec = ec - (ec @ e0) / (e0 @ e0) * e0
    ec = ec - (ec @ e1) / (e1 @ e1) * e1
    E = torch.stack([e0, e1, ec])
    return E / E.abs().sum(1, keepdim=True)


@dataclass(frozen=True)
class SparseMajorityTask:
    """One instance of the task: ``seq_len`` bits, the ``s`` relevant ``positions``, ``embeddings`` ``(3, d)``
    (rows ``e_0, e_1, e_cls``) and the positional ``encoding`` ``(seq_len + 1, d)``, all float64."""

    seq_len: int
    s: int
    positions: torch.Tensor
    embeddings: torch.Tensor
    encoding: torch.Tensor

    @property
    def d(self) -> int:
        """Token width."""
        return int(self.embeddings.shape[1])

    def label(self, bits: torch.Tensor) -> torch.Tensor:
        """``1{sum of the relevant bits >= s/2}`` (the majority, ``s`` odd), as ``int64``."""
        return (bits[..., self.positions].long().sum(-1) * 2 >= self.s).long()

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` i.i.d. sequences: bits ``(n, seq_len)`` (``uint8``, duplicates allowed) and labels ``(n,)``."""
        n = check_positive_int(n, "n (number of samples)")
        bits = torch.randint(0, 2, (n, self.seq_len), generator=generator, dtype=torch.uint8)
        return bits, self.label(bits)

    def embed(self, bits: torch.Tensor, *, dtype=torch.float64, device=None) -> torch.Tensor:
        """The model input ``X`` ``(n, seq_len + 1, d)``: rows ``e_{b_t} + PE_t``, then ``e_cls + PE_T``."""
        E = self.embeddings
        rows = E[bits.long()]                                             # (n, T, d)
        cls = E[2].expand(bits.shape[0], 1, E.shape[1])
        X = torch.cat([rows, cls], dim=1) + self.encoding
        return X.to(dtype=resolve_dtype(dtype), device=resolve_device(device) if device else None)

    def input_radius(self) -> float:
        """``B_X = max ||x_t||_2`` over every row any sequence can have (``3 (T+1)`` candidates), exact."""
        tokens = self.embeddings[:2, None, :] + self.encoding[None, :-1, :]      # (2, T, d)
        cls = self.embeddings[2] + self.encoding[-1]
        return max(float(torch.linalg.vector_norm(tokens, dim=-1).max()), float(torch.linalg.vector_norm(cls)))


def make_task(seq_len: int, *, s: int = S_RELEVANT, d: int = D_MODEL, seed: int = 0) -> SparseMajorityTask:
    """A seeded task: the relevant positions (``s`` of ``seq_len``, without replacement), then the embeddings.

    Raises :class:`~genbound.errors.ParameterError` for ``s`` even or ``< 1`` and for ``seq_len < s``.

    >>> make_task(5, s=9)
    Traceback (most recent call last):
    ...
    genbound.errors.ParameterError: seq_len T = 5 must be >= s = 9 (the number of relevant positions)
    """
    s, seq_len = _check_task(seq_len, s)
    gen = torch.Generator().manual_seed(int(seed))
    positions = torch.sort(torch.randperm(seq_len, generator=gen)[:s]).values
    return SparseMajorityTask(seq_len, s, positions, token_embeddings(d, gen),
                              sinusoidal_encoding(seq_len + 1, d))


def _check_task(seq_len, s) -> tuple[int, int]:
    s = check_positive_int(s, "s (number of relevant positions)")
    if s % 2 == 0:
        raise ParameterError(f"s = {s} must be odd so that the majority is never tied")
    seq_len = check_positive_int(seq_len, "seq_len T")
    if seq_len < s:
        raise ParameterError(f"seq_len T = {seq_len} must be >= s = {s} (the number of relevant positions)")
    return s, seq_len


# ---------------------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class SparseMajorityConfig:
    """Every setting of one run; the defaults are the authors' except where the chapter says otherwise.

    ``select``: which checkpoint the reported numbers use: ``"val"`` (lowest validation loss, ours),
    ``"test"`` (lowest test loss, the original's choice) or ``"last"`` (the stopping epoch).
    ``eval_every``: epochs between validation (and, for ``track_test_selection``, test) evaluations;
    the stopping epoch is always evaluated. ``dtype``: training precision (norms and bounds are
    evaluated in float64 regardless). ``delta``, ``margin``: confidence and ramp margin of the bounds;
    ``m_star``: also compute :func:`sample_size_needed` (about a second per run).
    """

    s: int = S_RELEVANT
    d: int = D_MODEL
    n_heads: int = N_HEADS
    d_head: int = D_HEAD
    n_train: int = 300
    n_val: int = 1000
    n_test: int = 10_000
    batch_size: int = 128
    lr: float = 0.01
    momentum: float = 0.9
    lr_decay: float = 0.999
    lr_floor: float = 0.001
    max_epochs: int = 2000
    eval_every: int = 10
    select: str = "val"
    track_test_selection: bool = True
    dtype: str = "float32"
    delta: float = 0.05
    margin: float = 1.0
    m_star: bool = True
    eval_chunk: int = 2000

    def validated(self) -> "SparseMajorityConfig":
        """Return ``self`` after checking every field (raises :class:`~genbound.errors.ParameterError`)."""
        _check_task(self.s, self.s)
        for name in ("d", "n_heads", "d_head", "n_train", "n_val", "n_test", "batch_size", "max_epochs",
                     "eval_every", "eval_chunk"):
            check_positive_int(getattr(self, name), name)
        if self.d < 3:
            raise ParameterError(f"d = {self.d} must be >= 3 (three orthogonal token embeddings)")
        check_real(self.lr, "lr", lo=0.0, lo_open=True)
        check_real(self.momentum, "momentum", lo=0.0, hi=1.0, hi_open=True)
        check_real(self.lr_decay, "lr_decay", lo=0.0, lo_open=True, hi=1.0)
        check_real(self.lr_floor, "lr_floor", lo=0.0)
        check_real(self.delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        check_real(self.margin, "margin", lo=0.0, lo_open=True)
        if self.select not in ("val", "test", "last"):
            raise ParameterError(f"select must be 'val', 'test' or 'last', got {self.select!r}")
        if self.select == "test" and not self.track_test_selection:
            raise ParameterError("select='test' needs track_test_selection=True")
        resolve_dtype(self.dtype)
        return self


# ---------------------------------------------------------------------------------------------- model
def build_model(config: SparseMajorityConfig | None = None, *, seed: int = 0, dtype=torch.float64,
                device=None, keras_init: bool = True):
    """The authors' network as a :class:`genbound.nets.ReferenceTransformer` (one layer, 2 logits, biases).

    With ``keras_init`` the weights are re-drawn as Keras draws them (:func:`keras_init_`).

    >>> net = build_model(seed=0)
    >>> net.n_heads, net.d_head, net.out_dim, net.bias, net.score_scale
    (2, 64, 2, True, 0.125)
    """
    from ..nets import ReferenceTransformer

    cfg = (config or SparseMajorityConfig()).validated()
    net = ReferenceTransformer(cfg.d, n_layers=1, n_heads=cfg.n_heads, d_head=cfg.d_head, out_dim=2,
                               activation="relu", row_norm=False, bias=True,
                               score_scale=1.0 / math.sqrt(cfg.d_head), cls_index=-1, dense=True,
                               dtype=dtype, device=device, seed=seed)
    if keras_init:
        keras_init_(net, torch.Generator().manual_seed(int(seed)))
    return net


def _glorot_limit(shape: Sequence[int]) -> float:
    """Keras' Glorot-uniform limit ``sqrt(6 / (fan_in + fan_out))`` with Keras' fans for ``shape``
    (for ``len(shape) > 2`` the leading axes form a receptive field multiplying both fans)."""
    rf = math.prod(shape[:-2]) if len(shape) > 2 else 1
    return math.sqrt(6.0 / (shape[-2] * rf + shape[-1] * rf))


@torch.no_grad()
def keras_init_(net, generator: torch.Generator):
    """Re-draw ``net``'s weights as the original Keras model does, in place; returns ``net``.

    Keras' ``MultiHeadAttention`` kernels have shapes ``(d, H, d_head)`` (query, key, value) and
    ``(H, d_head, d)`` (output) and are Glorot-uniform with Keras' fans for 3-d kernels; ``Dense`` is
    Glorot-uniform; the readout is ``random_normal`` (standard deviation 0.05); every bias is zero.
    (Keras' defaults are recalled, not read from the Keras source.)
    """
    lay = net.layers[0]
    d, H, dh = net.d, net.n_heads, net.d_head

    def uni(keras_shape, perm):
        lim = _glorot_limit(keras_shape)
        t = (torch.rand(*keras_shape, generator=generator, dtype=torch.float64) * 2 - 1) * lim
        return t.permute(*perm)

    for name in ("W_Q", "W_K", "W_V"):
        getattr(lay, name).copy_(uni((d, H, dh), (1, 0, 2)))      # keras (d, H, dh) -> ours (H, d, dh)
    lay.W_O.copy_(uni((H, dh, d), (0, 1, 2)))
    lay.W_C.copy_(uni((d, d), (0, 1)))
    net.w.copy_(torch.randn(d, net.out_dim, generator=generator, dtype=torch.float64) * 0.05)
    for p in (lay.b_Q, lay.b_K, lay.b_V, lay.b_O, lay.b_C, net.b_w):
        p.zero_()
    return net


def stack_parameters(nets, *, dtype=torch.float32, device=None) -> dict[str, torch.Tensor]:
    """The parameters of one-layer nets stacked along a new leading model axis ``K`` (leaf tensors
    with ``requires_grad``), keyed by the names of :class:`genbound.nets.ReferenceTransformer`."""
    dev = resolve_device(device)
    out = {}
    for name in _PARAM_NAMES:
        ts = [_param(net, name).detach() for net in nets]
        out[name] = torch.stack(ts).to(dtype=resolve_dtype(dtype), device=dev).requires_grad_(True)
    return out


def _param(net, name):
    return getattr(net, name) if name in ("w", "b_w") else getattr(net.layers[0], name)


@torch.no_grad()
def load_stacked(net, params: dict[str, torch.Tensor], k: int):
    """Copy model ``k`` of a stacked parameter dict into ``net`` (in ``net``'s dtype); returns ``net``."""
    for name in _PARAM_NAMES:
        p = _param(net, name)
        p.copy_(params[name][k].to(dtype=p.dtype, device=p.device))
    return net


def cls_logits(params: dict[str, torch.Tensor], bits: torch.Tensor, embeddings: torch.Tensor,
               encoding: torch.Tensor, score_scale: float) -> torch.Tensor:
    """Logits ``(K, n, 2)`` of ``K`` stacked one-layer nets on their own bit sequences, exactly.

    ``bits`` ``(K, n, T)`` (0/1), ``embeddings`` ``(K, 3, d)``, ``encoding`` ``(T + 1, d)``. Equals
    ``ReferenceTransformer.forward(task.embed(bits))`` for each model, computed from the structure
    of the input: the ``[CLS]`` query ``q`` is the same for every sequence, the score of row ``t`` is
    ``u . x_t`` with ``u = s W_K q`` (the key bias adds a constant that softmax ignores), ``u . x_t =
    u . e_{b_t} + u . PE_t``, and the attention-weighted input is ``m_0 e_0 + m_1 e_1 + a_T e_cls + a PE``.
    """
    P = params
    dt = P["W_Q"].dtype
    b = bits.to(dt)
    E = embeddings.to(dt)
    pe = encoding.to(dt)
    T = b.shape[-1]
    x_cls = E[:, 2] + pe[-1]                                                       # (K, d)
    q = torch.einsum("kd,khde->khe", x_cls, P["W_Q"]) + P["b_Q"]                   # (K, H, dh)
    u = score_scale * torch.einsum("khe,khde->khd", q, P["W_K"])                   # (K, H, d)
    eu = torch.einsum("kjd,khd->khj", E, u)                                        # (K, H, 3)
    pu = torch.einsum("td,khd->kht", pe, u)                                        # (K, H, T+1)
    s_tok = (eu[:, None, :, 0, None] + b[:, :, None, :] * (eu[:, :, 1] - eu[:, :, 0])[:, None, :, None]
             + pu[:, None, :, :T])                                                 # (K, n, H, T)
    s_cls = (eu[:, :, 2] + pu[:, :, T])[:, None, :, None].expand(-1, b.shape[1], -1, -1)
    A = torch.softmax(torch.cat([s_tok, s_cls], dim=-1), dim=-1)                   # (K, n, H, T+1)
    a_tok = A[..., :T]
    m1 = torch.einsum("knht,knt->knh", a_tok, b)
    m0 = a_tok.sum(-1) - m1
    xbar = (m0[..., None] * E[:, None, None, 0] + m1[..., None] * E[:, None, None, 1]
            + A[..., T, None] * E[:, None, None, 2] + torch.einsum("knht,td->knhd", A, pe))
    v = torch.einsum("knhd,khde->knhe", xbar, P["W_V"]) + P["b_V"][:, None]
    o = torch.einsum("knhe,khef->knf", v, P["W_O"]) + P["b_O"][:, None]
    y = torch.einsum("knf,kfg->kng", torch.relu(o), P["W_C"]) + P["b_C"][:, None]
    return torch.einsum("kng,kgo->kno", y, P["w"]) + P["b_w"][:, None]


def bce_one_hot(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Keras' ``BinaryCrossentropy(from_logits=True)`` on one-hot targets: the mean over the two logits
    (and over the sequence axis) of the sigmoid cross-entropies; returns one loss per model ``(K,)``.

    >>> z = torch.tensor([[[0.0, 0.0]]], dtype=torch.float64)
    >>> abs(bce_one_hot(z, torch.tensor([[1]])).item() - math.log(2)) < 1e-15
    True
    """
    target = torch.nn.functional.one_hot(labels, 2).to(logits.dtype)
    per = torch.nn.functional.binary_cross_entropy_with_logits(logits, target, reduction="none")
    return per.mean(dim=(-2, -1))


@torch.no_grad()
def evaluate_stack(params, bits, labels, embeddings, encoding, score_scale, *, chunk: int = 2000):
    """Loss (:func:`bce_one_hot`) and argmax accuracy of every model on its own data, in chunks:
    returns two tensors ``(K,)`` (float64)."""
    K, n = bits.shape[:2]
    loss = torch.zeros(K, dtype=torch.float64, device=bits.device)
    correct = torch.zeros(K, dtype=torch.float64, device=bits.device)
    for st in range(0, n, chunk):
        bb, yy = bits[:, st:st + chunk], labels[:, st:st + chunk]
        z = cls_logits(params, bb, embeddings, encoding, score_scale)
        loss += bce_one_hot(z, yy).double() * bb.shape[1]
        correct += (z.argmax(-1) == yy).double().sum(1)
    return loss / n, correct / n


@torch.no_grad()
def ramp_risk(params, bits, labels, embeddings, encoding, score_scale, *, margin: float = 1.0):
    """Empirical ramp risk ``mean clip(1 - M / margin, 0, 1)`` of every model, with the multiclass margin
    ``M = z_y - max_{j != y} z_j``: the empirical term of the margin bounds (``(K,)``, float64)."""
    z = cls_logits(params, bits, embeddings, encoding, score_scale).double()
    zy = z.gather(-1, labels[..., None]).squeeze(-1)
    other = z.gather(-1, (1 - labels)[..., None]).squeeze(-1)
    return torch.clamp(1 - (zy - other) / margin, 0.0, 1.0).mean(-1)


# ---------------------------------------------------------------------------------------------- training
@dataclass
class TrainOutcome:
    """What :func:`train_stack` returns, per model ``k``: the stopping epoch, whether the cap was hit,
    and the checkpoints (stacked parameter dicts, detached) with the epoch each was taken at."""

    epochs: list[int]
    hit_cap: list[bool]
    checkpoints: dict[str, dict[str, torch.Tensor]]
    checkpoint_epochs: dict[str, list[int]]
    seconds: float
    history: list[dict] = field(default_factory=list)


def _tensors_for(tasks, data, device):
    E = torch.stack([t.embeddings for t in tasks]).to(device)
    return E, tasks[0].encoding.to(device)


def train_stack(params: dict[str, torch.Tensor], tasks: Sequence[SparseMajorityTask], data: dict,
                config: SparseMajorityConfig, *, generators: Sequence[torch.Generator],
                progress: bool | None = None, desc: str = "") -> TrainOutcome:
    """Train ``K`` stacked nets (``params`` from :func:`stack_parameters`) with the original optimiser.

    ``data[split] = (bits (K, n, T), labels (K, n))`` for ``split`` in ``train``, ``val`` (and ``test``
    when ``config.track_test_selection``), on the parameters' device. ``generators[k]`` shuffles model
    ``k``'s training set every epoch, so a model's run does not depend on which others share the stack.
    The training accuracy of an epoch is Keras' running accuracy: predictions of each batch *before*
    its update, averaged over the epoch. Model ``k`` stops at the end of the first epoch where it is 1.0;
    its checkpoints are then frozen. ``progress``: a tqdm bar (default: only on a terminal).
    """
    cfg = config.validated()
    K = len(tasks)
    dev = params["W_Q"].device
    E, pe = _tensors_for(tasks, data, dev)
    scale = 1.0 / math.sqrt(cfg.d_head)
    bits_tr, y_tr = data["train"]
    n = bits_tr.shape[1]
    opt = torch.optim.SGD(list(params.values()), lr=cfg.lr, momentum=cfg.momentum)
    kinds = ["val", "last"] + (["test"] if cfg.track_test_selection else [])
    best = {k: torch.full((K,), math.inf, dtype=torch.float64) for k in ("val", "test")}
    ckpt = {kind: {nm: p.detach().clone() for nm, p in params.items()} for kind in kinds}
    ckpt_epoch = {kind: [0] * K for kind in kinds}
    active = torch.ones(K, dtype=torch.bool)
    epochs, hit_cap = [cfg.max_epochs] * K, [False] * K
    history: list[dict] = []
    if progress is None:
        progress = sys.stderr.isatty()
    from tqdm import tqdm

    bar = tqdm(range(1, cfg.max_epochs + 1), desc=desc or "sparse-majority", disable=not progress,
               leave=False, mininterval=1.0 if sys.stderr.isatty() else 60.0)
    t0 = time.perf_counter()
    lr = cfg.lr
    ar = torch.arange(K, device=dev)[:, None]
    for epoch in bar:
        lr = max(cfg.lr_floor, lr * cfg.lr_decay)          # Keras' LearningRateScheduler, at epoch start
        for g in opt.param_groups:
            g["lr"] = lr
        perm = torch.stack([torch.randperm(n, generator=gen) for gen in generators]).to(dev)
        correct = torch.zeros(K, dtype=torch.float64, device=dev)
        for st in range(0, n, cfg.batch_size):
            idx = perm[:, st:st + cfg.batch_size]
            bb, yy = bits_tr[ar, idx], y_tr[ar, idx]
            z = cls_logits(params, bb, E, pe, scale)
            loss = bce_one_hot(z, yy)
            opt.zero_grad(set_to_none=True)
            loss.sum().backward()                           # models are independent: grads separate
            opt.step()
            correct += (z.detach().argmax(-1) == yy).double().sum(1)
        train_acc = (correct / n).cpu()
        stopping = active & (train_acc >= 1.0)
        if epoch == cfg.max_epochs:
            capped = active & ~stopping
            for k in torch.nonzero(capped).flatten().tolist():
                hit_cap[k] = True
            stopping = active.clone()
        if bool(stopping.any()) or epoch % cfg.eval_every == 0:
            _select(params, data, E, pe, scale, cfg, best, ckpt, ckpt_epoch, active, epoch)
            rec = {"epoch": epoch, "lr": lr, "train_acc": train_acc.tolist(),
                   "val_loss": best["val"].tolist()}
            history.append(rec)
        for k in torch.nonzero(stopping).flatten().tolist():
            epochs[k] = epoch
            for nm, p in params.items():
                ckpt["last"][nm][k] = p.detach()[k]
            ckpt_epoch["last"][k] = epoch
        active &= ~stopping
        bar.set_postfix(active=int(active.sum()), acc=f"{float(train_acc.mean()):.3f}", refresh=False)
        if not bool(active.any()):
            break
    bar.close()
    return TrainOutcome(epochs, hit_cap, ckpt, ckpt_epoch, time.perf_counter() - t0, history)


@torch.no_grad()
def _select(params, data, E, pe, scale, cfg, best, ckpt, ckpt_epoch, active, epoch):
    """Evaluate the selection splits and keep, per active model, the lowest-loss checkpoint so far."""
    for kind in ("val", "test"):
        if kind == "test" and not cfg.track_test_selection:
            continue
        loss, _ = evaluate_stack(params, *data[kind], E, pe, scale, chunk=cfg.eval_chunk)
        loss = loss.cpu()
        better = active & (loss < best[kind])
        for k in torch.nonzero(better).flatten().tolist():
            best[kind][k] = loss[k]
            for nm, p in params.items():
                ckpt[kind][nm][k] = p.detach()[k]
            ckpt_epoch[kind][k] = epoch


# ---------------------------------------------------------------------------------------------- runs
@dataclass(frozen=True)
class RunResult:
    """One trained model. Gaps are "how much worse on test": ``acc_gap = train_acc - test_acc`` and
    ``loss_gap = test_loss - train_loss`` (the original prints ``train - test`` for both). Norms and
    bounds are of the reported (``select``) checkpoint, in float64. ``orig_*``: the same numbers for the
    checkpoint the original protocol would have reported (lowest test loss); NaN when not tracked.
    ``seconds``: wall time of training and evaluating the stack of seeds trained together, divided by
    their number. ``tt_m_star``, ``edelman_m_star``: :func:`sample_size_needed` (NaN when skipped).
    ``l11_norms``: the entrywise l1 norm of every parameter tensor (what the authors' script prints)."""

    seq_len: int
    seed: int
    train_acc: float
    test_acc: float
    acc_gap: float
    train_loss: float
    test_loss: float
    loss_gap: float
    l11_norm_sum: float
    tt_bound: float
    edelman_bound: float
    epochs: int
    seconds: float
    hit_cap: bool
    val_acc: float
    val_loss: float
    select: str
    selected_epoch: int
    input_radius: float
    n_train: int
    train_ramp_risk: float
    tt_m_star: float
    edelman_m_star: float
    orig_selected_epoch: int
    orig_train_acc: float
    orig_test_acc: float
    orig_acc_gap: float
    orig_loss_gap: float
    orig_l11_norm_sum: float
    l11_norms: dict = field(default_factory=dict, compare=False)

    def to_dict(self, *, with_norms: bool = False) -> dict:
        """A JSON-ready dict (``l11_norms``, the per-tensor norms, only when ``with_norms``)."""
        d = asdict(self)
        if not with_norms:
            d.pop("l11_norms")
        return d


def _seed_for(seq_len: int, seed: int, salt: int) -> int:
    return (int(seed) * 1_000_003 + int(seq_len) * 7919 + salt) % (2**63 - 1)


def bounds_for(net, *, m: int, seq_len: int, delta: float, B_X: float, margin: float = 1.0
               ) -> tuple[float, float]:
    """The Trauger-Tewari and the Edelman-type bounds of ``net`` (float64), with ``m`` training
    sequences and ``seq_len + 1`` rows (the ``[CLS]`` row included); returns two floats.

    Each is ``2 R + 3 sqrt(log(2/delta) / (2m))`` with ``R`` the Dudley bound of the ramp-loss class at
    ``margin`` **before** the trivial cap ``R <= 1/2`` that :mod:`genbound.bounds` applies (with the cap
    both would read the same constant whenever they are vacuous; without it they can be compared).
    It bounds ``P[error] - (empirical ramp risk)``; anything above 1 is vacuous.
    """
    from ..bounds.edelman import edelman_bound_from_model
    from ..bounds.trauger_tewari import trauger_tewari_bound_from_model

    from ..rademacher import generalization_gap_bound

    tt = trauger_tewari_bound_from_model(net, m=m, delta=delta, B_X=B_X, margin=margin)
    ed = edelman_bound_from_model(net, m=m, T=seq_len + 1, delta=delta, B_X=B_X, margin=margin)
    return tuple(generalization_gap_bound(r.dudley.value, m=m, delta=delta, b=1.0) for r in (tt, ed))


def sample_size_needed(net, *, seq_len: int, delta: float, B_X: float, margin: float = 1.0,
                       target: float = 0.5, max_log10: float = 40.0, tol: float = 0.05) -> tuple[float, float]:
    """``m*``: the smallest sample size at which each bound (Trauger-Tewari, Edelman-type), evaluated
    with ``net``'s norms **held fixed**, falls to ``target``; bisection on ``log10 m`` to ``tol`` decades
    (the returned ``m*`` satisfies the target; ``m* / 10**tol`` does not).

    Returns two floats (``inf`` when not reached by ``10**max_log10``). A yardstick for vacuous bounds:
    it says how far the measured norms are from a non-vacuous guarantee, in samples.
    """
    from ..bounds.edelman import edelman_bound_from_model
    from ..bounds.trauger_tewari import trauger_tewari_bound_from_model

    def tt(m):
        return trauger_tewari_bound_from_model(net, m=m, delta=delta, B_X=B_X, margin=margin).value

    def ed(m):
        return edelman_bound_from_model(net, m=m, T=seq_len + 1, delta=delta, B_X=B_X, margin=margin).value

    out = []
    for fn in (tt, ed):
        lo, hi = math.log10(2.0), float(max_log10)
        if fn(int(10**hi)) > target:
            out.append(math.inf)
            continue
        while hi - lo > tol:
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if fn(int(10**mid)) <= target else (mid, hi)
        out.append(float(int(10**hi)))
    return out[0], out[1]


def initial_model(seq_len: int, seed: int, config: SparseMajorityConfig | None = None):
    """The float64 network of run ``(seq_len, seed)`` at initialisation (before any training step).

    A snapshot for measuring (norms, bounds): its parameters do not require gradients.
    """
    return build_model(config, seed=_seed_for(seq_len, seed, 2)).requires_grad_(False)


def run_seq_len(seq_len: int, seeds: Sequence[int], config: SparseMajorityConfig | None = None, *,
                device=None, progress: bool | None = None, return_models: bool = False):
    """Train and evaluate one model per seed at sequence length ``seq_len`` (all seeds in one stack).

    Returns the list of :class:`RunResult` (one per seed); with ``return_models`` a pair
    ``(results, nets)`` where ``nets[k]`` is seed ``k``'s float64
    :class:`~genbound.nets.ReferenceTransformer` holding the reported (``config.select``) checkpoint
    (a snapshot for measuring: its parameters do not require gradients).

    Each seed fixes its task (positions, embeddings), its data (train, validation, test), its Keras-style
    initialisation and its shuffling; results do not depend on which seeds are trained together.
    """
    cfg = (config or SparseMajorityConfig()).validated()
    _check_task(seq_len, cfg.s)
    dev = resolve_device(device)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ParameterError("seeds must name at least one seed")
    t_start = time.perf_counter()
    tasks, data, nets, gens = [], {"train": [], "val": [], "test": []}, [], []
    for sd in seeds:
        task = make_task(seq_len, s=cfg.s, d=cfg.d, seed=_seed_for(seq_len, sd, 0))
        g = torch.Generator().manual_seed(_seed_for(seq_len, sd, 1))
        for split, n in (("train", cfg.n_train), ("val", cfg.n_val), ("test", cfg.n_test)):
            data[split].append(task.sample(n, g))
        tasks.append(task)
        nets.append(initial_model(seq_len, sd, cfg))
        gens.append(torch.Generator().manual_seed(_seed_for(seq_len, sd, 3)))
    data = {k: (torch.stack([b for b, _ in v]).to(dev), torch.stack([y for _, y in v]).to(dev))
            for k, v in data.items()}
    params = stack_parameters(nets, dtype=cfg.dtype, device=dev)
    out = train_stack(params, tasks, data, cfg, generators=gens, progress=progress,
                      desc=f"T={seq_len}")
    E, pe = _tensors_for(tasks, data, dev)
    scale = 1.0 / math.sqrt(cfg.d_head)

    def metrics(kind):
        P = {nm: p.to(torch.float64) for nm, p in out.checkpoints[kind].items()}
        res = {split: evaluate_stack(P, *data[split], E.double(), pe.double(), scale, chunk=cfg.eval_chunk)
               for split in ("train", "val", "test")}
        norms, sums = [], []
        for k, net in enumerate(nets):
            load_stacked(net, P, k)
            raw = net.weight_norms()["raw"]
            norms.append(raw)
            sums.append(sum(raw.values()))
        return res, norms, sums

    res, norms, sums = metrics(cfg.select)
    orig_res, _, orig_sums = metrics("test") if cfg.track_test_selection else (None, None, None)
    results = []
    P_sel = {nm: p.to(torch.float64) for nm, p in out.checkpoints[cfg.select].items()}
    ramp = ramp_risk(P_sel, *data["train"], E.double(), pe.double(), scale, margin=cfg.margin)
    elapsed = time.perf_counter() - t_start
    for k, sd in enumerate(seeds):
        load_stacked(nets[k], P_sel, k)
        B_X = tasks[k].input_radius()
        tt, ed = bounds_for(nets[k], m=cfg.n_train, seq_len=seq_len, delta=cfg.delta, B_X=B_X,
                            margin=cfg.margin)
        tt_m, ed_m = (sample_size_needed(nets[k], seq_len=seq_len, delta=cfg.delta, B_X=B_X, margin=cfg.margin)
                      if cfg.m_star else (math.nan, math.nan))
        (trl, tra), (val, vaa), (tel, tea) = ((float(l[k]), float(a[k])) for l, a in
                                              (res["train"], res["val"], res["test"]))
        if orig_res is not None:
            o_tra, o_tea = float(orig_res["train"][1][k]), float(orig_res["test"][1][k])
            o_trl, o_tel = float(orig_res["train"][0][k]), float(orig_res["test"][0][k])
            o_sum, o_ep = float(orig_sums[k]), out.checkpoint_epochs["test"][k]
        else:
            o_tra = o_tea = o_trl = o_tel = o_sum = math.nan
            o_ep = -1
        results.append(RunResult(
            seq_len=seq_len, seed=sd, train_acc=tra, test_acc=tea, acc_gap=tra - tea, train_loss=trl,
            test_loss=tel, loss_gap=tel - trl, l11_norm_sum=float(sums[k]), tt_bound=tt,
            edelman_bound=ed, epochs=out.epochs[k], seconds=elapsed / len(seeds), hit_cap=out.hit_cap[k],
            val_acc=vaa, val_loss=val, select=cfg.select, selected_epoch=out.checkpoint_epochs[cfg.select][k],
            input_radius=B_X, n_train=cfg.n_train, train_ramp_risk=float(ramp[k]), tt_m_star=tt_m,
            edelman_m_star=ed_m, orig_selected_epoch=o_ep, orig_train_acc=o_tra,
            orig_test_acc=o_tea, orig_acc_gap=o_tra - o_tea, orig_loss_gap=o_tel - o_trl,
            orig_l11_norm_sum=o_sum, l11_norms=norms[k]))
    return (results, nets) if return_models else results


def run_sweep(seq_lens: Iterable[int], seeds: int | Sequence[int], config: SparseMajorityConfig | None = None,
              *, device=None, progress: bool | None = None,
              on_result: Callable[[RunResult], None] | None = None) -> list[RunResult]:
    """:func:`run_seq_len` for every ``T`` in ``seq_lens`` (``seeds``: a count ``n`` meaning ``0..n-1``,
    or explicit seeds). ``on_result`` is called after every run (e.g. to append to a CSV)."""
    cfg = (config or SparseMajorityConfig()).validated()
    seq_lens = [int(t) for t in seq_lens]
    if not seq_lens:
        raise ParameterError("seq_lens must name at least one sequence length")
    for T in seq_lens:
        _check_task(T, cfg.s)
    seed_list = list(range(check_positive_int(seeds, "seeds"))) if isinstance(seeds, int) else list(seeds)
    resolve_device(device)
    out = []
    for T in seq_lens:
        for r in run_seq_len(T, seed_list, cfg, device=device, progress=progress):
            out.append(r)
            if on_result is not None:
                on_result(r)
    return out


# ---------------------------------------------------------------------------------------------- files
def _csv_columns() -> list[str]:
    return [f.name for f in fields(RunResult) if f.name != "l11_norms"]


def write_csv(results: Iterable[RunResult], path, *, append: bool = False) -> Path:
    """Write (or append) run records as CSV rows (header written when the file is new or empty)."""
    path = Path(path)
    cols = _csv_columns()
    new = not append or not path.exists() or path.stat().st_size == 0
    with path.open("w" if not append else "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        if new:
            w.writeheader()
        for r in results:
            w.writerow({c: v for c, v in r.to_dict().items() if c in cols})
    return path


def read_csv(path=None):
    """The saved sweep (default :data:`SAVED_SWEEP`) as a pandas DataFrame (lines starting ``#`` skipped)."""
    import pandas as pd

    return pd.read_csv(SAVED_SWEEP if path is None else path, comment="#")


# ---------------------------------------------------------------------------------------------- summaries
def to_frame(results: Iterable[RunResult]):
    """Run records as a pandas DataFrame (one row per run, the CSV columns)."""
    import pandas as pd

    cols = _csv_columns()
    return pd.DataFrame([{c: v for c, v in r.to_dict().items() if c in cols} for r in results], columns=cols)


def summarize(df, columns: Sequence[str] = ("train_acc", "test_acc", "acc_gap", "loss_gap", "l11_norm_sum",
                                            "tt_bound", "edelman_bound", "tt_m_star", "edelman_m_star",
                                            "epochs", "hit_cap")):
    """Mean and standard deviation over seeds of each column, per sequence length (a DataFrame with
    columns ``(name, "mean")``, ``(name, "std")`` and ``n`` runs, indexed by ``seq_len``)."""
    g = df.groupby("seq_len")
    out = g[list(columns)].agg(["mean", "std"])
    out["n"] = g.size()
    return out


def plot_sweep(df, axes, *, label: str = "", color=None, marker: str = "o"):
    """Draw the four panels of the chapter on ``axes`` (four matplotlib Axes) against ``T`` (log axis):
    accuracy gap, summed l1 norm, both bounds at the run's ``m``, and the sample size ``m*`` each bound
    would need at the same norms. Every run is a dot; the seed mean is a line, with a band of one
    standard deviation in the first two panels. Returns ``axes``."""
    s = summarize(df)
    T = s.index.to_numpy()
    panels = [(axes[0], "acc_gap", "accuracy gap (train - test)"),
              (axes[1], "l11_norm_sum", r"$\sum_W \|W\|_{1,1}$")]
    for ax, col, ylabel in panels:
        ax.plot(df["seq_len"], df[col], marker, ms=3, alpha=0.45, color=color, lw=0)
        m, sd = s[(col, "mean")].to_numpy(), s[(col, "std")].fillna(0).to_numpy()
        ax.plot(T, m, "-", color=color, label=label)
        ax.fill_between(T, m - sd, m + sd, color=color, alpha=0.15, lw=0)
        ax.set_ylabel(ylabel)
    for ax, (tt, ed), ylabel, logy in ((axes[2], ("tt_bound", "edelman_bound"), "bound at the run's $m$", False),
                                       (axes[3], ("tt_m_star", "edelman_m_star"),
                                        "samples needed for bound $\\leq 0.5$", True)):
        for col, ls, name in ((tt, "-", "Trauger-Tewari"), (ed, "--", "Edelman-type")):
            ax.plot(df["seq_len"], df[col], marker, ms=3, alpha=0.45, color=color, lw=0)
            ax.plot(T, s[(col, "mean")].to_numpy(), ls, color=color, label=f"{name} {label}".strip())
        ax.set_ylabel(ylabel)
        if logy:
            ax.set_yscale("log")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length $T$")
    return axes
