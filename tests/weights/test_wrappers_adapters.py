"""Models behind holders and with LoRA adapters: every family read through DataParallel, an
Accelerate-style ``.module`` holder and a Lightning-style ``.model`` holder gives the values of the
bare model; LoRA adapters are merged as ``merge_and_unload()`` merges them (checked against peft
itself where it is installed, and against ``W + s B A`` written out here on a peft-shaped module);
adapters genbound does not merge, adapter tensors in a checkpoint and adapter-only folders are refused
with the hint to merge first."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from genbound.cli import main
from genbound.errors import ArchitectureError, GenboundError
from genbound.weights import load_weights
from genbound.weights.modules import MERGE_HINT
from reference_families import ARCHS, make_model, transformers

T = transformers
FLOATS = ["rows", "cols", "rank", "sigma_max", "frobenius", "nuclear", "norm_21"]


def _encoders():
    return {
        "bert": lambda: T.BertModel(
            T.BertConfig(
                hidden_size=8,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=12,
                vocab_size=20,
            )
        ),
        "gpt2": lambda: T.GPT2LMHeadModel(
            T.GPT2Config(n_embd=8, n_layer=2, n_head=2, vocab_size=20)
        ),
        "distilbert": lambda: T.DistilBertModel(
            T.DistilBertConfig(dim=8, n_layers=2, n_heads=2, hidden_dim=12, vocab_size=20)
        ),
    }


def _model(arch: str):
    if arch in _encoders():
        torch.manual_seed(0)
        return _encoders()[arch]().double().eval()
    return make_model(arch)


class Accelerated(torch.nn.Module):  # Accelerate / DDP: the model under .module
    def __init__(self, m):
        super().__init__()
        self.module = m


class Lightning(torch.nn.Module):  # a LightningModule: the model under .model, a loss beside it
    def __init__(self, m):
        super().__init__()
        self.model = m
        self.loss = torch.nn.CrossEntropyLoss()
        self.hparams = {"lr": 1e-3}


def _table(source):
    return load_weights(source).matrix_table()[["kind", "layer", "head", *FLOATS]]


@pytest.mark.parametrize("arch", list(_encoders()) + ARCHS)
def test_every_family_is_read_through_its_holders(arch):
    model = _model(arch)
    want = _table(model)
    holders = {
        "DataParallel": torch.nn.DataParallel(model),
        "Accelerated": Accelerated(model),
        "Lightning": Lightning(model),
        "nested": Lightning(torch.nn.DataParallel(model)),
    }
    for name, held in holders.items():
        got = _table(held)
        assert got.equals(want), name
    assert load_weights(holders["nested"]).source.startswith("module Lightning (its .model.module")


def test_a_module_without_config_is_not_told_to_edit_a_config():
    llama = make_model("llama")
    bare = torch.nn.Module()
    bare.layers = llama.model.layers  # Llama's names (shared by several families), no .config
    with pytest.raises(ArchitectureError) as exc:
        load_weights(bare)
    msg = str(exc.value)
    assert "add 'model_type'" not in msg and "pass the Hugging Face model itself" in msg
    assert "mixtral, mixtral" not in msg


# ------------------------------------------------------------------------------------ LoRA adapters
class LoraLinear(torch.nn.Module):
    """peft's ``lora.Linear`` as its attributes are laid out (no peft needed)."""

    def __init__(self, base, r, scaling, *, fan_in_fan_out=False, adapters=("default",)):
        super().__init__()
        self.base_layer = base
        out, inp = base.weight.shape[::-1] if fan_in_fan_out else base.weight.shape
        self.lora_A = torch.nn.ModuleDict(
            {a: torch.nn.Linear(inp, r, bias=False).double() for a in adapters}
        )
        self.lora_B = torch.nn.ModuleDict(
            {a: torch.nn.Linear(r, out, bias=False).double() for a in adapters}
        )
        self.lora_dropout = torch.nn.ModuleDict({a: torch.nn.Identity() for a in adapters})
        self.scaling = {a: scaling for a in adapters}
        self.active_adapters = list(adapters)
        self.merged_adapters: list[str] = []
        self.fan_in_fan_out = fan_in_fan_out
        self.use_dora = {a: False for a in adapters}
        self.disable_adapters = False

    def delta(self, a):
        d = self.lora_B[a].weight @ self.lora_A[a].weight * self.scaling[a]
        return d.T if self.fan_in_fan_out else d


def _lora(model, suffixes, r=2, scaling=1.5, **kw):
    """Replace every linear whose name ends with one of ``suffixes`` by a LoraLinear; return them."""
    layers = {}
    for name, mod in list(model.named_modules()):
        if name.endswith(tuple(suffixes)):
            parent, _, attr = name.rpartition(".")
            lora = LoraLinear(mod, r, scaling, **kw)
            setattr(model.get_submodule(parent), attr, lora)
            layers[name] = lora
    return layers


