"""Optimizer: parameter groups, per-parameter state, zero_grad and state_dict.

Subclasses write one method, `_update(param, grad, state, group)`, which runs under no_grad and
changes the parameter in place; everything else (groups, closures, saving) lives here.
"""
import tensorgrad as tg
from tensorgrad import Tensor


class Optimizer:
    """params: an iterable of Tensors, or of dicts ({"params": [...], "weight_decay": 0.0, ...})
    that form parameter groups with their own hyper-parameters; `defaults` fills what a group
    leaves out."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.state = {}  # param -> its state dict (Tensors hash by identity)
        self.param_groups = []
        params = [params] if isinstance(params, Tensor) else list(params)
        if not params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group):
        name = type(self).__name__
        if not isinstance(group, dict):
            raise TypeError(f"{name}: a parameter group must be a dict, got {type(group).__name__}")
        group = dict(group)
        params = group.get("params")
        params = [params] if isinstance(params, Tensor) else list(params or ())
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: parameters must be Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"{name}: cannot optimize a non-leaf tensor (shape {p.shape}); "
                                 "optimize the leaf it was computed from")
        taken = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or any(id(p) in taken for p in params):
            raise ValueError(f"{name}: a parameter appears in more than one parameter group "
                             "(or twice in one)")
        # A misspelt hyper-parameter would otherwise be silently ignored.
        unknown = set(group) - set(self.defaults) - {"params", "initial_lr", "name"}
        if unknown:
            raise ValueError(f"{name}: unknown hyper-parameter(s) {sorted(unknown)}; expected "
                             f"some of {sorted(self.defaults)}")
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        group["params"] = params
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's gradient: drop it (default) or replace it with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad = None if set_to_none else tg.zeros_like(p.grad)

    def step(self, closure=None):
        """One update of every parameter that has a gradient. closure: an optional function
        that recomputes the loss (with backward) and returns it; step returns its value."""
        loss = None
        if closure is not None:
            with tg.enable_grad():
                loss = closure()
        with tg.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, p.grad, self._state_of(p), group)
        return loss

    def _update(self, param, grad, state, group):
        raise NotImplementedError

    def _state_of(self, param):
        """param's state; tensors in it follow the parameter when it moved or was cast since
        (Module.to() after a step): device, and dtype for floating point state."""
        state = self.state.setdefault(param, {})
        for key, value in state.items():
            if isinstance(value, Tensor) and (value.device != param.device or (
                    value.dtype.kind == "f" and value.dtype != param.dtype)):
                state[key] = _copy_to(value, param)
        return state

    # --- saving and resuming ---------------------------------------------------------------------
    def state_dict(self):
        """{"state": {index: {name: Tensor or number}}, "param_groups": [{..., "params":
        [index, ...]}]}: parameters are numbered in group order, as in PyTorch, so the dict
        holds no references to the parameters themselves."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore hyper-parameters and state saved by `state_dict`, for the same parameters in
        the same group layout. State tensors are copied to each parameter's device."""
        name = type(self).__name__
        saved_groups = state_dict["param_groups"]
        ours = [len(g["params"]) for g in self.param_groups]
        theirs = [len(g["params"]) for g in saved_groups]
        if ours != theirs:
            raise ValueError(f"{name}.load_state_dict: the saved state has parameter groups of "
                             f"sizes {theirs}, this optimizer has {ours}")
        params = {}
        for group, saved in zip(self.param_groups, saved_groups):
            params.update(zip(saved["params"], group["params"]))
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {}
        for key, saved in state_dict["state"].items():
            p = params[int(key)]
            self.state[p] = {k: _copy_to(v, p) for k, v in saved.items()}

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"  group {i}: {len(group['params'])} tensor(s), "
                         + ", ".join(f"{k}={v}" for k, v in group.items() if k != "params"))
        return "\n".join(lines + [")"])


def _copy_to(value, param):
    """A saved state value, as a fresh tensor on param's device (floats take its dtype)."""
    if not isinstance(value, Tensor):
        return value
    dtype = param.dtype if value.dtype.kind == "f" else None
    return value.detach().to(device=param.device, dtype=dtype).clone()
