"""Module and Parameter: PyTorch-style containers of learnable state, found by attribute assignment.

Assigning a Parameter, a Module or (through `register_buffer`) a buffer to an attribute registers
it, so `state_dict` keys are the dotted attribute paths (`blocks.3.attn.qkv.weight`).
Calling a module runs `forward` inside `tg.scope(<its dotted path>)`, so every node it creates
names the module it came from; the graph renderer, anomaly reports and op errors read that name.
"""
from collections import OrderedDict, namedtuple

import tensorgrad as tg
from tensorgrad import Tensor
from tensorgrad.autograd import thread_switches


class Parameter(Tensor):
    """A Tensor that a Module registers as learnable (requires_grad=True by default).

    Shares memory with `data`, as torch.nn.Parameter does; ops on it return plain Tensors.
    """

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = tg.empty(0)
        elif not isinstance(data, Tensor):
            data = tg.tensor(data)
        param = data.detach().as_subclass(cls)  # shares data's memory and version counter
        return param.requires_grad_(True) if requires_grad else param

    def __init__(self, data=None, requires_grad=True):
        pass  # __new__ did the work; Tensor.__init__ would copy the data

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class RemovableHandle:
    """Returned by `register_forward_hook`: `.remove()` (or leaving a `with` block) unregisters
    the hook."""

    _next_id = 0

    def __init__(self, hooks):
        self.hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        self.hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])

# Bumped whenever any module gains or loses a child: a root caches its paths until it changes.
_tree_version = 0