def _merged_by_hand(model, layers):
    out = copy.deepcopy(model)
    for name, lora in layers.items():
        parent, _, attr = name.rpartition(".")
        base = copy.deepcopy(lora.base_layer)
        with torch.no_grad():
            for a in lora.active_adapters:
                if a not in lora.merged_adapters and not lora.disable_adapters:
                    base.weight += lora.delta(a)
        setattr(out.get_submodule(parent), attr, base)
    return out


@pytest.mark.parametrize(
    ("arch", "suffixes", "fifo"),
    [
        ("bert", ["query", "value", "intermediate.dense"], False),
        ("gpt2", ["attn.c_attn", "mlp.c_proj"], True),
        ("llama", ["q_proj", "k_proj", "down_proj"], False),
    ],
)
def test_lora_is_merged_as_w_plus_s_ba(arch, suffixes, fifo):
    model = _model(arch)
    base = _table(copy.deepcopy(model))
    torch.manual_seed(1)
    layers = _lora(model, suffixes, fan_in_fan_out=fifo, adapters=("default", "other"))
    for lora in layers.values():
        lora.active_adapters = ["default", "other"]
    got = _table(model)
    assert got.equals(_table(_merged_by_hand(model, layers)))
    assert not got.equals(base)  # the adapters moved the values
    assert got.equals(_table(Lightning(model)))
    for lora in layers.values():  # one adapter merged into the base already: not added twice
        lora.merged_adapters = ["other"]
    assert _table(model).equals(_table(_merged_by_hand(model, layers)))
    for lora in layers.values():  # adapters switched off: the base weights, as the layer computes
        lora.disable_adapters = True
    assert _table(model).equals(base)


def test_adapters_genbound_does_not_merge_are_refused_with_the_hint():
    model = _model("bert")
    (lora,) = _lora(model, ["layer.0.attention.self.query"]).values()
    lora.use_dora = {"default": True}
    with pytest.raises(GenboundError, match=r"merge_and_unload\(\)"):
        load_weights(model)
    model = _model("bert")
    q = model.encoder.layer[0].attention.self
    q.query = type("IA3Linear", (torch.nn.Module,), {})()
    q.query.base_layer = torch.nn.Linear(8, 8).double()
    q.query.ia3_l = torch.nn.ParameterDict({"default": torch.nn.Parameter(torch.ones(8, 1))})
    with pytest.raises(
        GenboundError, match=r"\(IA3Linear\) genbound does not merge.*merge_and_unload"
    ):
        load_weights(model)


def test_lora_equals_peft_merge_and_unload():
    peft = pytest.importorskip("peft")
    for arch, targets, fifo in (
        ("gpt2", ["c_attn", "c_proj", "c_fc"], True),
        ("falcon", ["query_key_value", "dense", "dense_h_to_4h"], False),
    ):
        cfg = peft.LoraConfig(
            r=2, lora_alpha=3, target_modules=targets, init_lora_weights=False, fan_in_fan_out=fifo
        )
        p = peft.get_peft_model(_model(arch), cfg).double()
        merged = copy.deepcopy(p).merge_and_unload()
        assert _table(p).equals(_table(merged))
        assert _table(torch.nn.DataParallel(p)).equals(_table(merged))


# ----------------------------------------------------------------------------- adapter checkpoints
def test_adapter_folders_and_adapter_tensors_are_refused(tmp_path, capsys):
    from safetensors.torch import save_file

    ad = tmp_path / "adapter"
    ad.mkdir()
    (ad / "adapter_config.json").write_text(
        json.dumps({"peft_type": "LORA", "base_model_name_or_path": "org/base-model", "r": 2})
    )
    a = torch.zeros(2, 8, dtype=torch.float64)
    save_file(
        {"base_model.model.encoder.layer.0.attention.self.query.lora_A.weight": a},
        ad / "adapter_model.safetensors",
    )
    with pytest.raises(ArchitectureError) as exc:
        load_weights(ad)
    assert "'org/base-model'" in str(exc.value) and MERGE_HINT in str(exc.value)
    assert main(["analyze", str(ad)]) == 2
    err = capsys.readouterr().err
    assert "merge_and_unload()" in err and "Traceback" not in err

    full = tmp_path / "unmerged"
    model = _model("bert")
    _lora(model, ["query"])
    model.save_pretrained(full)  # a model saved with its adapter layers in place
    with pytest.raises(ArchitectureError, match=r"adapter tensors .*merge_and_unload\(\)"):
        load_weights(full)


def test_analyze_with_a_config_override_reads_through_holders_and_adapters():
    import genbound

    model = _model("bert")
    torch.manual_seed(1)
    _lora(model, ["query"])
    want = genbound.analyze(model).matrices()
    got = genbound.analyze(Lightning(model), config=model.config).matrices()
    assert got.equals(want)
