"""LoRA on any model: "LoRA: Low-Rank Adaptation of Large Language Models" (Hu et al., 2021).

`get_peft_model(model, LoraConfig(...))` replaces the model's matching `nn.Linear` layers by
`nn.LoraLinear` (the layer, in tensorgrad.nn.lora, since any model may hold it), freezes
everything else and returns a `PeftModel` that runs, merges, switches and saves the adapters.
Where this module is silent it does what Hugging Face's `peft` library does, under the same
names, and it reads and writes peft's adapter folders:

    adapter_config.json         peft's LoraConfig fields (peft_type "LORA")
    adapter_model.safetensors   base_model.model.<HF module>.lora_A.weight (r, in), lora_B.weight
                                (out, r), [<HF module>.base_layer.bias], [modules_to_save tensors]

Hugging Face names come from the model's `hf_parameter_names()` ({HF parameter name: ours}, one
per model family, e.g. `transformer.h.0.attn.c_attn.weight` -> `blocks.0.self_attn.qkv_proj
.weight`); a module's HF name is the common prefix of its parameters' HF names. A model without
that method (a user's own nn.Module) is named by its own parameter names, as peft does with a
plain torch module. Targets may be named either way (`c_attn` or `qkv_proj` on GPT-2).
LoRA weights need no transposing for GPT-2's Conv1D layers: peft keeps A (r, in) and B (out, r)
there too and only transposes when merging, which `fan_in_fan_out: true` tells it to do.
"""
import contextlib
import dataclasses
import json
import os
import re
import warnings

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn.lora import LoraLinear, ModulesToSaveWrapper

from . import hub
from .gpt import GPT

PEFT_PREFIX = "base_model.model."  # peft's keys: PeftModel.base_model (LoraModel).model
CONFIG_NAME, WEIGHTS_NAME = "adapter_config.json", "adapter_model.safetensors"
# peft features whose non-default ("truthy") value would change the outputs and that this
# module does not implement: a file using one is refused rather than loaded wrongly.
_UNSUPPORTED_PEFT_KEYS = ("use_dora", "rank_pattern", "alpha_pattern", "layers_to_transform",
                          "layers_pattern", "lora_bias", "target_parameters", "layer_replication",
                          "trainable_token_indices", "use_qalora", "alora_invocation_tokens")


