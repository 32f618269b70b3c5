"""Hugging Face checkpoint folders on local disk: `config.json` + `model.safetensors`.

Every model family reads and writes the same two files; what differs is the renaming table from
Hugging Face's parameter names to ours, which stays in each model's file. Nothing here downloads.
"""
import json
import os

from tensorgrad import nn


def read_folder(path, device=None):
    """(config dict, {name: Tensor}) from a checkpoint folder; a clear error names what is
    missing."""
    files = [os.path.join(path, name) for name in ("config.json", "model.safetensors")]
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise FileNotFoundError(f"from_pretrained: {path!r} is not a Hugging Face checkpoint "
                                f"folder (missing {', '.join(missing)}); nothing is downloaded")
    with open(files[0], encoding="utf-8") as f:
        config = json.load(f)
    return config, nn.load(files[1], device=device)


def write_folder(path, config, state):
    """Write config (a dict) and state ({HF name: Tensor}) so that `transformers` loads them.
    safetensors writes raw memory, so each tensor is made contiguous first."""
    from safetensors.numpy import save_file

    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    arrays = {name: t.contiguous().numpy() for name, t in state.items()}
    save_file(arrays, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
