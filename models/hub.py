"""Hugging Face checkpoint folders on local disk: `config.json` + `model.safetensors`.

Every model family reads and writes the same two files; what differs is the renaming table from
Hugging Face's parameter names to ours, which stays in each model's file. The vision models
(ViT, Swin) also share the loading of a renamed state dict and Hugging Face's initialisation,
here. Nothing here downloads.
Writes are atomic file by file (tensorgrad.serialization.atomic_write); see `write_files` for
what that means for the pair.
"""
import json
import os
import warnings

from tensorgrad import nn
from tensorgrad.serialization import atomic_write

CONFIG_NAME, WEIGHTS_NAME = "config.json", "model.safetensors"


def read_folder(path, device=None):
    """(config dict, {name: Tensor}) from a checkpoint folder; a clear error names what is
    missing."""
    files = [os.path.join(path, name) for name in (CONFIG_NAME, WEIGHTS_NAME)]
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise FileNotFoundError(f"from_pretrained: {path!r} is not a Hugging Face checkpoint "
                                f"folder (missing {', '.join(missing)}); nothing is downloaded")
    with open(files[0], encoding="utf-8") as f:
        config = json.load(f)
    return config, nn.load(files[1], device=device)


def write_folder(path, config, state):
    """Write config (a dict) and state ({HF name: Tensor}) so that `transformers` loads them.
    A tensor or config that cannot be written raises before anything on disk changes."""
    write_files(path, folder_files(config, state))


def folder_files(config, state, config_name=CONFIG_NAME, weights_name=WEIGHTS_NAME):
    """[(file name, bytes)] of a checkpoint folder, weights first (see `write_files`): the
    safetensors bytes are what safetensors' save_file writes, byte for byte. They are made in
    memory (a copy the size of the weights) so that nothing is written unless all of it can be."""
    from safetensors.numpy import save

    # safetensors writes raw memory, so each tensor is made contiguous first.
    arrays = {name: t.contiguous().numpy() for name, t in state.items()}
    weights = save(arrays, metadata={"format": "pt"})
    return [(weights_name, weights), (config_name, json.dumps(config, indent=2).encode())]


def write_files(path, files):
    """Write each (name, bytes) of `files` into the folder `path` (made if missing), in order,
    each one atomically.

    The pair of files cannot be replaced in one step: a folder cannot be renamed over a
    non-empty one, and the user's folder may hold other files (a tokenizer, a README). So the
    config goes last and acts as the folder's commit record: a crash before it leaves the old
    config, so a new folder never has a config.json announcing weights that are not there yet,
    and re-saving a model of the same shape (the common case: a checkpoint every N steps)
    leaves the old pair or the new weights under an identical config. Only a crash (or a full
    disk) between the two files while the config changes can pair new weights with the old
    config; a changed shape then fails to load with a clear error, a changed scalar (an
    epsilon) cannot be seen. Everything that can fail on the model's side (a tensor that cannot
    be copied to the host, a config JSON cannot hold) fails in `folder_files`, before this.
    """
    os.makedirs(path, exist_ok=True)
    for name, data in files:
        atomic_write(os.path.join(path, name), lambda f, data=data: f.write(data))


# --- the vision models' checkpoints (ViT, Swin) ------------------------------------------------
def reset_parameters(module, std):
    """Hugging Face's ViT and Swin initialisation: linear and convolution weights, the [CLS]
    token and the positions ~ N(0, std^2) truncated at +-2 (absolute, as timm), biases 0,
    LayerNorms 1/0."""
    for name, p in module.named_parameters():
        if name.endswith("bias"):
            nn.init.zeros_(p)
        elif name.endswith(("cls_token", "position_embeddings")) or p.ndim >= 2:
            nn.init.trunc_normal_(p, std=std)


def state_dict_from_hf(model, hf_state, base, canonical):
    """Rename a Hugging Face state dict for `model`. base: the base model's prefix in
    Hugging Face's heads ("vit.", "swin."); keys load with or without it, and a head or pooler
    the model does not have is left out, as `transformers` does. canonical: maps transformers
    5's in-memory spelling onto the checkpoint's. Returns (state, our names it lacked)."""
    names = model.hf_parameter_names()
    state, unknown = {}, []
    for key, tensor in hf_state.items():
        key = canonical(key)
        for candidate in (key, base + key, key.removeprefix(base)):
            if candidate in names:
                state[names[candidate]] = tensor
                break
        else:
            head = key.removeprefix(base).startswith(("classifier.", "pooler."))
            if not head and not key.endswith("relative_position_index"):  # a buffer, rebuilt
                unknown.append(key)
    if unknown:
        raise ValueError(f"{type(model).__name__}.from_pretrained: the checkpoint has tensors "
                         f"this configuration does not: {unknown[:8]}")
    return state, [ours for ours in names.values() if ours not in state]


def load_hf_state(model, hf_state, base, canonical):
    """Load a Hugging Face state dict into model (see state_dict_from_hf); only a head or
    pooler may be missing from it, and it then keeps its initialisation, with a warning."""
    state, missing = state_dict_from_hf(model, hf_state, base, canonical)
    name = type(model).__name__
    if not all(ours.startswith(("classifier.", "pooler.")) for ours in missing):
        raise ValueError(f"{name}.from_pretrained: the checkpoint lacks {missing[:8]}")
    if missing:
        warnings.warn(f"{name}.from_pretrained: {missing} are not in the checkpoint and keep "
                      f"their fresh initialisation", stacklevel=4)
    model.load_state_dict(state, strict=False)
    return model.eval()


def save_hf_folder(model, path, architecture):
    """Write model's config and parameters under Hugging Face's names."""
    names = {ours: hf for hf, ours in model.hf_parameter_names().items()}
    hf_config = {**model.config.to_hf(), "architectures": [architecture]}
    write_folder(path, hf_config, {names[k]: t for k, t in model.state_dict().items()})