@dataclasses.dataclass
class LoraConfig:
    r: int = 8  # peft's defaults throughout
    lora_alpha: float = 8  # the update is scaled by lora_alpha / r
    lora_dropout: float = 0.0  # on the adapter's input only (training mode)
    # Which Linear layers get an adapter: a list of names (a module matches when its path is
    # one of them or ends with "." + one), a regex the whole path must match (a str), or
    # "all-linear". Paths are ours or Hugging Face's (hf_parameter_names()).
    target_modules: list | str | None = None
    exclude_modules: list | str | None = None  # matched the same way; wins over targets
    # Whether the Hugging Face layers store their weight as (in, out) (GPT-2's Conv1D); ours
    # never do. Written to adapter_config.json for peft; set for GPT automatically.
    fan_in_fan_out: bool = False
    bias: str = "none"  # which biases train too: "none", "all", or "lora_only" (adapted layers)
    modules_to_save: list | None = None  # modules trained in full, one copy per adapter
    init_lora_weights: bool | str = True  # True: B = 0 (no change at first); "gaussian"; False
    use_rslora: bool = False  # scale by lora_alpha / sqrt(r) (Kalajdzievski, 2023)
    inference_mode: bool = False  # adapter frozen (what from_pretrained gives by default)

    def __post_init__(self):
        if not isinstance(self.r, int) or self.r <= 0:
            raise ValueError(f"LoraConfig: r must be a positive integer, got {self.r!r}")
        if self.bias not in ("none", "all", "lora_only"):
            raise ValueError(f"LoraConfig: bias must be 'none', 'all' or 'lora_only', got "
                             f"{self.bias!r}")
        if self.target_modules is None:
            raise ValueError("LoraConfig: target_modules is required (names, a regex, or "
                             "'all-linear')")
        for name in ("target_modules", "exclude_modules", "modules_to_save"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                setattr(self, name, sorted(value) if isinstance(value, set) else list(value))

    def to_peft_dict(self, target_modules, modules_to_save):
        """The adapter_config.json peft reads, with the targets given under HF names."""
        fields = dataclasses.asdict(self)
        fields.update(target_modules=target_modules, modules_to_save=modules_to_save,
                      exclude_modules=None, inference_mode=True)
        return {"peft_type": "LORA", "task_type": None, "base_model_name_or_path": None,
                "revision": None, **fields}

    @classmethod
    def from_peft_dict(cls, d):
        if d.get("peft_type") != "LORA":
            raise ValueError(f"LoraConfig: not a LoRA adapter (peft_type={d.get('peft_type')!r})")
        used = [f"{key}={d[key]!r}" for key in _UNSUPPORTED_PEFT_KEYS if d.get(key)]
        if used:
            raise ValueError(f"LoraConfig: the adapter uses peft features tensorgrad does not "
                             f"implement: {', '.join(used)}")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def _matches(pattern, keys):
    """peft's rule: a regex must match a whole key; a name matches a key equal to it or ending
    with "." + it. keys: the names one module goes by (ours, Hugging Face's)."""
    if pattern is None:
        return False
    if isinstance(pattern, str):
        return any(re.fullmatch(pattern, key) for key in keys)
    return any(key == t or key.endswith("." + t) for key in keys for t in pattern)


class _HubNames:
    """Our parameter names <-> those of the Hugging Face model the adapter files are for."""

    def __init__(self, model):
        if hasattr(model, "peft_parameter_names"):  # HF's names in memory differ from disk
            self.to_ours = dict(model.peft_parameter_names())
        elif hasattr(model, "hf_parameter_names"):
            self.to_ours = dict(model.hf_parameter_names())
        else:  # a user's own module: its names are the names
            self.to_ours = {name: name for name in model.state_dict()}
        self.to_hf = {ours: hf for hf, ours in self.to_ours.items()}

    def module(self, path):
        """The HF name of our module at `path`: the common prefix of its parameters' names."""
        names = [hf.split(".") for ours, hf in self.to_hf.items() if ours.startswith(path + ".")]
        if not names:
            return None
        if len(names) == 1:
            return ".".join(names[0][:-1])
        prefix = os.path.commonprefix(names)  # works on lists: component by component
        return ".".join(prefix) or None

    def parameter(self, ours):
        if ours not in self.to_hf:
            raise ValueError(f"PeftModel: parameter {ours!r} has no Hugging Face name "
                             f"(hf_parameter_names() does not list it)")
        return self.to_hf[ours]


def _shortest_suffixes(chosen, universe):
    """For each HF module path in `chosen`, its shortest dotted suffix that matches (by peft's
    name rule) only modules in `chosen`: the target list peft resolves to exactly this set."""
    chosen_set, out = set(chosen), []
    for path in chosen:
        parts = path.split(".")
        for k in range(1, len(parts) + 1):
            suffix = ".".join(parts[-k:])
            if all(u in chosen_set for u in universe if _matches([suffix], [u])):
                break
        if suffix not in out:
            out.append(suffix)
    return out


class PeftModel(nn.Module):
    """A model with named LoRA adapters (the LoRA layers live inside `base_model`, replaced in
    place, as peft does). Calling it calls the base model; attributes it lacks (`generate`,
    `config`) are the base model's. `state_dict()` is the whole model; `adapter_state_dict()`
    and `save_pretrained` hold only the adapter."""

    def __init__(self, model, config, adapter_name="default"):
        super().__init__()
        self.base_model = model
        self.peft_config = {}
        self.active_adapter = adapter_name
        self.hub_names = _HubNames(model)  # taken before any layer is replaced
        model.requires_grad_(False)
        self.add_adapter(adapter_name, config)

    def forward(self, *args, **kwargs):
        return self.base_model(*args, **kwargs)

    def __getattr__(self, name):
        # Reached only when ordinary lookup fails; registered entries live in __dict__.
        if "base_model" not in self.__dict__ or name.startswith("_"):
            return super().__getattr__(name)
        return getattr(self.__dict__["base_model"], name)

    def get_base_model(self):
        return self.base_model

    # --- the model's layers, under the names the configs speak of --------------------------------
    def _walk(self):
        """(path, module) through the base model, not entering LoRA layers and modules_to_save
        wrappers (their insides are the adapters' business)."""
        closed = ()
        for path, module in self.base_model.named_modules():
            if closed and path.startswith(closed):
                continue
            if isinstance(module, (LoraLinear, ModulesToSaveWrapper)):
                closed += (path + ".",)
            yield path, module

    def _names_of(self, path):
        hf = self.hub_names.module(path)
        return [path] if hf is None or hf == path else [path, hf]

    def _replace(self, path, module):
        parent, _, name = path.rpartition(".")
        setattr(self.base_model.get_submodule(parent), name, module)
        return module

    def _find(self, config):
        """(paths of the Linear layers to adapt, paths of the modules to save)."""
        targets, saved = [], []
        for path, module in self._walk():
            if not path or path.startswith(tuple(p + "." for p in saved)):
                continue  # inside a module saved whole: never adapted too (peft's rule)
            names = self._names_of(path)
            if _matches(config.modules_to_save, names):
                saved.append(path)
            elif _matches(config.exclude_modules, names):
                continue
            elif config.target_modules == "all-linear":
                if isinstance(module, nn.Linear):
                    targets.append(path)
            elif _matches(config.target_modules, names):
                if not isinstance(module, nn.Linear):
                    raise TypeError(f"get_peft_model: target {path!r} is a "
                                    f"{type(module).__name__}; LoRA adapts nn.Linear layers only")
                targets.append(path)
        if not targets:
            layers = [p for p, m in self._walk() if isinstance(m, nn.Linear)][:6]
            raise ValueError(f"get_peft_model: target_modules={config.target_modules!r} matches "
                             f"no Linear layer of {type(self.base_model).__name__} (its Linear "
                             f"layers include {layers})")
        return targets, saved

    # --- adapters ---------------------------------------------------------------------------------
    def add_adapter(self, adapter_name, config):
        """Add an adapter. The first one is active; later ones stay inactive (and frozen) until
        `set_adapter`, as in peft."""
        if adapter_name in self.peft_config:
            raise ValueError(f"PeftModel: an adapter named {adapter_name!r} exists already")
        if config.bias != "none" and any(c.bias != "none" for c in self.peft_config.values()):
            raise ValueError("PeftModel: only one adapter may train biases (bias != 'none'): "
                             "they are the base model's, shared by every adapter")
        if isinstance(self.base_model, GPT) and not config.fan_in_fan_out:
            config = dataclasses.replace(config, fan_in_fan_out=True)  # HF GPT-2's Conv1D
        targets, saved = self._find(config)
        for path in targets:
            layer = self.base_model.get_submodule(path)
            if not isinstance(layer, LoraLinear):
                layer = self._replace(path, LoraLinear(layer))
            layer.update_layer(adapter_name, config.r, config.lora_alpha, config.lora_dropout,
                               config.init_lora_weights, config.use_rslora)
        for path in saved:
            wrapper = self.base_model.get_submodule(path)
            if not isinstance(wrapper, ModulesToSaveWrapper):
                wrapper = self._replace(path, ModulesToSaveWrapper(wrapper))
            wrapper.update(adapter_name)
        self.peft_config[adapter_name] = config
        if not config.inference_mode:
            for _, p in self._biases(adapter_name):
                p.requires_grad_(True)
        self.set_adapter(self.active_adapter)

    def _biases(self, adapter_name):
        """(our name, Parameter) of the biases the adapter trains and saves (its `bias`)."""
        config = self.peft_config[adapter_name]
        if config.bias == "none":
            return
        for path, module in self._walk():
            if isinstance(module, ModulesToSaveWrapper):
                continue  # saved whole anyway
            if config.bias == "all" or (isinstance(module, LoraLinear)
                                        and adapter_name in module.lora_A):
                bias = dict(module.named_parameters(recurse=False)).get("bias")
                if bias is not None:
                    yield (f"{path}.bias" if path else "bias"), bias

    def _adapter_modules(self):
        return [m for _, m in self._walk() if isinstance(m, (LoraLinear, ModulesToSaveWrapper))]

    @property
    def active_adapters(self):
        return [self.active_adapter]

    def set_adapter(self, adapter_name):
        """Run (and train) the adapter `adapter_name`; the others stay on the model, frozen."""
        if adapter_name not in self.peft_config:
            raise ValueError(f"PeftModel.set_adapter: no adapter named {adapter_name!r}; the "
                             f"adapters are {list(self.peft_config)}")
        if any(getattr(m, "merged", False) for m in self._adapter_modules()):
            warnings.warn("PeftModel.set_adapter: unmerging the merged adapters first",
                          stacklevel=2)
            self.unmerge_adapter()
        for module in self._adapter_modules():
            module.set_adapter(adapter_name)
        self.active_adapter = adapter_name
        if self.peft_config[adapter_name].inference_mode:
            for p in self._adapter_parameters(adapter_name).values():
                p.requires_grad_(False)

    def delete_adapter(self, adapter_name):
        if adapter_name not in self.peft_config:
            raise ValueError(f"PeftModel.delete_adapter: no adapter named {adapter_name!r}")
        for module in self._adapter_modules():
            adapters = module.lora_A if isinstance(module, LoraLinear) else module.modules_to_save
            if adapter_name in adapters:
                module.delete_adapter(adapter_name)
        del self.peft_config[adapter_name]
        if self.active_adapter == adapter_name and self.peft_config:
            self.set_adapter(next(iter(self.peft_config)))

    @contextlib.contextmanager
    def disable_adapter(self):
        """Inside the block the model is the base model (modules_to_save: the originals).
        Biases trained with bias != "none" are the base model's own and stay as trained."""
        modules = self._adapter_modules()
        for module in modules:
            module.disable_adapters = True
        try:
            yield
        finally:
            for module in modules:
                module.disable_adapters = False

    def merge_adapter(self):
        """Fold the active adapter into the base weights (inference at base-model cost)."""
        for module in self._adapter_modules():
            if isinstance(module, LoraLinear):
                module.merge()

    def unmerge_adapter(self):
        for module in self._adapter_modules():
            if isinstance(module, LoraLinear):
                module.unmerge()

    def merge_and_unload(self):
        """Merge the active adapter and return the base model with plain Linear layers again
        (modules_to_save: the active adapter's copy)."""
        self.merge_adapter()
        return self.unload()

    def unload(self):
        """The base model without any adapter (unmerged weights stay as they are)."""
        for path, module in list(self._walk()):
            if isinstance(module, LoraLinear):
                self._replace(path, module.to_linear())
            elif isinstance(module, ModulesToSaveWrapper):
                self._replace(path, module.active_module.requires_grad_(False))
        return self.base_model

    # --- counting ---------------------------------------------------------------------------------
    def get_nb_trainable_parameters(self):
        """(trainable, all) parameter counts, each shared parameter once."""
        params = list(self.parameters())
        return sum(p.numel() for p in params if p.requires_grad), sum(p.numel() for p in params)

    def print_trainable_parameters(self):
        """Prints peft's line: trainable params: N || all params: M || trainable%: P."""
        trainable, total = self.get_nb_trainable_parameters()
        print(f"trainable params: {trainable:,d} || all params: {total:,d} || "
              f"trainable%: {100 * trainable / total:.4f}")

    # --- adapter state and files ------------------------------------------------------------------
    def _adapter_parameters(self, adapter_name):
        """{peft key: Parameter} of one adapter: exactly what its adapter file holds."""
        names, out = self.hub_names, {}
        for path, module in self._walk():
            if isinstance(module, LoraLinear) and adapter_name in module.lora_A:
                hf = names.module(path) or path
                out[f"{PEFT_PREFIX}{hf}.lora_A.weight"] = module.lora_A[adapter_name].weight
                out[f"{PEFT_PREFIX}{hf}.lora_B.weight"] = module.lora_B[adapter_name].weight
            elif isinstance(module, ModulesToSaveWrapper) and adapter_name in \
                    module.modules_to_save:
                copy = module.modules_to_save[adapter_name]
                for name, p in copy.named_parameters():
                    out[PEFT_PREFIX + names.parameter(f"{path}.{name}")] = p
        for ours, bias in self._biases(adapter_name):
            hf = names.parameter(ours)
            if isinstance(self.base_model.get_submodule(ours.rpartition(".")[0]), LoraLinear):
                hf = hf[:-len("bias")] + "base_layer.bias"  # peft's key for a wrapped bias
            out[PEFT_PREFIX + hf] = bias
        return out

    def adapter_state_dict(self, adapter_name=None):
        """{peft key: Tensor} of the adapter (default: the active one), detached: what a LoRA
        run's checkpoint holds (peft's get_peft_model_state_dict)."""
        params = self._adapter_parameters(adapter_name or self.active_adapter)
        return {key: p.detach() for key, p in params.items()}

    def load_adapter_state_dict(self, state, adapter_name=None):
        """Copy `state` (keys as adapter_state_dict's or peft's) into the adapter. Keys may omit
        a prefix of the HF names (an adapter made on GPT2Model rather than GPT2LMHeadModel).
        Every tensor of the adapter must be there, and nothing else."""
        params = self._adapter_parameters(adapter_name or self.active_adapter)
        loaded, unexpected = {}, []
        for key, tensor in state.items():
            if ".original_module." in key or ".modules_to_save." in key:
                continue  # peft's bias="all" repeats modules_to_save biases under these names
            bare = key.removeprefix(PEFT_PREFIX)
            found = [k for k in params if k == PEFT_PREFIX + bare or k.endswith("." + bare)]
            if len(found) != 1:
                unexpected.append(key)
            else:
                loaded[found[0]] = tensor
        missing = [k for k in params if k not in loaded]
        wrong = [f"{k}: file {tuple(t.shape)}, model {tuple(params[k].shape)}"
                 for k, t in loaded.items() if tuple(t.shape) != tuple(params[k].shape)]
        if missing or unexpected or wrong:
            raise ValueError(f"PeftModel: the adapter does not fit {type(self.base_model).__name__}"
                             f": missing {missing[:4]}, unexpected {unexpected[:4]}, "
                             f"shapes {wrong[:4]}")
        with tg.no_grad():
            for key, tensor in loaded.items():
                params[key].copy_(tensor.to(device=params[key].device, dtype=params[key].dtype))

    def save_pretrained(self, folder, selected_adapters=None):
        """Write each adapter as peft does: "default" into `folder`, others into folder/<name>,
        each an adapter_model.safetensors and an adapter_config.json. Every adapter's bytes are
        made before the first file is written, so an adapter that cannot be saved changes
        nothing on disk; each file is replaced atomically (hub.write_files says how the pair
        of a folder is ordered)."""
        folders = [(folder if name == "default" else os.path.join(folder, name),
                    hub.folder_files(self._file_config(name), self.adapter_state_dict(name),
                                     CONFIG_NAME, WEIGHTS_NAME))
                   for name in selected_adapters or list(self.peft_config)]
        for path, files in folders:
            hub.write_files(path, files)

    def _file_config(self, adapter_name):
        """The adapter's config with its targets as the shortest HF names that pick exactly the
        modules it adapts (whatever the user wrote: our names, a regex, "all-linear")."""
        universe = [hf for path, _ in self._walk() if path
                    for hf in [self.hub_names.module(path)] if hf]

        def hf_paths(kind):
            return [self.hub_names.module(path) or path for path, m in self._walk()
                    if isinstance(m, kind) and adapter_name in
                    (m.lora_A if kind is LoraLinear else m.modules_to_save)]

        saved = hf_paths(ModulesToSaveWrapper)
        return self.peft_config[adapter_name].to_peft_dict(
            _shortest_suffixes(hf_paths(LoraLinear), universe),
            _shortest_suffixes(saved, universe) if saved else None)

    @classmethod
    def from_pretrained(cls, model, folder, adapter_name="default", is_trainable=False):
        """Wrap `model` with the adapter that `save_pretrained` (ours or peft's) wrote into
        `folder`. Without is_trainable the adapter is frozen and the model in eval mode."""
        config = _read_config(folder, is_trainable)
        peft_model = cls(model, config, adapter_name)
        peft_model._load_weights(folder, adapter_name, is_trainable)
        return peft_model

    def load_adapter(self, folder, adapter_name, is_trainable=False):
        """Add the adapter saved in `folder` under the name `adapter_name` (not made active)."""
        self.add_adapter(adapter_name, _read_config(folder, is_trainable))
        self._load_weights(folder, adapter_name, is_trainable)

    def _load_weights(self, folder, adapter_name, is_trainable):
        device = next(iter(self.parameters())).device
        self.load_adapter_state_dict(nn.load(os.path.join(folder, WEIGHTS_NAME), device=device),
                                     adapter_name)
        if not is_trainable:
            self.eval()


def _read_config(folder, is_trainable):
    path = os.path.join(folder, CONFIG_NAME)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"PeftModel.from_pretrained: no {CONFIG_NAME} in {folder!r}; "
                                f"nothing is downloaded")
    with open(path, encoding="utf-8") as f:
        config = LoraConfig.from_peft_dict(json.load(f))
    return dataclasses.replace(config, inference_mode=not is_trainable)


def get_peft_model(model, config, adapter_name="default"):
    """Wrap `model` (any tensorgrad nn.Module) with a LoRA adapter: its matching Linear layers
    become LoraLinear, every base parameter is frozen. Returns a PeftModel."""
    return PeftModel(model, config, adapter_name)

