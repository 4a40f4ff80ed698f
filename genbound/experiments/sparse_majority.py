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

__all__ = ["D_MODEL", "N_HEADS", "D_HEAD", "S_RELEVANT", "RESULT_KEYS", "sinusoidal_encoding", "encoding_rows",
           "token_embeddings", "uniform_input_radius", "PROTOCOLS", "SparseMajorityTask", "make_task", "SparseMajorityConfig", "build_model",
           "keras_init_", "stack_parameters", "load_stacked", "cls_logits", "bce_one_hot",
           "evaluate_stack", "ramp_risk", "bounds_for", "gap_slope", "sample_size_needed", "TrainOutcome", "train_stack", "RunResult", "initial_model", "run_seq_len", "run_sweep",
           "write_csv", "read_csv", "SAVED_SWEEP", "to_frame", "summarize", "plot_sweep"]

#: Width, heads, head width and number of relevant positions of the authors' script.
D_MODEL, N_HEADS, D_HEAD, S_RELEVANT = 64, 2, 64, 9

#: Keys of every run record (the JSON objects of ``genbound experiment sparse-majority --json``).
RESULT_KEYS = ("seq_len", "seed", "fitted", "fit_step", "train_acc", "test_acc", "acc_gap", "train_loss",
               "test_loss", "loss_gap", "l11_norm_sum", "l11_dist_from_init", "input_radius", "tt_bound",
               "edelman_bound", "steps", "seconds")

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
    return encoding_rows(torch.arange(n_positions), d, dtype=dtype)


def encoding_rows(positions: torch.Tensor, d: int, *, dtype=torch.float64) -> torch.Tensor:
    """Rows ``PE_j`` of :func:`sinusoidal_encoding` for arbitrary positions ``j`` (any integers, or reals),
    shape ``(len(positions), d)``, without forming the rows before them.

    >>> bool((encoding_rows(torch.tensor([2]), 4) == sinusoidal_encoding(3, 4)[2:]).all())
    True
    """
    d = check_positive_int(d, "d")
    j = torch.as_tensor(positions).to(torch.float64).reshape(-1, 1)
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
        """``max ||x_t||_2`` over every row any sequence of **this** length can have (``3 (T+1)``
        candidates), exact. It grows with ``T``; the bounds use :func:`uniform_input_radius` instead."""
        tokens = self.embeddings[:2, None, :] + self.encoding[None, :-1, :]      # (2, T, d)
        cls = self.embeddings[2] + self.encoding[-1]
        return max(float(torch.linalg.vector_norm(tokens, dim=-1).max()), float(torch.linalg.vector_norm(cls)))


def uniform_input_radius(d: int = D_MODEL) -> float:
    """``B_X = 1 + sqrt(d)``: a bound on the l2 norm of every input row at **every** sequence length.

    Each row is ``e + PE_j`` with a token embedding ``e`` of unit l1 norm (so ``||e||_2 <= 1``) and an
    encoding row whose ``d`` coordinates are sines or cosines (so ``||PE_j||_2 <= sqrt(d)`` for every
    position ``j``, however large); the triangle inequality gives ``1 + sqrt(d)``
    (:prf:ref:`lem-sm-uniform-radius`). Unlike :meth:`SparseMajorityTask.input_radius` it does not depend
    on ``T`` or on the seed, so a bound evaluated with it is the same function of the weights at every ``T``.

    >>> uniform_input_radius(64)
    9.0
    """
    return 1.0 + math.sqrt(check_positive_int(d, "d"))


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
#: The training protocols, ``"adam"`` (full-batch Adam, the CPU default) and ``"original"`` (the authors' SGD).
PROTOCOLS = ("adam", "original")


