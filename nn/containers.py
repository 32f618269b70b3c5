"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict. Children and
parameters are registered under their index or key, so `blocks.3.attn` in a state_dict is
`model.blocks[3].attn` in code."""
from collections import OrderedDict

from tensorgrad import Tensor

from .module import Module, Parameter


class ModuleList(Module):
    """A list of modules, registered as '0', '1', ...; indexing, iteration, append, extend."""

    def __init__(self, modules=()):
        super().__init__()
        self.extend(modules)

    def __getitem__(self, index):
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(modules[index])
        return modules[_check_index(index, len(self), type(self).__name__)]

    def __setitem__(self, index, module):
        name = list(self._modules)[_check_index(index, len(self), type(self).__name__)]
        self.add_module(name, module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        modules = list(self._modules.values())
        modules.insert(index, module)
        for name in list(self._modules):
            self._forget(name)
        self.extend(modules)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward; iterate over it and call each module")


class Sequential(ModuleList):
    """Calls its children in order, each on the previous one's output.

    Sequential(a, b, c) names them '0', '1', '2'; Sequential(OrderedDict(name=module)) keeps names.
    """

    def __init__(self, *modules):
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            super().__init__()
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            super().__init__(modules)

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return super().__getitem__(index)


class ModuleDict(Module):
    """A dict of modules registered under their (string) keys, in insertion order."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        if key not in self._modules:
            raise KeyError(f"ModuleDict has no key {key!r}; keys are {list(self._modules)}")
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        if key not in self._modules:
            raise KeyError(f"ModuleDict has no key {key!r}; keys are {list(self._modules)}")
        self._forget(key)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward; look a module up and call it")


class ParameterList(Module):
    """A list of parameters, registered as '0', '1', ...; a plain Tensor becomes a Parameter."""

    def __init__(self, values=None):
        super().__init__()
        self.extend(values or ())

    def __getitem__(self, index):
        values = list(self._parameters.values())
        if isinstance(index, slice):
            return ParameterList(values[index])
        return values[_check_index(index, len(self), type(self).__name__)]

    def __setitem__(self, index, value):
        name = list(self._parameters)[_check_index(index, len(self), type(self).__name__)]
        self._register(self._parameters, name, _as_parameter(value))  # keeps its place

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value):
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterList has no forward; use its parameters in yours")


class ParameterDict(Module):
    """A dict of parameters registered under their (string) keys, in insertion order; a plain
    Tensor becomes a Parameter."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        if key not in self._parameters:
            raise KeyError(f"ParameterDict has no key {key!r}; keys are {list(self._parameters)}")
        return self._parameters[key]

    def __setitem__(self, key, value):
        if key in self._parameters:  # a replaced entry keeps its place, as in a dict
            self._register(self._parameters, key, _as_parameter(value))
        else:
            self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key):
        if key not in self._parameters:
            raise KeyError(f"ParameterDict has no key {key!r}; keys are {list(self._parameters)}")
        self._forget(key)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def get(self, key, default=None):
        return self._parameters.get(key, default)

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in items:
            self[key] = value

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterDict has no forward; use its parameters in yours")


def _as_parameter(value):
    if isinstance(value, Parameter) or value is None:
        return value
    if not isinstance(value, Tensor):
        raise TypeError(f"expected a Parameter or a Tensor, got {type(value).__name__}")
    return Parameter(value)


def _check_index(index, length, what):
    if not -length <= index < length:
        raise IndexError(f"{what} index {index} is out of range for length {length}")
    return index % length
