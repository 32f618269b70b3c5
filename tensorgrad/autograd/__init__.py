"""The autograd engine: primitives, graph nodes, grad mode, scopes and reverse-mode backward.

A primitive is a name, an array-level forward written against the backend (`xp`) and a VJP rule
written in tensorgrad ops. Calling a primitive on Tensors runs the forward and, when a gradient
is wanted, records a Node that remembers the primitive, its parents and only the tensors its
VJP reads. `backward` walks the nodes in reverse topological order without recursion.

grad_mode.py   the switches ops read: grad mode, anomaly detection, the current scope
graph.py       Primitive, the PRIMITIVES registry, the Node a recorded call leaves, and
               untracked_view (a view taken on arrays, recording nothing)
function.py    Function: torch.autograd.Function, user-defined forward and backward
backward.py    the backward walk: run_backward, backward, grad, sum_to
"""
from .backward import (  # noqa: F401
    _broadcasts_to, _topological_order, backward, grad, run_backward, sum_to,
)
from .grad_mode import (  # noqa: F401
    current_scope, detect_anomaly, enable_grad, enter_scope, inference_mode, is_grad_enabled,
    is_inference_mode_enabled, no_grad, scope, set_grad_enabled, set_scope, thread_switches,
)
from .graph import PRIMITIVES, Node, Primitive, guard, primitive, untracked_view  # noqa: F401
from .function import Function, FunctionCtx  # noqa: F401