@dataclass(frozen=True)
class SparseMajorityConfig:
    """Every setting of one run. ``protocol`` chooses the optimiser:

    * ``"adam"`` (default): full-batch Adam (:mod:`genbound.experiments.fullbatch`), peak rate
      ``adam_lr`` with ``warmup`` steps of linear warm-up and cosine decay to zero at ``steps``; a model
      stops at the first step whose weights classify the whole training set correctly (checked in
      float64). Chosen from pilots (``genbound/data/sparse_majority_sweep.md``) to fit at every ``T``
      from 16 to 1024 on two CPU cores.
    * ``"original"``: the authors' schedule: SGD (``lr``, ``momentum``), ``lr <- max(lr_floor,
      lr_decay lr)`` every epoch, batches of ``batch_size``, stop at the first epoch whose running
      (Keras-style) training accuracy is 1.0, at most ``max_epochs`` epochs (200,000 is feasible on a GPU).

    The primary checkpoint is always the **stopping** one (the first that fits, or the last weights of
    a run that never fits). Secondary: the checkpoint of lowest validation loss up to the stop, and,
    with ``track_test_selection`` (original protocol only), the lowest test loss (the original's
    choice). ``eval_every``: steps (adam) or epochs (original) between validation evaluations
    (``None``: 250 steps or 10 epochs). ``dtype``: training precision (everything reported is
    evaluated in float64). ``delta``, ``margin``: confidence and ramp margin of the bounds; ``m_star``:
    also compute :func:`sample_size_needed` (about a second per run).
    """

    s: int = S_RELEVANT
    d: int = D_MODEL
    n_heads: int = N_HEADS
    d_head: int = D_HEAD
    n_train: int = 300
    n_val: int = 1000
    n_test: int = 10_000
    protocol: str = "adam"
    steps: int = 40_000
    adam_lr: float = 1e-3
    warmup: int = 300
    batch_size: int = 128
    lr: float = 0.01
    momentum: float = 0.9
    lr_decay: float = 0.999
    lr_floor: float = 0.001
    max_epochs: int = 2000
    eval_every: int | None = None
    track_test_selection: bool = False
    dtype: str = "float32"
    delta: float = 0.05
    margin: float = 1.0
    m_star: bool = True
    eval_chunk: int = 2000

    def validated(self) -> "SparseMajorityConfig":
        """Return ``self`` after checking every field (raises :class:`~genbound.errors.ParameterError`)."""
        _check_task(self.s, self.s)
        if self.protocol not in PROTOCOLS:
            raise ParameterError(f"protocol must be one of {PROTOCOLS}, got {self.protocol!r}")
        for name in ("d", "n_heads", "d_head", "n_train", "n_val", "n_test", "batch_size", "max_epochs",
                     "steps", "eval_chunk"):
            check_positive_int(getattr(self, name), name)
        if self.eval_every is not None:
            check_positive_int(self.eval_every, "eval_every")
        if self.d < 3:
            raise ParameterError(f"d = {self.d} must be >= 3 (three orthogonal token embeddings)")
        check_real(self.lr, "lr", lo=0.0, lo_open=True)
        check_real(self.momentum, "momentum", lo=0.0, hi=1.0, hi_open=True)
        check_real(self.lr_decay, "lr_decay", lo=0.0, lo_open=True, hi=1.0)
        check_real(self.lr_floor, "lr_floor", lo=0.0)
        check_real(self.delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        check_real(self.margin, "margin", lo=0.0, lo_open=True)
        if self.track_test_selection and self.protocol != "original":
            raise ParameterError("track_test_selection reconstructs the original protocol's choice; "
                                 "it needs protocol='original'")
        self.adam_protocol()
        resolve_dtype(self.dtype)
        return self

    @property
    def eval_interval(self) -> int:
        """The validation cadence, ``eval_every`` or else 250 steps (adam) or 10 epochs (original)."""
        if self.eval_every is not None:
            return int(self.eval_every)
        return 250 if self.protocol == "adam" else 10

    def adam_protocol(self):
        """The :class:`~genbound.experiments.fullbatch.AdamProtocol` of the ``"adam"`` protocol."""
        from .fullbatch import AdamProtocol

        return AdamProtocol(lr=self.adam_lr, steps=self.steps, warmup=self.warmup,
                            eval_every=self.eval_interval).validated()


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
    ``ReferenceTransformer.forward(task.embed(bits))`` for each model (a test compares them), computed
    from the structure of the input without forming the ``n x T`` attention matrix:

    * the ``[CLS]`` query ``q`` is the same for every sequence, so the score of row ``t`` is
      ``u . x_t`` with ``u = s W_K q`` (the key bias adds a constant that softmax ignores), and
      ``u . x_t = u . e_0 + delta b_t + u . PE_t`` with ``delta = u . (e_1 - e_0)``;
    * hence ``exp(score_t - c) = w_t alpha_{b_t}`` with a **sequence-independent** weight
      ``w_t = exp(u . PE_t + u . e_0 + delta_+ - c)`` and ``alpha_b = exp(delta b - delta_+)``
      (``delta_+ = max(delta, 0)``; the shift ``c`` is the largest score any row can have, so every
      factor is at most 1 and nothing overflows);
    * because ``b_t`` is 0 or 1, the attention-weighted input splits into the rows holding a 0 and
      the rows holding a 1: ``sum_t w_t alpha_{b_t} x_t = alpha_0 ((1 - b) W_0) + alpha_1 (b W_1)``
      with the **sequence-independent** ``(T x d)`` matrices ``W_j = [w_t (e_j + PE_t)]_t``, and the
      normaliser likewise with ``w`` in place of ``W_j``. Both are sums of nonnegative weights, so
      nothing cancels in float32. (An earlier form, a shared term plus ``(alpha_1 - alpha_0) b W``,
      is a difference that can cancel when ``alpha_1 << alpha_0``; one run of a first sweep ended
      with a non-finite loss under it, cause not isolated, and the saved sweep uses this form.)

    Two batched matrix products ``(K, n, T) @ (K, T, H (d + 1))`` do all heads at once. The
    normaliser is at least ``min(alpha_0, alpha_1) max_t w_t``, which underflows only for scores
    about 80 apart in float32; the training loops stop a run whose loss is not finite.
    """
    P = params
    dt = P["W_Q"].dtype
    b = bits.to(dt)
    E = embeddings.to(dt)
    pe = encoding.to(dt)
    K, n, T = b.shape
    x_cls = E[:, 2] + pe[-1]                                                       # (K, d)
    q = torch.einsum("kd,khde->khe", x_cls, P["W_Q"]) + P["b_Q"]                   # (K, H, dh)
    u = score_scale * torch.einsum("khe,khde->khd", q, P["W_K"])                   # (K, H, d)
    eu = torch.einsum("kjd,khd->khj", E, u)                                        # (K, H, 3)
    pu = torch.einsum("td,khd->kht", pe, u)                                        # (K, H, T+1)
    delta = eu[..., 1] - eu[..., 0]                                                # (K, H)
    dplus = torch.clamp(delta, min=0.0)
    s_cls = eu[..., 2] + pu[..., T]                                                # (K, H)
    top = pu[..., :T].max(-1).values + eu[..., 0] + dplus
    shift = torch.maximum(top, s_cls).detach()
    w = torch.exp(pu[..., :T] + (eu[..., 0] + dplus - shift)[..., None])           # (K, H, T)
    c = torch.exp(s_cls - shift)                                                   # (K, H)
    a0, a1 = torch.exp(-dplus), torch.exp(delta - dplus)                           # (K, H)
    # sum_t w_t alpha_{b_t} x_t = alpha_0 sum_t (1 - b_t) w_t (e_0 + PE_t) + alpha_1 sum_t b_t w_t (e_1 + PE_t):
    # two sums of nonnegative weights, no cancellation (the normaliser rides along as a last column)
    H, d = w.shape[1], pe.shape[1]
    cols = [torch.cat([w[..., None] * (E[:, None, j, None, :] + pe[:T]), w[..., None]], dim=-1)
            for j in (0, 1)]                                                       # 2 x (K, H, T, d+1)
    flat = [cj.permute(0, 2, 1, 3).reshape(K, T, H * (d + 1)) for cj in cols]
    s0 = torch.bmm(1 - b, flat[0]).view(K, n, H, d + 1)                           # tokens equal to 0
    s1 = torch.bmm(b, flat[1]).view(K, n, H, d + 1)                               # tokens equal to 1
    x_cls_h = c[..., None] * (E[:, None, 2] + pe[T])                               # (K, H, d)
    num = a0[:, None, :, None] * s0 + a1[:, None, :, None] * s1                   # (K, n, H, d+1)
    Z = num[..., d] + c[:, None]                                                   # (K, n, H)
    xbar = (num[..., :d] + x_cls_h[:, None]) / Z[..., None]                        # (K, n, H, d)
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
        if bool(stopping.any()) or epoch % cfg.eval_interval == 0:
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
    """One trained model. The primary numbers are those of the **stopping checkpoint** (the first
    weights that classify the whole training set correctly; for a run that never fits, its last
    weights), all evaluated in float64. Gaps are "how much worse on test": ``acc_gap = train_acc -
    test_acc`` and ``loss_gap = test_loss - train_loss``.

    ``fitted``: the stopping checkpoint has training accuracy exactly 1 (checked on the whole training
    set); ``fit_step``: when it was reached (Adam steps, or epochs for the original protocol; ``-1`` if
    never); ``steps``: steps (epochs) taken. ``l11_norm_sum``: the sum of the entrywise l1 norms of every
    parameter tensor (what the authors' script prints); ``l11_dist_from_init``: the same sum for the
    difference from the initial weights. ``input_radius``: the ``T``-uniform ``B_X`` the bounds use
    (:func:`uniform_input_radius`); ``input_radius_T``: the exact maximum row norm at this ``T``, for
    comparison. ``tt_bound``, ``edelman_bound``: the bounds of :func:`bounds_for` at the trained norms,
    with the union bound over a grid of radii; ``tt_m_star``, ``edelman_m_star``:
    :func:`sample_size_needed` (NaN when skipped). ``val_*``: the secondary, validation-selected
    checkpoint; ``orig_*``: the original protocol's test-selected checkpoint (NaN unless tracked).
    ``seconds``: wall time of training and evaluating the stack of seeds trained together, divided by
    their number. ``l11_norms``: the entrywise l1 norm of every parameter tensor."""

    seq_len: int
    seed: int
    protocol: str
    fitted: bool
    fit_step: int
    steps: int
    train_acc: float
    test_acc: float
    acc_gap: float
    train_loss: float
    test_loss: float
    loss_gap: float
    val_acc: float
    l11_norm_sum: float
    l11_dist_from_init: float
    input_radius: float
    input_radius_T: float
    tt_bound: float
    edelman_bound: float
    tt_m_star: float
    edelman_m_star: float
    train_ramp_risk: float
    n_train: int
    seconds: float
    diverged: bool
    val_step: int
    val_train_acc: float
    val_test_acc: float
    val_acc_gap: float
    orig_step: int
    orig_train_acc: float
    orig_test_acc: float
    orig_acc_gap: float
    l11_norms: dict = field(default_factory=dict, compare=False)

    def to_dict(self, *, with_norms: bool = False) -> dict:
        """A JSON-ready dict (``l11_norms``, the per-tensor norms, only when ``with_norms``)."""
        d = asdict(self)
        if not with_norms:
            d.pop("l11_norms")
        return d


def _seed_for(seq_len: int, seed: int, salt: int) -> int:
    return (int(seed) * 1_000_003 + int(seq_len) * 7919 + salt) % (2**63 - 1)


def bounds_for(net, *, m: int, seq_len: int, delta: float, B_X: float, margin: float = 1.0,
               radius_grid: bool = True) -> tuple[float, float]:
    """The Trauger-Tewari and the Edelman-type bounds of ``net`` (float64), with ``m`` training
    sequences and ``seq_len + 1`` rows (the ``[CLS]`` row included); returns two floats.

    Each is ``2 R + 3 sqrt(log(2/delta') / (2m))`` with ``R`` the Dudley bound of the ramp-loss class at
    ``margin`` **before** the trivial cap ``R <= 1/2`` that :mod:`genbound.bounds` applies (with the cap
    both would read the same constant whenever they are vacuous; without it they can be compared).
    With ``radius_grid`` (default) every radius is rounded up to a power of 2 and ``delta' = delta
    prod pi(i_j)`` (:prf:ref:`thm-radius-union`), so the bound holds at norms read off a trained network;
    without it, ``delta' = delta`` and the radii are the network's own norms (valid only for radii
    fixed in advance). It bounds ``P[error] - (empirical ramp risk)``; anything above 1 is vacuous.
    """
    from ..rademacher import generalization_gap_bound

    tt, ed = _bound_objects(net, m=m, seq_len=seq_len, delta=delta, B_X=B_X, margin=margin,
                            radius_grid=radius_grid)
    return tuple(generalization_gap_bound(r.dudley.value, m=m, delta=r.delta, b=1.0) for r in (tt, ed))


def _bound_objects(net, *, m, seq_len, delta, B_X, margin, radius_grid):
    from ..bounds.edelman import edelman_bound_from_model
    from ..bounds.trauger_tewari import trauger_tewari_bound_from_model

    tt = trauger_tewari_bound_from_model(net, m=m, delta=delta, B_X=B_X, margin=margin,
                                         radius_grid=radius_grid)
    ed = edelman_bound_from_model(net, m=m, T=seq_len + 1, delta=delta, B_X=B_X, margin=margin,
                                  radius_grid=radius_grid)
    return tt, ed


def sample_size_needed(net, *, seq_len: int, delta: float, B_X: float, margin: float = 1.0,
                       target: float = 0.5, max_log10: float = 40.0, tol: float = 0.05,
                       radius_grid: bool = True) -> tuple[float, float]:
    """``m*``: the smallest sample size at which each bound (Trauger-Tewari, Edelman-type), evaluated
    with ``net``'s norms **held fixed**, falls to ``target``; bisection on ``log10 m`` to ``tol`` decades
    (the returned ``m*`` satisfies the target; ``m* / 10**tol`` does not).

    With ``radius_grid`` (default) the bounds are those of :prf:ref:`thm-radius-union`, so that a
    network trained on ``m*`` samples with these norms would carry the guarantee. Returns two floats
    (``inf`` when not reached by ``10**max_log10``).
    """
    def value(i, m):
        return _bound_objects(net, m=m, seq_len=seq_len, delta=delta, B_X=B_X, margin=margin,
                              radius_grid=radius_grid)[i].value

    out = []
    for i in (0, 1):
        lo, hi = math.log10(2.0), float(max_log10)
        if value(i, int(10**hi)) > target:
            out.append(math.inf)
            continue
        while hi - lo > tol:
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if value(i, int(10**mid)) <= target else (mid, hi)
        out.append(float(int(10**hi)))
    return out[0], out[1]


def initial_model(seq_len: int, seed: int, config: SparseMajorityConfig | None = None):
    """The float64 network of run ``(seq_len, seed)`` at initialisation (before any training step).

    A snapshot for measuring (norms, bounds): its parameters do not require gradients.
    """
    return build_model(config, seed=_seed_for(seq_len, seed, 2)).requires_grad_(False)


def _train_adam(params, tasks, data, cfg, E, pe, scale, progress, desc):
    """Run the ``"adam"`` protocol; returns ``(stop, val_best, fitted, fit_step, steps, val_step,
    diverged, initial)``."""
    from .fullbatch import fit_stack

    bits_tr, y_tr = data["train"]

    def loss_logits(P, idx):
        z = cls_logits(P, bits_tr[idx], E[idx], pe, scale)
        return bce_one_hot(z, y_tr[idx]), z

    def confirm(Pk, k):
        P1 = {nm: v[None] for nm, v in Pk.items()}
        _, acc = evaluate_stack(P1, bits_tr[k:k + 1], y_tr[k:k + 1], E[k:k + 1].double(), pe.double(),
                                scale, chunk=cfg.eval_chunk)
        return bool(acc[0] == 1.0)

    def val_loss(P, idx):
        loss, _ = evaluate_stack(P, data["val"][0][idx], data["val"][1][idx], E[idx], pe, scale,
                                 chunk=cfg.eval_chunk)
        return loss

    out = fit_stack(params, loss_logits, y_tr, cfg.adam_protocol(), confirm=confirm, val_loss=val_loss,
                    progress=progress, desc=desc)
    return (out.stop, out.val_best, out.fitted, out.fit_step, out.steps, out.val_step, out.diverged,
            out.initial)


def run_seq_len(seq_len: int, seeds: Sequence[int], config: SparseMajorityConfig | None = None, *,
                device=None, progress: bool | None = None, return_models: bool = False):
    """Train and evaluate one model per seed at sequence length ``seq_len`` (all seeds in one stack).

    Returns the list of :class:`RunResult` (one per seed); with ``return_models`` a pair
    ``(results, nets)`` where ``nets[k]`` is seed ``k``'s float64
    :class:`~genbound.nets.ReferenceTransformer` holding the stopping checkpoint (a snapshot for
    measuring: its parameters do not require gradients).

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
    init64 = {nm: p.detach() for nm, p in stack_parameters(nets, dtype=torch.float64, device=dev).items()}
    params = stack_parameters(nets, dtype=cfg.dtype, device=dev)
    E, pe = _tensors_for(tasks, data, dev)
    E, pe = E.to(params["W_Q"].dtype), pe.to(params["W_Q"].dtype)
    scale = 1.0 / math.sqrt(cfg.d_head)
    K = len(seeds)
    orig = None
    if cfg.protocol == "adam":
        stop, val_best, _, fit_step, steps, val_step, diverged, _ = _train_adam(
            params, tasks, data, cfg, E, pe, scale, progress, f"T={seq_len}")
    else:
        out = train_stack(params, tasks, data, cfg, generators=gens, progress=progress, desc=f"T={seq_len}")
        stop, val_best = out.checkpoints["last"], out.checkpoints["val"]
        steps, val_step = out.epochs, out.checkpoint_epochs["val"]
        fit_step, diverged = [-1] * K, [False] * K
        if cfg.track_test_selection:
            orig = (out.checkpoints["test"], out.checkpoint_epochs["test"])
    E64, pe64 = E.double(), pe.double()

    def evaluate(P):
        P = {nm: p.to(torch.float64) for nm, p in P.items()}
        return P, {split: evaluate_stack(P, *data[split], E64, pe64, scale, chunk=cfg.eval_chunk)
                   for split in ("train", "val", "test")}

    P_stop, res = evaluate(stop)
    _, res_val = evaluate(val_best)
    res_orig = evaluate(orig[0])[1] if orig is not None else None
    ramp = ramp_risk(P_stop, *data["train"], E64, pe64, scale, margin=cfg.margin)
    B_X = uniform_input_radius(cfg.d)
    elapsed = time.perf_counter() - t_start
    results = []
    for k, sd in enumerate(seeds):
        load_stacked(nets[k], P_stop, k)
        raw = nets[k].weight_norms()["raw"]
        dist = sum(float((P_stop[nm][k] - init64[nm][k]).abs().sum()) for nm in _PARAM_NAMES)
        tt, ed = bounds_for(nets[k], m=cfg.n_train, seq_len=seq_len, delta=cfg.delta, B_X=B_X,
                            margin=cfg.margin)
        tt_m, ed_m = (sample_size_needed(nets[k], seq_len=seq_len, delta=cfg.delta, B_X=B_X,
                                         margin=cfg.margin) if cfg.m_star else (math.nan, math.nan))
        (trl, tra), (_, vaa), (tel, tea) = ((float(l[k]), float(a[k])) for l, a in
                                            (res["train"], res["val"], res["test"]))
        fitted = tra == 1.0
        if cfg.protocol == "original" and fitted:
            fit_step[k] = steps[k]
        v_tr, v_te = float(res_val["train"][1][k]), float(res_val["test"][1][k])
        if res_orig is not None:
            o_step, o_tr, o_te = orig[1][k], float(res_orig["train"][1][k]), float(res_orig["test"][1][k])
        else:
            o_step, o_tr, o_te = -1, math.nan, math.nan
        results.append(RunResult(
            seq_len=seq_len, seed=sd, protocol=cfg.protocol, fitted=fitted,
            fit_step=fit_step[k] if fitted else -1, steps=steps[k], train_acc=tra, test_acc=tea,
            acc_gap=tra - tea, train_loss=trl, test_loss=tel, loss_gap=tel - trl, val_acc=vaa,
            l11_norm_sum=float(sum(raw.values())), l11_dist_from_init=dist, input_radius=B_X,
            input_radius_T=tasks[k].input_radius(), tt_bound=tt, edelman_bound=ed, tt_m_star=tt_m,
            edelman_m_star=ed_m, train_ramp_risk=float(ramp[k]), n_train=cfg.n_train,
            seconds=elapsed / len(seeds), diverged=diverged[k], val_step=val_step[k], val_train_acc=v_tr,
            val_test_acc=v_te, val_acc_gap=v_tr - v_te, orig_step=o_step, orig_train_acc=o_tr,
            orig_test_acc=o_te, orig_acc_gap=o_tr - o_te, l11_norms=raw))
    return (results, nets) if return_models else results


def run_sweep(seq_lens: Iterable[int], seeds: int | Sequence[int], config: SparseMajorityConfig | None = None,
              *, device=None, progress: bool | None = None,
              on_result: Callable[[RunResult], None] | None = None,
              skip: Callable[[int, int], bool] | None = None) -> list[RunResult]:
    """:func:`run_seq_len` for every ``T`` in ``seq_lens`` (``seeds``: a count ``n`` meaning ``0..n-1``,
    or explicit seeds). ``on_result`` is called after every run (e.g. to append to a CSV); runs with
    ``skip(T, seed)`` true are not trained (e.g. finished rows of a CSV being resumed). A run's result
    does not depend on which other seeds share its stack, so a resumed sweep equals an uninterrupted one."""
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
        todo = [sd for sd in seed_list if skip is None or not skip(T, sd)]
        if not todo:
            continue
        for r in run_seq_len(T, todo, cfg, device=device, progress=progress):
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


def summarize(df, columns: Sequence[str] = ("fitted", "train_acc", "test_acc", "acc_gap", "loss_gap",
                                            "l11_norm_sum", "l11_dist_from_init", "tt_bound",
                                            "edelman_bound", "tt_m_star", "edelman_m_star", "fit_step")):
    """Mean and standard deviation over seeds of each column, per sequence length (a DataFrame with
    columns ``(name, "mean")``, ``(name, "std")`` and ``n`` runs, indexed by ``seq_len``)."""
    g = df.assign(fitted=df["fitted"].astype(float)).groupby("seq_len")
    out = g[list(columns)].agg(["mean", "std"])
    out["n"] = g.size()
    return out


def gap_slope(df, *, column: str = "acc_gap", n_boot: int = 2000, seed: int = 0) -> dict:
    """Least-squares slope of ``column`` against ``log2 T`` over the rows of ``df``, with a 95% bootstrap
    interval (rows resampled with replacement within each ``T``, so every length keeps its count).

    Returns ``{"slope", "lo", "hi", "n"}``: the change of the gap per doubling of ``T``.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"seq_len": [16, 16, 32, 32], "acc_gap": [0.1, 0.1, 0.2, 0.2]})
    >>> round(gap_slope(df)["slope"], 12)
    0.1
    """
    import numpy as np

    if len(df) < 3 or df["seq_len"].nunique() < 2:
        raise ParameterError("gap_slope needs at least 3 rows over at least 2 sequence lengths")
    x = np.log2(df["seq_len"].to_numpy(dtype=float))
    y = df[column].to_numpy(dtype=float)
    if not np.isfinite(y).all():
        raise ParameterError(f"column {column!r} has non-finite values")

    def slope(xx, yy):
        xc = xx - xx.mean()
        return float((xc * (yy - yy.mean())).sum() / (xc**2).sum())

    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(df["seq_len"].to_numpy() == t) for t in sorted(df["seq_len"].unique())]
    boots = np.empty(n_boot)
    for b in range(n_boot):
        idx = np.concatenate([rng.choice(g, size=len(g), replace=True) for g in groups])
        boots[b] = slope(x[idx], y[idx])
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"slope": slope(x, y), "lo": float(lo), "hi": float(hi), "n": int(len(df))}


def plot_sweep(df, axes, *, label: str = "", color=None, marker: str = "o"):
    """Draw the four panels of the chapter on ``axes`` (four matplotlib Axes) against ``T`` (log axis):
    accuracy gap; summed l1 norm (dots, solid) and l1 distance from initialisation (crosses, dashed);
    both bounds at the run's ``m``; and the sample size ``m*`` each bound would need at the same norms.
    Every run is a dot; the seed mean is a line, with a band of one standard deviation in the first two
    panels. Returns ``axes``."""
    s = summarize(df)
    T = s.index.to_numpy()

    def band(ax, col, mk, ls, lab):
        ax.plot(df["seq_len"], df[col], mk, ms=3, alpha=0.45, color=color, lw=0)
        m, sd = s[(col, "mean")].to_numpy(), s[(col, "std")].fillna(0).to_numpy()
        ax.plot(T, m, ls, color=color, label=lab)
        ax.fill_between(T, m - sd, m + sd, color=color, alpha=0.15, lw=0)

    band(axes[0], "acc_gap", marker, "-", label)
    axes[0].set_ylabel("accuracy gap (train - test)")
    band(axes[1], "l11_norm_sum", marker, "-", r"$\sum_W \|W\|_{1,1}$")
    band(axes[1], "l11_dist_from_init", "x", "--", r"$\sum_W \|W - W_0\|_{1,1}$")
    axes[1].set_ylabel("entrywise $\\ell_1$")
    for ax, (tt, ed), ylabel, logy in ((axes[2], ("tt_bound", "edelman_bound"), "bound at the run's $m$", False),
                                       (axes[3], ("tt_m_star", "edelman_m_star"),
                                        "samples needed for bound $\\leq 0.5$", True)):
        for col, ls, name in ((tt, "-", "Trauger-Tewari"), (ed, "--", "Edelman-type")):
            ax.plot(df["seq_len"], df[col], marker, ms=3, alpha=0.45, color=color, lw=0)
            ax.plot(T, s[(col, "mean")].to_numpy(), ls, color=color, label=name)
        ax.set_ylabel(ylabel)
        if logy:
            ax.set_yscale("log")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length $T$")
        ax.legend(fontsize=7)
    return axes
