"""The :class:`TransformerWeights` object: per-layer proxy matrices, read lazily, and their spectra.

One concept: a transformer's weight matrices as the proxies see them (per head, per expert), and
their singular values, layer by layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .._validate import as_tensor, check_positive_int, shown, shown_value
from ..device import home_device, resolve_device
from ..errors import ArchitectureError, NonFiniteError, ParameterError, ShapeError
from ..spectra import DEFAULT_CERT_RTOL, certified_singular_values
from .record import ALL_KINDS, HEAD_KINDS, KINDS, MLP_HEAD, Spectra, kind_attr
from .stores import DenseHeads

__all__ = ["TransformerWeights", "MatrixSpectrum", "FF_ROUTES"]

#: ``ff_route`` values of :meth:`TransformerWeights.spectra` (``method="core"``).
FF_ROUTES = ("auto", "gram", "qr-svd")


@dataclass(frozen=True)
class TransformerWeights:
    """The per-layer, per-head matrices of a transformer, in row-vector orientation.
    The query-key form of a head is ``W_Q W_K^T`` in the row-vector convention (:prf:ref:`prop-sa-qk-orientation`).

    Build one with :func:`~genbound.weights.load_weights` (checkpoint folder or ``nn.Module`` of a
    supported family), :func:`~genbound.weights.weights_from_state_dict` or
    :meth:`from_proxy_matrices`. Checkpoint-backed objects hold no weights: each layer is read when
    needed. ``d_head`` is ``None`` when the heads were given as dense proxy matrices. ``family`` is
    the architecture family (``"bert"``, ``"distilbert"``, ``"gpt2"``; ``"proxy"`` for matrices
    given directly). ``attention_scale=True`` puts the score scale the model applies (``1/sqrt(d_head)``,
    GPT-2's optional ``1/(layer + 1)``) into every ``QK``.

    ``kv_heads`` is the number of key/value heads (``None``: one per query head); with fewer, query
    head ``h`` is formed with key/value head ``h // (n_heads / kv_heads)``, as the model computes it.
    ``n_experts`` is the number of experts of a mixture-of-experts block (``None``: none).
    ``coverage`` maps each matrix kind to a ``Coverage`` (``genbound.weights.families``): whether
    the papers' bound covers it and the note a report prints; :attr:`covered` is whether it covers
    every kind. Only covered weights give :meth:`spectra` (the bound's input);
    :meth:`matrix_spectra` and :meth:`matrix_table` give every matrix's spectrum either way.
    """

    n_layers: int
    n_heads: int
    hidden: int
    d_head: int | None
    d_ff: int
    source: str
    attention_scale: bool = False
    family: str = "proxy"
    kv_heads: int | None = None
    n_experts: int | None = None
    coverage: dict | None = field(default=None, repr=False, compare=False)
    _store: object = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_proxy_matrices(
        cls, qk, v, m_in, m_out, *, source: str = "proxy matrices"
    ) -> "TransformerWeights":
        """Weights from the proxy matrices themselves (row-vector orientation).

        ``qk[l][h]`` and ``v[l][h]`` are the ``N x N`` query-key and value-output matrices of head
        ``h`` in layer ``l`` (nested lists or tensors of shape ``(L, H, N, N)``), ``m_in[l]`` is
        ``N x d_ff`` and ``m_out[l]`` is ``d_ff x N``. Everything is copied to float64.

        >>> import torch
        >>> w = TransformerWeights.from_proxy_matrices([[torch.eye(4)]], [[torch.eye(4)]],
        ...                                            [torch.ones(4, 6)], [torch.ones(6, 4)])
        >>> w.matrix("M_out", 0).shape
        torch.Size([6, 4])
        """
        # weights are data here, never differentiated: detach (an nn.Parameter may be passed directly)
        QK = _stack_heads(qk, "qk").detach()
        V = _stack_heads(v, "v").detach()
        if QK.shape != V.shape:
            raise ShapeError(
                f"qk has shape {tuple(QK.shape)} but v has shape {tuple(V.shape)}; they must agree"
            )
        L, H, N, N2 = QK.shape
        if N != N2:
            raise ShapeError(f"query-key matrices must be square N x N, got {N} x {N2}")
        Min = _stack_layers(m_in, "m_in").detach()
        Mout = _stack_layers(m_out, "m_out").detach()
        if Min.shape[0] != L or Mout.shape[0] != L:
            raise ShapeError(
                f"qk has {L} layers but m_in has {Min.shape[0]} and m_out has {Mout.shape[0]}"
            )
        if Min.shape[1] != N:
            raise ShapeError(f"m_in[l] must be N x d_ff with N = {N}, got {tuple(Min.shape[1:])}")
        d_ff = Min.shape[2]
        if tuple(Mout.shape[1:]) != (d_ff, N):
            raise ShapeError(
                f"m_out[l] must be d_ff x N = {d_ff} x {N}, got {tuple(Mout.shape[1:])}"
            )
        return cls(
            n_layers=L,
            n_heads=H,
            hidden=N,
            d_head=None,
            d_ff=d_ff,
            source=source,
            family="proxy",
            _store=DenseHeads(QK, V, Min, Mout),
        )

    @classmethod
    @torch.no_grad()
    def of_reference(cls, net) -> "TransformerWeights":
        """The reference transformer ``net`` (:class:`~genbound.nets.ReferenceTransformer`) in the
        four-matrix form of Part III.

        Per layer and head the query-key form ``QK_h`` and the value-output map ``V_h`` of
        :meth:`~genbound.nets.ReferenceTransformer.effective_weights`; the block "``sigma``, then the
        dense map" is a feed-forward block ``phi(Z M_in) M_out`` with ``M_in = I`` and ``M_out = W_C``,
        exactly. With biases every map acts on the augmented row ``[z, 1]``; maps whose output has no
        constant coordinate are padded with zero columns to square ``(d_in x d_in)`` matrices, which
        changes no singular value and no column norm. Needs ``dense=True``.

        >>> from genbound.nets import ReferenceTransformer
        >>> TransformerWeights.of_reference(ReferenceTransformer(4, seed=0)).matrix("M_in", 0).shape
        torch.Size([4, 4])
        """
        if not getattr(net, "dense", False):
            raise ArchitectureError("the four-matrix form needs the dense map W_C (dense=True)")
        E = net.effective_weights()
        n = E.QK.shape[-1]

        def pad(M):
            return torch.nn.functional.pad(M, (0, M.shape[-2] - M.shape[-1]))

        m_in = torch.eye(n, dtype=E.QK.dtype, device=E.QK.device).expand(net.n_layers, n, n)
        return cls.from_proxy_matrices(E.QK, pad(E.V), m_in, pad(E.C))

    def select(self, *, layers=None, attention_scale: bool | None = None) -> "TransformerWeights":
        """These weights restricted to ``layers`` (indices into this object's layers, in the order
        given; the selection is then treated as the whole network) and/or with the score scale put
        in (``True``) or taken out (``False``) of every ``QK``. ``None`` keeps what this object has.

        Dense proxy matrices have no ``d_head`` and no score scale, so ``attention_scale=True`` on
        them raises.

        >>> import torch
        >>> I = torch.eye(2, dtype=torch.float64)
        >>> w = TransformerWeights.from_proxy_matrices([[I], [2 * I]], [[I], [I]], [I, I], [I, I])
        >>> w.select(layers=[1]).matrix("QK", 0, 0).tolist()
        [[2.0, 0.0], [0.0, 2.0]]
        """
        ids = list(range(self.n_layers)) if layers is None else layer_ids(self.n_layers, layers)
        scale = self.attention_scale if attention_scale is None else attention_scale
        if not isinstance(scale, bool):
            raise ParameterError(
                f"attention_scale must be True, False or None, got {attention_scale!r}"
            )
        if scale and self.is_dense:
            raise ParameterError(
                "attention_scale=True cannot apply to dense proxy matrices: they carry no d_head "
                "and no score scale; scale the qk matrices before passing them"
            )
        if layers is None and scale == self.attention_scale:
            return self
        store = self._store if layers is None else self._store.select(ids)
        return TransformerWeights(
            n_layers=len(ids),
            n_heads=self.n_heads,
            hidden=self.hidden,
            d_head=self.d_head,
            d_ff=self.d_ff,
            source=self.source,
            attention_scale=scale,
            family=self.family,
            kv_heads=self.kv_heads,
            n_experts=self.n_experts,
            coverage=self.coverage,
            _store=store,
        )

    # ---- access to matrices -------------------------------------------------------------------
    @property
    def is_dense(self) -> bool:
        """Whether the heads are held as dense ``N x N`` proxy matrices (no thin factors)."""
        return isinstance(self._store, DenseHeads)

    def _check_layer(self, layer) -> int:
        layer = check_positive_int(layer, "layer", minimum=0)
        if layer >= self.n_layers:
            raise ParameterError(f"layer must be < n_layers = {self.n_layers}, got {layer}")
        return layer

    def score_scale(self, layer: int) -> float:
        """The factor in every ``QK`` of ``layer``: the model's score scale with ``attention_scale``, else 1."""
        layer = self._check_layer(layer)
        if not self.attention_scale:
            return 1.0
        return self._store.score_scale(layer)

    @property
    def covered(self) -> bool:
        """Whether the papers' bound covers every matrix kind of these weights."""
        return self.coverage is None or all(c.covered for c in self.coverage.values())

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every matrix kind of one layer, that is :data:`~genbound.kinds.KINDS` plus ``M_gate`` (gated
        feed-forward) and ``router`` (mixture of experts) where the family has them."""
        if self.coverage is None:
            return KINDS
        return tuple(k for k in ALL_KINDS if k in self.coverage)

    def uncovered_reason(self) -> str:
        """In words, which kinds the bound does not cover and why ("" when covered)."""
        if self.covered:
            return ""
        return "; ".join(f"{k}: {c.note}" for k, c in self.coverage.items() if not c.covered)

    def _kv_index(self, dev) -> torch.Tensor | None:
        """For each query head, its key/value head (``None`` when every head has its own)."""
        kv = self.kv_heads or self.n_heads
        if kv == self.n_heads:
            return None
        return torch.arange(self.n_heads, device=dev) // (self.n_heads // kv)

    def head_factors(self, kind: str, layer: int, *, device=None):
        """Thin factors ``(left, right)`` of every head of one layer: ``left`` ``(H, N, d_head)``,
        ``right`` ``(H, d_head, N)``, float64, with ``left[h] @ right[h]`` the head's ``QK`` or ``V``.
        """
        layer = self._check_layer(layer)
        if kind not in HEAD_KINDS:
            raise ParameterError(f"kind must be one of {HEAD_KINDS}, got {kind!r}")
        if self.is_dense:
            raise ArchitectureError(
                "these weights were given as dense proxy matrices: they have no thin factors"
            )
        dev, home = resolve_device(device), home_device(device)
        H, N, dh = self.n_heads, self.hidden, self.d_head
        KV = self.kv_heads or H
        g = self._kv_index(dev)  # query head h uses key/value head g[h]
        if kind == "QK":
            a = self._raw(layer, "query", dev).reshape(H, dh, N)
            b = self._raw(layer, "key", dev).reshape(KV, dh, N)
            b = b if g is None else b[g]
            left = a.transpose(-1, -2)
            c = self.score_scale(layer)
            if c != 1.0:
                left = left * c
            return left.to(home), b.to(home)
        a = self._raw(layer, "value", dev).reshape(KV, dh, N)
        a = a if g is None else a[g]
        o = self._raw(layer, "attn_out", dev)  # (N, H*dh): rows of o^T for head h are o[:, s_h]^T
        return a.transpose(-1, -2).to(home), o.transpose(0, 1).reshape(H, dh, N).to(home)

    def matrix(
        self,
        kind: str,
        layer: int,
        head: int | None = None,
        *,
        device=None,
        expert: int | None = None,
    ) -> torch.Tensor:
        """One proxy matrix as a dense float64 tensor (for inspection and plots, not for speed).

        ``QK``/``V`` need ``head`` and are ``N x N``; ``M_in`` (and ``M_gate``) is ``N x d_ff``;
        ``M_out`` is ``d_ff x N``; ``router`` is ``N x E``. In a mixture of experts the feed-forward
        kinds need ``expert``.
        """
        layer = self._check_layer(layer)
        dev, home = resolve_device(device), home_device(device)
        if kind in HEAD_KINDS:
            if head is None:
                raise ParameterError(
                    f"{kind} is a per-head matrix: pass head=0..{self.n_heads - 1}"
                )
            head = check_positive_int(head, "head", minimum=0)
            if head >= self.n_heads:
                raise ParameterError(f"head must be < n_heads = {self.n_heads}, got {head}")
            if self.is_dense:
                return getattr(self._store, kind_attr(kind))[layer, head].to(home)
            left, right = self.head_factors(kind, layer, device=dev)
            return (left[head] @ right[head]).to(home)
        if kind not in self.kinds:
            raise ParameterError(f"unknown matrix kind {kind!r}; expected one of {self.kinds}")
        return self._mlp_matrix(kind, layer, dev, expert).to(home)

    def _raw(self, layer: int, role: str, dev, expert: int | None = None) -> torch.Tensor:
        """One raw weight tensor of layer ``layer`` in float64 on ``dev``, checked for finiteness."""
        t = self._store.get(layer, role, expert).to(device=dev, dtype=torch.float64)
        if not (
            bool(torch.isfinite(t.max())) and bool(torch.isfinite(t.min()))
        ):  # NaN/inf propagate
            raise NonFiniteError(
                f"{self.source}: {self._store.name(layer, role, expert)!r} holds non-finite values "
                f"(NaN or inf)"
            )
        return t

    def _mlp_matrix(self, kind: str, layer: int, dev, expert: int | None = None) -> torch.Tensor:
        """A feed-forward matrix in row-vector orientation: ``M_in``/``M_gate`` ``N x d_ff``,
        ``M_out`` ``d_ff x N``, ``router`` ``N x E`` (of ``expert`` in a mixture of experts)."""
        if self.is_dense:
            return getattr(self._store, kind_attr(kind))[layer].to(dev)
        if self.n_experts is not None and kind != "router":
            if expert is None:
                raise ParameterError(
                    f"{kind} is a per-expert matrix here: pass expert=0..{self.n_experts - 1}"
                )
            expert = check_positive_int(expert, "expert", minimum=0)
            if expert >= self.n_experts:
                raise ParameterError(f"expert must be < {self.n_experts}, got {expert}")
        else:
            expert = None
        return self._raw(layer, _FF_ROLE[kind], dev, expert).transpose(0, 1)

    # ---- spectra ------------------------------------------------------------------------------
    def layer_spectra(
        self,
        layer: int,
        *,
        device=None,
        method: str = "core",
        svd_driver: str | None = None,
        ff_route: str = "auto",
    ) -> dict:
        """Singular values, ``(2,1)`` norms and routes of one layer's matrices: ``{kind: (svals, norm21, route)}``."""
        layer = self._check_layer(layer)
        method = _check_method(method)
        dev, home = resolve_device(device), home_device(device)
        out = {}
        if self.is_dense:
            for kind in HEAD_KINDS:
                P = getattr(self._store, kind_attr(kind))[layer].to(dev)
                s = _svdvals(P, svd_driver)
                out[kind] = (_sorted_desc(s), _colnorm_sum(P), "dense-svd")
        else:
            for kind in HEAD_KINDS:
                left, right = self.head_factors(kind, layer, device=dev)
                s, n21 = _head_summary(left, right, method, svd_driver)
                del left, right
                out[kind] = (_sorted_desc(s), n21, "qr-core" if method == "core" else "dense-svd")
                _return_freed_memory()
        for kind in ("M_in", "M_out"):
            M = self._mlp_matrix(kind, layer, dev)
            n21 = _colnorm_sum(M)
            if method == "dense":
                s, route = _svdvals(M, svd_driver), "dense-svd"
            else:
                c = certified_singular_values(
                    M, route=ff_route, rtol=DEFAULT_CERT_RTOL, driver=svd_driver
                )
                s, route = c.svals, c.route
            del M
            out[kind] = (_sorted_desc(s), n21, route)
            _return_freed_memory()
        return {k: (s.to(home), n21.to(home), r) for k, (s, n21, r) in out.items()}

    def spectra(
        self,
        *,
        device=None,
        method: str = "core",
        progress: bool = False,
        cache: bool = True,
        svd_driver: str | None = None,
        ff_route: str = "auto",
    ) -> Spectra:
        """Singular values and ``(2,1)`` norms of every matrix, computed layer by layer.

        ``method="core"`` (exact, fast: thin-QR cores for heads; certified feed-forward spectra,
        :func:`~genbound.spectra.certified_singular_values`, whose route ``ff_route`` can force:
        ``"auto"``, ``"gram"``, ``"qr-svd"``) or ``"dense"`` (the authors' pipeline: dense products,
        full SVD). ``progress=True`` shows a tqdm bar over layers on stderr. Results are cached per
        ``(device, method, ff_route)`` on this object. ``svd_driver`` picks the cuSOLVER driver on
        CUDA (``"gesvd"``, ``"gesvdj"``; default torch's choice); it is ignored on the CPU. The route
        each layer's matrices took is in ``Spectra.routes``.
        """
        method = _check_method(method)
        if ff_route not in FF_ROUTES:
            raise ParameterError(f"ff_route must be one of {FF_ROUTES}, got {ff_route!r}")
        if not self.covered:
            raise ArchitectureError(
                f"{self.source}: the papers' bound does not cover every block of this {self.family} "
                f"model, so genbound gives no bound for it ({self.uncovered_reason()}); its "
                f"per-matrix spectra, labelled so: load_weights(...).matrix_table()"
            )
        dev, home = resolve_device(device), home_device(device)
        key = (str(dev), str(home), method, ff_route if method == "core" else None)
        if cache and key in self._cache:
            return self._cache[key]
        layers = range(self.n_layers)
        if progress:
            from tqdm.auto import tqdm

            layers = tqdm(layers, desc="layers", unit="layer", file=_stderr(), leave=False)
        if svd_driver not in (None, "gesvd", "gesvdj", "gesvda"):
            raise ParameterError(
                f"svd_driver must be None, 'gesvd', 'gesvdj' or 'gesvda', got {svd_driver!r}"
            )
        per = []
        for l in layers:
            per.append(
                self.layer_spectra(
                    l, device=dev, method=method, svd_driver=svd_driver, ff_route=ff_route
                )
            )
            _return_freed_memory()  # keeps the peak near one layer (see _return_freed_memory)
        stack = {
            k: (torch.stack([p[k][0] for p in per]), torch.stack([p[k][1] for p in per]))
            for k in KINDS
        }
        routes = {k: tuple(p[k][2] for p in per) for k in KINDS}
        sp = Spectra(
            qk=stack["QK"][0],
            v=stack["V"][0],
            m_in=stack["M_in"][0],
            m_out=stack["M_out"][0],
            qk_norm21=stack["QK"][1],
            v_norm21=stack["V"][1],
            m_in_norm21=stack["M_in"][1],
            m_out_norm21=stack["M_out"][1],
            hidden=self.hidden,
            d_ff=self.d_ff,
            method=method,
            routes=routes,
        ).to(home)
        if cache:
            self._cache[key] = sp
        return sp

    def layer_bytes(self) -> int:
        """Bytes of one layer's weight matrices in float64 (what one layer costs in memory)."""
        N, F, H = self.hidden, self.d_ff, self.n_heads
        dh = self.d_head or N // H
        kv = self.kv_heads or H
        n_ff = 3 if "M_gate" in self.kinds else 2
        return 8 * (2 * N * H * dh + 2 * N * kv * dh + n_ff * N * F * (self.n_experts or 1))

    # ---- every matrix, covered or not -----------------------------------------------------------
    def matrix_spectra(self, *, device=None, layers=None) -> list["MatrixSpectrum"]:
        """Every matrix's singular values, ``(2,1)`` norm and coverage, layer by layer.

        One :class:`MatrixSpectrum` per matrix, in the order of every table: per layer, ``QK`` and
        ``V`` of each query head (formed with its key/value head), then the feed-forward kinds
        (per expert in a mixture of experts) and the router. Heads go through the thin-QR cores of
        :meth:`spectra`; feed-forward matrices through
        :func:`~genbound.spectra.certified_singular_values`. This works for every family, covered
        or not: nothing here is a bound. ``layers`` restricts the layers (default all).
        """
        dev, home = resolve_device(device), home_device(device)
        ids = range(self.n_layers) if layers is None else layer_ids(self.n_layers, layers)
        cov = self.coverage or {}
        out = []
        for l in ids:
            heads = {}
            for kind in HEAD_KINDS:
                if self.is_dense:
                    P = getattr(self._store, kind_attr(kind))[l].to(dev)
                    heads[kind] = (_svdvals(P), _colnorm_sum(P), "dense-svd")
                else:
                    left, right = self.head_factors(kind, l, device=dev)
                    s, n21 = _head_summary(left, right, "core")
                    heads[kind] = (s, n21, "qr-core")
            for h in range(self.n_heads):
                for kind in HEAD_KINDS:
                    s, n21, route = heads[kind]
                    c = cov.get(kind)
                    out.append(
                        MatrixSpectrum(
                            kind=kind,
                            layer=l,
                            head=h,
                            expert=-1,
                            rows=self.hidden,
                            cols=self.hidden,
                            svals=_sorted_desc(s[h]).to(home),
                            norm21=float(n21[h]),
                            route=route,
                            covered=True if c is None else c.covered,
                            note="" if c is None else c.note,
                        )
                    )
            ff_kinds = [k for k in self.kinds if k not in HEAD_KINDS]
            for kind in ff_kinds:
                experts = (
                    [None] if self.n_experts is None or kind == "router" else range(self.n_experts)
                )
                for e in experts:
                    M = self._mlp_matrix(kind, l, dev, e)
                    cert = certified_singular_values(M, rtol=DEFAULT_CERT_RTOL)
                    c = cov.get(kind)
                    out.append(
                        MatrixSpectrum(
                            kind=kind,
                            layer=l,
                            head=MLP_HEAD,
                            expert=-1 if e is None else e,
                            rows=int(M.shape[0]),
                            cols=int(M.shape[1]),
                            svals=_sorted_desc(cert.svals).to(home),
                            norm21=float(_colnorm_sum(M)),
                            route=cert.route,
                            covered=True if c is None else c.covered,
                            note="" if c is None else c.note,
                        )
                    )
                    del M
            _return_freed_memory()
        return out

    def matrix_table(self, *, device=None, layers=None, rank_tol: float = 1e-10, spectra=None):
        """:meth:`matrix_spectra` (or ``spectra``, its result) as a DataFrame, one row per matrix:
        ``kind, layer, head, expert, rows, cols, rank, sigma_max, frobenius, nuclear, stable_rank,
        norm_21, route, covered, note``. ``rank`` counts singular values above ``rank_tol * min(rows,
        cols) * max(sigma_max, 1)`` (the rank rule of the bound's tables). ``covered`` False means the
        papers' bound does not describe the matrix's block (``note`` says why): spectra only."""
        import pandas as pd

        rows = []
        for m in spectra or self.matrix_spectra(device=device, layers=layers):
            s = m.svals.double()
            smax = float(s[0]) if s.numel() else 0.0
            thr = rank_tol * min(m.rows, m.cols) * max(smax, 1.0)
            fro = float(torch.linalg.vector_norm(s))
            rows.append(
                {
                    "kind": m.kind,
                    "layer": m.layer,
                    "head": m.head,
                    "expert": m.expert,
                    "rows": m.rows,
                    "cols": m.cols,
                    "rank": int((s > thr).sum()),
                    "sigma_max": smax,
                    "frobenius": fro,
                    "nuclear": float(s.sum()),
                    "stable_rank": (fro / smax) ** 2 if smax > 0 else 0.0,
                    "norm_21": m.norm21,
                    "route": m.route,
                    "covered": m.covered,
                    "note": m.note,
                }
            )
        return pd.DataFrame(rows)


@dataclass(frozen=True)
class MatrixSpectrum:
    """One matrix's singular values (descending; for a head, the ``min(N, d_head)`` nonzero-capable
    core values), ``(2,1)`` norm, spectrum route and coverage (see
    :meth:`TransformerWeights.matrix_table`). ``head`` is -1 for feed-forward kinds, ``expert`` -1
    outside a mixture of experts."""

    kind: str
    layer: int
    head: int
    expert: int
    rows: int
    cols: int
    svals: torch.Tensor
    norm21: float
    route: str
    covered: bool
    note: str


#: The weight role of each feed-forward kind.
_FF_ROLE = {"M_in": "ff_in", "M_out": "ff_out", "M_gate": "ff_gate", "router": "router"}


# --------------------------------------------------------------------------------------------------
# helpers


def layer_ids(n_total: int, layers) -> list[int]:
    """Checked layer indices: integers in ``[0, n_total)``, at least one, each at most once (a repeated layer
    would count twice in every sum over layers). Linear in the number of indices; the error lines show
    the first few offending values only."""
    if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
        raise ParameterError(f"layers must be a list of layer indices, got {shown_value(layers)}")
    ids = [check_positive_int(i, "layers[i]", minimum=0) for i in layers]
    if not ids:
        raise ParameterError("layers is empty: select at least one layer")
    bad = [i for i in ids if i >= n_total]
    if bad:
        raise ParameterError(
            f"layers {shown(bad)} do not exist: the model has {n_total} layers (0 to {n_total - 1})"
        )
    seen: set[int] = set()
    rep = sorted({i for i in ids if i in seen or seen.add(i)})
    if rep:
        raise ParameterError(
            f"layers {shown(ids)} repeat layer{'s' if len(rep) > 1 else ''} {shown(rep)}: "
            f"name each layer once"
        )
    return ids


def _colnorm_sum(M: torch.Tensor) -> torch.Tensor:
    """``||M||_{2,1}``: sum over the columns of their l2 norms (batched over leading axes)."""
    return torch.linalg.vector_norm(M, ord=2, dim=-2).sum(dim=-1)


def _svdvals(A: torch.Tensor, driver: str | None = None) -> torch.Tensor:
    """``torch.linalg.svdvals`` with an optional cuSOLVER driver (ignored on the CPU)."""
    if driver is not None and A.is_cuda:
        return torch.linalg.svdvals(A, driver=driver)
    return torch.linalg.svdvals(A)


def _head_summary(left: torch.Tensor, right: torch.Tensor, method: str, driver: str | None = None):
    """Singular values (descending) and ``(2,1)`` norms of the products ``left @ right`` of a stack.

    ``left`` is ``(H, N, r)``, ``right`` is ``(H, r, N)``. ``method="core"`` uses thin QR cores,
    ``"dense"`` forms the products and takes a full SVD.
    """
    if method == "dense":
        P = left @ right
        return _svdvals(P, driver), _colnorm_sum(P)
    R1 = torch.linalg.qr(left, mode="r").R  # (H, k1, r), k1 = min(N, r)
    R2 = torch.linalg.qr(right.transpose(-1, -2), mode="r").R  # (H, k2, r)
    s = _svdvals(R1 @ R2.transpose(-1, -2), driver)
    # columns of left @ right = Q1 (R1 @ right); Q1 has orthonormal columns
    return s, _colnorm_sum(R1 @ right)


def _sorted_desc(s: torch.Tensor) -> torch.Tensor:
    return torch.sort(s, dim=-1, descending=True).values


_LIBC = None


def _return_freed_memory() -> None:
    """Give the heap pages freed by the last layer back to the OS (glibc ``malloc_trim(0)``).

    glibc raises its mmap threshold after large blocks are freed, so later layer-sized temporaries
    come from the heap, which fragments: without this call the resident set of a 12-layer BERT-base
    pass grows to several layers' worth (measured: ~200-300 MB instead of ~47 MB above the
    interpreter). ``malloc_trim`` only releases free memory; it changes no allocator setting. A no-op
    where glibc is not available.
    """
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes
            import ctypes.util

            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC = lib if hasattr(lib, "malloc_trim") else False
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


def _stderr():
    import sys

    return sys.stderr


def _check_method(method: str) -> str:
    if method not in ("core", "dense"):
        raise ParameterError(f"method must be 'core' or 'dense', got {method!r}")
    return method


def _stack_heads(x, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor) or not isinstance(x, (list, tuple)):
        return as_tensor(x, name, ndim=4)
    if len(x) == 0:
        raise ShapeError(f"{name} is empty: expected {name}[l][h] for at least one layer and head")
    layers = []
    for l, heads in enumerate(x):
        if not isinstance(heads, (list, tuple)) or len(heads) == 0:
            raise ShapeError(f"{name}[{l}] must be a non-empty list of per-head matrices")
        mats = [as_tensor(m, f"{name}[{l}][{h}]", ndim=2) for h, m in enumerate(heads)]
        shapes = {tuple(m.shape) for m in mats}
        if len(shapes) != 1:
            raise ShapeError(f"{name}[{l}] holds matrices of different shapes {sorted(shapes)}")
        layers.append(torch.stack(mats))
    if len({tuple(t.shape) for t in layers}) != 1:
        raise ShapeError(f"the layers of {name} differ in head count or matrix shape")
    return torch.stack(layers)


def _stack_layers(x, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor) or not isinstance(x, (list, tuple)):
        return as_tensor(x, name, ndim=3)
    if len(x) == 0:
        raise ShapeError(f"{name} is empty: expected one matrix per layer")
    mats = [as_tensor(m, f"{name}[{l}]", ndim=2) for l, m in enumerate(x)]
    if len({tuple(m.shape) for m in mats}) != 1:
        raise ShapeError(
            f"the matrices of {name} differ in shape: {[tuple(m.shape) for m in mats]}"
        )
    return torch.stack(mats)