class Module:
    """Base class of every layer and model: subclass it, assign sub-layers in __init__, write
    forward, and call the instance.

    Parameters, buffers and submodules assigned as attributes are registered in that order;
    `named_parameters`, `state_dict` and `summary` walk them depth first, own entries first.
    """

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_path", "")

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    # --- registration by attribute assignment ----------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {name!r} before Module.__init__() is called; "
                                 f"call super().__init__() first in {type(self).__name__}")
        params, buffers, modules = self._parameters, self._buffers, self._modules
        # Replacing a parameter or submodule by another keeps its place, as in PyTorch: a
        # Sequential whose layer is swapped (LoRA does it) still runs its layers in order.
        if isinstance(value, Parameter):
            if name not in params:
                self._forget(name)
            self._register(params, name, value)
        elif isinstance(value, Module):
            if name not in modules:
                self._forget(name)
            self._register(modules, name, value)
            _tree_changed()
        elif name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to parameter {name!r} of "
                                f"{type(self).__name__}; wrap it in nn.Parameter or assign None")
            self._register(params, name, None)
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} to buffer {name!r} of "
                                f"{type(self).__name__}; expected a Tensor or None")
            self._register(buffers, name, value)
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to submodule {name!r} of "
                                f"{type(self).__name__}; expected a Module or None")
            self._register(modules, name, None)
            _tree_changed()
        else:
            object.__setattr__(self, name, value)

    def _register(self, registry, name, value):
        """Enter `value` in one of the registries. It is mirrored in the instance __dict__, so
        that `self.weight` is an ordinary attribute hit (a forward reads dozens per call)."""
        registry[name] = value
        self.__dict__[name] = value

    def _forget(self, name):
        for registry in (self.__dict__, self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        self._non_persistent.discard(name)
        _tree_changed()

    def __getattr__(self, name):
        # Only reached when ordinary lookup fails: registered entries are in __dict__ too.
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if name in self._parameters or name in self._buffers or name in self._modules:
            self._forget(name)
        else:
            object.__delattr__(self, name)

    def register_parameter(self, name, param):
        """Register `param` (a Parameter or None) under `name`, like assigning the attribute."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be a Parameter or None, got "
                            f"{type(param).__name__}")
        self._forget(name)
        self._register(self._parameters, name, param)

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor that belongs to the module's state but is not learned (masks, running stats,
        rotary tables). Non-persistent buffers move with `to()` but stay out of `state_dict`."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None, got "
                            f"{type(tensor).__name__}")
        self._forget(name)
        self._register(self._buffers, name, tensor)
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module or None, got "
                            f"{type(module).__name__}")
        if name not in self._modules:
            self._forget(name)
        self._register(self._modules, name, module)
        _tree_changed()

    # --- walking the tree ------------------------------------------------------------------------
    def named_modules(self, prefix="", remove_duplicate=True, _seen=None):
        """(dotted path, module) for this module and every descendant, depth first; a module
        reachable by two paths is listed once, under the first, unless remove_duplicate=False."""
        seen = set() if _seen is None else _seen
        if remove_duplicate:
            if id(self) in seen:
                return
            seen.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                path = f"{prefix}.{name}" if prefix else name
                yield from child.named_modules(path, remove_duplicate, seen)

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        return (m for _, m in self.named_children())

    def _named_members(self, registry, prefix, recurse, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix, remove_duplicate) if recurse else [(prefix, self)]
        for path, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{path}.{name}" if path else name), value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Parameter) pairs; a parameter shared by two modules (weight tying) is
        listed once, under its first name."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers(recurse=recurse))

    def get_submodule(self, target):
        """The module at dotted path `target` ('' is this module)."""
        module = self
        for i, name in enumerate(target.split(".") if target else []):
            child = module._modules.get(name)
            if child is None:
                walked = ".".join(target.split(".")[:i]) or "the root"
                raise AttributeError(f"get_submodule({target!r}): {walked} "
                                     f"({type(module).__name__}) has no submodule {name!r}")
            module = child
        return module

    def num_parameters(self, trainable_only=False):
        """Number of scalar parameters, each shared parameter counted once."""
        return sum(p.numel() for p in self.parameters()
                   if p.requires_grad or not trainable_only)

    # --- modes and bulk updates ------------------------------------------------------------------
    def train(self, mode=True):
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's gradient: drop it (default) or replace it with zeros."""
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else tg.zeros_like(p.grad)

    def apply(self, fn):
        """Call fn(module) on every submodule (children first) and then on self; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args, device=None, dtype=None, non_blocking=False):
        """Move parameters, their gradients and buffers in place: `to("cuda")`, `to(tg.float64)`.

        Parameters keep their identity (`Tensor.set_`; their versions bump), so an optimizer
        built before the move still holds them, and its state follows them at the next step.
        dtype casts apply to floating point tensors only (integer buffers keep their dtype).
        non_blocking is accepted for PyTorch code and has no effect.
        """
        for arg in args:
            if isinstance(arg, str):
                device = arg
            else:
                dtype = arg
        dtype = tg.backend.as_dtype(dtype)

        def convert(t):
            cast = dtype if dtype is not None and t.dtype.kind == "f" else None
            return t.detach().to(device=device, dtype=cast)

        for module in self.modules():
            for p in module._parameters.values():
                if p is None:
                    continue
                moved = convert(p)
                if moved.data is not p.data:  # an unchanged parameter keeps its version
                    with tg.no_grad():
                        p.set_(moved)
                if p.grad is not None:
                    p.grad = convert(p.grad)
            for name, b in module._buffers.items():
                if b is not None:
                    module._register(module._buffers, name, convert(b))
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, index=0):
        return self.to(f"cuda:{index}")

    def float(self):
        return self.to(tg.float32)

    def double(self):
        return self.to(tg.float64)

    def half(self):
        return self.to(tg.float16)

    def bfloat16(self):
        return self.to(tg.bfloat16)

    # --- state dict ------------------------------------------------------------------------------
    def state_dict(self, prefix="", keep_vars=False):
        """Parameters and persistent buffers by dotted path, detached (sharing memory) unless
        keep_vars. Tied parameters appear under every path, as in PyTorch."""
        out = OrderedDict()
        for path, module in self.named_modules(prefix, remove_duplicate=False):
            dot = f"{path}." if path else ""
            for name, p in module._parameters.items():
                if p is not None:
                    out[dot + name] = p if keep_vars else p.detach()
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent:
                    out[dot + name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copy tensors from `state_dict` into this module's parameters and buffers (cast to their
        dtype and device). Missing and unexpected keys are errors when strict; shape mismatches
        and non-tensor values always are. Every problem is listed in one RuntimeError.
        Returns (missing_keys, unexpected_keys)."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        problems = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                problems.append(f"{key!r}: expected a Tensor, got {type(value).__name__}")
            elif value.shape != target.shape:
                problems.append(f"{key!r}: checkpoint has shape {value.shape}, the model has "
                                f"{target.shape}")
        lines = []
        if strict and missing:
            lines.append(f"missing keys ({len(missing)}): " + ", ".join(map(repr, missing)))
        if strict and unexpected:
            lines.append(f"unexpected keys ({len(unexpected)}): "
                         + ", ".join(map(repr, unexpected)))
        if problems:
            lines.append(f"mismatched values ({len(problems)}): " + "; ".join(problems))
        if lines:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n  "
                               + "\n  ".join(lines))
        with tg.no_grad():
            for key, target in own.items():
                if key in state_dict:
                    target.copy_(state_dict[key].detach().to(device=target.device,
                                                             dtype=target.dtype))
        return IncompatibleKeys(missing, unexpected)

    # --- calling ---------------------------------------------------------------------------------
    def register_forward_hook(self, hook):
        """hook(module, inputs, output) runs after every forward; a non-None return value replaces
        the output. Returns a handle whose .remove() unregisters the hook."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def __call__(self, *args, **kwargs):
        # The thread's switches looked up once, for the root call's module paths and for entering
        # and leaving the scope, inline rather than through set_scope: a GPT-mini token makes 40
        # module calls (generate).
        switches = thread_switches()
        paths = switches.module_paths
        root = paths is None
        if root:
            paths = switches.module_paths = self._paths()
        previous = switches.scope
        path = paths.get(id(self))
        if path is not None:
            switches.scope = path
        else:  # a module called without being registered under the root nests by class name
            name = type(self).__name__
            switches.scope = f"{previous}.{name}" if previous else name
        try:
            try:
                output = self.forward(*args, **kwargs)
            except Exception as exc:
                _note_module(exc, self, path)
                raise
            if self._forward_hooks:
                for hook in list(self._forward_hooks.values()):
                    result = hook(self, args, output)
                    if result is not None:
                        output = result
        finally:
            switches.scope = previous
            if root:
                switches.module_paths = None
        return output

    def _paths(self):
        """{id(module): dotted path} under this root, named once and kept until the tree of
        modules changes (a decoding loop calls the root once per token)."""
        cached = self.__dict__.get("_paths_cache")
        if cached is None or cached[0] != _tree_version:
            paths = {}
            for path, module in self.named_modules():
                object.__setattr__(module, "_path", path)
                paths[id(module)] = path
            cached = (_tree_version, paths)
            object.__setattr__(self, "_paths_cache", cached)
        return cached[1]

    # --- printing --------------------------------------------------------------------------------
    def extra_repr(self):
        """The text inside the parentheses of this module's repr line (layers override it)."""
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(child).replace("\n", "\n  ")
                 for name, child in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"

    def summary(self, max_depth=None):
        """A parameter-count table: one row per module (indented by depth, down to max_depth)
        with the parameters under it and their share of the total; shared parameters count
        once. Returns the table as a string."""
        total = self.num_parameters()
        rows = []
        for path, module in self.named_modules():
            depth = path.count(".") + 1 if path else 0
            if max_depth is not None and depth > max_depth:
                continue
            count = module.num_parameters()
            share = f"{100.0 * count / total:.1f}%" if total else "-"
            name = "  " * depth + (path.rsplit(".", 1)[-1] if path else "(root)")
            rows.append((name, type(module).__name__, f"{count:,}", share))
        trainable = self.num_parameters(trainable_only=True)
        header = ("module", "type", "parameters", "share")
        footer = [("total", "", f"{total:,}", ""), ("trainable", "", f"{trainable:,}", "")]
        widths = [max(len(r[i]) for r in [header] + rows + footer) for i in range(4)]

        def line(row):
            return (f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}  "
                    f"{row[3]:>{widths[3]}}").rstrip()

        rule = "-" * len(line(("", "", "", "x" * widths[3])))
        return "\n".join([line(header), rule] + [line(r) for r in rows] + [rule]
                         + [line(r) for r in footer])


def _tree_changed():
    global _tree_version
    _tree_version += 1


def _note_module(exc, module, path):
    """Add the innermost module's path to an exception raised inside its forward (once)."""
    if getattr(exc, "_tensorgrad_module_noted", False):
        return
    where = f"'{path}'" if path else "the root module"
    if hasattr(exc, "add_note"):  # Python 3.11+
        exc.add_note(f"(raised in forward of {where}: {type(module).__name__})")
    exc._tensorgrad_module_noted = True
