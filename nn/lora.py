"""LoRA layers: "LoRA: Low-Rank Adaptation of Large Language Models" (Hu et al., 2021).

A pre-trained weight W (out, in) stays frozen; each adapter learns a low-rank update B A
(B: out x r, A: r x in) scaled by alpha / r, so y = x W^T + b + (alpha / r) dropout(x) A^T B^T,
and r (in + out) numbers are trained instead of in * out.

Why these live in `nn` and not in `models`: `LoraLinear` and `ModulesToSaveWrapper` are layers
(a Linear with named low-rank updates, a module with a trainable copy per adapter) that any
model can hold and that know nothing of checkpoints. Choosing which layers of a model to adapt,
the adapters of a whole model and peft's adapter files are `tensorgrad.models.lora`.

The attribute names are peft's (`lora_A.<adapter>.weight`, `lora_B`, `lora_dropout`, `scaling`,
`merged_adapters`; `original_module`, `modules_to_save.<adapter>`), so peft's state-dict keys
map onto ours by name. Unlike peft, `LoraLinear` keeps the base layer's `weight` and `bias` as
its own (shared, not copied) parameters instead of a `base_layer` submodule: the wrapped model's
base keys do not change, and code that reads `layer.weight` keeps working.
"""
import copy
import math

import tensorgrad as tg

from . import functional as F
from . import init
from .containers import ModuleDict
from .layers import Dropout, Identity, Linear
from .module import Module


class LoraLinear(Linear):
    """A Linear (sharing `base`'s weight (out, in) and bias (out,)) plus named LoRA adapters.
    x: (*, in_features) -> (*, out_features).

    `update_layer(name, r, lora_alpha, ...)` adds an adapter; `active_adapters` are the ones
    forward adds; `merge()` folds them into the weight and `unmerge()` takes them out again.
    """

    def __init__(self, base):
        if type(base) is not Linear:  # a subclass may compute something else than F.linear
            raise TypeError(f"LoraLinear: expected an nn.Linear to adapt, got "
                            f"{type(base).__name__}")
        Module.__init__(self)  # not Linear.__init__: the parameters are base's own
        self.in_features, self.out_features = base.in_features, base.out_features
        self.weight, self.bias = base.weight, base.bias  # the same Parameters: nothing copied
        self.lora_A, self.lora_B = ModuleDict(), ModuleDict()
        self.lora_dropout = ModuleDict()
        self.scaling = {}  # adapter -> alpha / r (alpha / sqrt(r) with rsLoRA)
        self.active_adapters = []
        self.merged_adapters = []  # in the order they were folded into the weight
        self.disable_adapters = False

    @property
    def merged(self):
        return bool(self.merged_adapters)

    def update_layer(self, adapter_name, r, lora_alpha, lora_dropout=0.0, init_lora_weights=True,
                     use_rslora=False):
        """Add (or replace) the adapter `adapter_name` of rank r. init_lora_weights: True (peft's
        default: A Kaiming-uniform, B zero, so the layer's output is unchanged), "gaussian"
        (A ~ N(0, 1/r^2), B zero) or False (B keeps Linear's random initialisation too: an
        adapter that changes the output from the start, for tests). The first adapter becomes
        active."""
        if not isinstance(r, int) or r <= 0:
            raise ValueError(f"LoraLinear.update_layer: r must be a positive integer, got {r!r}")
        if init_lora_weights not in (True, False, "gaussian"):
            raise ValueError(f"LoraLinear.update_layer: init_lora_weights must be True, False or "
                             f"'gaussian', got {init_lora_weights!r}")
        options = dict(bias=False, device=self.weight.device, dtype=self.weight.dtype)
        self.lora_A[adapter_name] = Linear(self.in_features, r, **options)  # A: (r, in)
        self.lora_B[adapter_name] = Linear(r, self.out_features, **options)  # B: (out, r)
        self.lora_dropout[adapter_name] = Dropout(lora_dropout) if lora_dropout > 0 else Identity()
        self.scaling[adapter_name] = lora_alpha / (math.sqrt(r) if use_rslora else r)
        if init_lora_weights == "gaussian":
            init.normal_(self.lora_A[adapter_name].weight, std=1.0 / r)
        elif init_lora_weights:  # Linear's own init already is Kaiming-uniform with a = sqrt(5)
            init.kaiming_uniform_(self.lora_A[adapter_name].weight, a=math.sqrt(5))
        if init_lora_weights:
            init.zeros_(self.lora_B[adapter_name].weight)
        if not self.active_adapters:
            self.active_adapters = [adapter_name]

    def set_adapter(self, adapter_names):
        """Make `adapter_names` (a name or a list) the active adapters: only they are added in
        forward and only their parameters require grad, as in peft."""
        names = [adapter_names] if isinstance(adapter_names, str) else list(adapter_names)
        for name in self.lora_A:
            self.lora_A[name].requires_grad_(name in names)
            self.lora_B[name].requires_grad_(name in names)
        self.active_adapters = names

    def delete_adapter(self, adapter_name):
        if adapter_name in self.merged_adapters:
            raise ValueError(f"LoraLinear: adapter {adapter_name!r} is merged; unmerge first")
        for table in (self.lora_A, self.lora_B, self.lora_dropout):
            del table[adapter_name]
        self.scaling.pop(adapter_name, None)
        self.active_adapters = [a for a in self.active_adapters if a != adapter_name]

    def forward(self, x):
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"LoraLinear '{self._path}': expected input of shape "
                             f"(*, {self.in_features}), got {x.shape}")
        if self.disable_adapters and self.merged:
            self.unmerge()  # as peft: the base layer alone, whatever was folded in
        out = F.linear(x, self.weight, self.bias)  # (*, out)
        if self.disable_adapters or self.merged:
            return out
        for name in self.active_adapters:
            if name in self.lora_A:
                h = self.lora_A[name](self.lora_dropout[name](x))  # (*, r)
                out = out + self.lora_B[name](h) * self.scaling[name]  # (*, out)
        return out

    def get_delta_weight(self, adapter_name):
        """scaling * B @ A, the adapter's update of the weight: (out, r) @ (r, in) -> (out, in)."""
        B, A = self.lora_B[adapter_name].weight, self.lora_A[adapter_name].weight
        return (B @ A) * self.scaling[adapter_name]

    def merge(self, adapter_names=None):
        """Fold the active adapters (or `adapter_names`) into the weight, in place; forward then
        costs one matmul. Already merged adapters are skipped."""
        names = self.active_adapters if adapter_names is None else adapter_names
        with tg.no_grad():
            for name in names:
                if name in self.lora_A and name not in self.merged_adapters:
                    self.weight.add_(self.get_delta_weight(name))
                    self.merged_adapters.append(name)

    def unmerge(self):
        """Take every merged adapter out of the weight again (last merged first)."""
        with tg.no_grad():
            while self.merged_adapters:
                self.weight.sub_(self.get_delta_weight(self.merged_adapters.pop()))

    def to_linear(self):
        """A plain Linear holding this layer's weight and bias (what merge_and_unload leaves)."""
        linear = Linear(self.in_features, self.out_features, bias=self.bias is not None,
                        device=self.weight.device, dtype=self.weight.dtype)
        linear.weight = self.weight
        if self.bias is not None:
            linear.bias = self.bias
        return linear

    def extra_repr(self):
        ranks = ", ".join(f"{name}: r={self.lora_A[name].out_features}" for name in self.lora_A)
        return super().extra_repr() + f", adapters=({ranks})"


class ModulesToSaveWrapper(Module):
    """A module that is fully trained (peft's `modules_to_save`, e.g. a new classifier head):
    the frozen `original_module` plus one trainable copy per adapter in `modules_to_save`.
    Forward runs the active adapter's copy, or the original when adapters are disabled or none
    is active. Attributes it does not have (`weight`, a tied embedding's) are read from the
    module forward would run."""

    def __init__(self, module):
        super().__init__()
        self.original_module = module.requires_grad_(False)
        self.modules_to_save = ModuleDict()
        self.active_adapter = None
        self.disable_adapters = False

    def update(self, adapter_name):
        """Add a trainable copy of the original for `adapter_name`."""
        self.modules_to_save[adapter_name] = copy.deepcopy(self.original_module).requires_grad_()
        if self.active_adapter is None:
            self.active_adapter = adapter_name

    def set_adapter(self, adapter_name):
        for name, module in self.modules_to_save.items():
            module.requires_grad_(name == adapter_name)
        self.active_adapter = adapter_name

    def delete_adapter(self, adapter_name):
        del self.modules_to_save[adapter_name]
        if self.active_adapter == adapter_name:
            self.active_adapter = None

    @property
    def active_module(self):
        if self.disable_adapters or self.active_adapter not in self.modules_to_save:
            return self.original_module
        return self.modules_to_save[self.active_adapter]

    def forward(self, *args, **kwargs):
        return self.active_module(*args, **kwargs)

    def __getattr__(self, name):
        # Reached only when ordinary lookup fails; registered entries live in __dict__.
        if "_modules" not in self.__dict__ or name.startswith("_"):
            return super().__getattr__(name)
        return getattr(self.active_module, name)
