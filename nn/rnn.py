"""Recurrent layers as torch.nn: RNN, LSTM, GRU and their one-step cells.

One step, with gi = x W_ih^T + b_ih (the input's part, for every step in one matmul before the
time loop) and gh = h W_hh^T + b_hh (one matmul per step for all the gates):
- RNN:  h' = tanh(gi + gh)  (or relu)
- LSTM: i, f, g, o = chunks of gi + gh;  c' = sigmoid(f) c + sigmoid(i) tanh(g);
        h' = sigmoid(o) tanh(c'), then h' W_hr^T with proj_size (Sak et al., 2014)
- GRU:  r, z, n chunks; r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z),
        n = tanh(gi_n + r gh_n), h' = (1 - z) n + z h  (Cho et al., 2014)

Parameters carry PyTorch's names, so its state dicts load: `weight_ih_l{k}`, `weight_hh_l{k}`,
`bias_ih_l{k}`, `bias_hh_l{k}`, `weight_hr_l{k}` (LSTM with proj_size), with `_reverse` for the
backward direction; all start U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
"""
import math
import numbers
import warnings

import tensorgrad as tg

from . import functional as F
from . import init
from .module import Module, Parameter
from .utils.rnn import PackedSequence

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell"]


# --- one step: state is a tuple, (h,) or (h, c) ----------------------------------------------
def _rnn_step(activation):
    def step(gi, state, w_hh, b_hh, w_hr=None):
        return (activation(gi + F.linear(state[0], w_hh, b_hh)),)
    return step


def _lstm_step(gi, state, w_hh, b_hh, w_hr=None):
    h, c = state
    i, f, g, o = (gi + F.linear(h, w_hh, b_hh)).chunk(4, dim=-1)  # (N, 4 H) -> 4 x (N, H)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    return (h if w_hr is None else F.linear(h, w_hr), c)  # (N, proj_size or H), (N, H)


def _gru_step(gi, state, w_hh, b_hh, w_hr=None):
    h = state[0]
    i_r, i_z, i_n = gi.chunk(3, dim=-1)  # (N, 3 H) -> 3 x (N, H)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, dim=-1)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (n + z * (h - n),)  # (1 - z) n + z h


_STEPS = {"RNN_TANH": _rnn_step(tg.tanh), "RNN_RELU": _rnn_step(tg.relu), "LSTM": _lstm_step,
          "GRU": _gru_step}
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_mode(nonlinearity, where):
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"{where}: unknown nonlinearity {nonlinearity!r}; expected 'tanh' or "
                         "'relu'")
    return "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


def _uniform_init(module, hidden_size):
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


# --- the layers ----------------------------------------------------------------------------------
class RNNBase(Module):
    """What RNN, LSTM and GRU share: the stacked, optionally bidirectional time loop.

    input: (L, N, input_size), (N, L, input_size) with batch_first, (L, input_size) unbatched,
    or a PackedSequence. Returns output (L, N, D * H_out) in the input's layout (a
    PackedSequence for one) and the last states (D * num_layers, N, H_out), D = 2 when
    bidirectional, H_out = proj_size or hidden_size. dropout: on every layer's output but the
    last, in training mode.
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 \
                or isinstance(dropout, bool):
            raise ValueError(f"{name}: dropout should be a number in [0, 1], got {dropout!r}")
        if hidden_size <= 0 or num_layers <= 0:
            raise ValueError(f"{name}: hidden_size ({hidden_size}) and num_layers ({num_layers}) "
                             "must be positive")
        if proj_size < 0 or (proj_size and (mode != "LSTM" or proj_size >= hidden_size)):
            raise ValueError(f"{name}: proj_size ({proj_size}) must be 0, or, on an LSTM only, "
                             f"positive and below hidden_size ({hidden_size})")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{name}: dropout={dropout} acts between layers, so with num_layers=1 "
                          "it does nothing", stacklevel=2)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        directions = 2 if bidirectional else 1
        out_size = proj_size or hidden_size
        gates = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else out_size * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes = {"weight_ih": (gates, layer_input), "weight_hh": (gates, out_size)}
                if bias:
                    shapes.update(bias_ih=(gates,), bias_hh=(gates,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for kind, shape in shapes.items():
                    full_name = f"{kind}_l{layer}{suffix}"
                    setattr(self, full_name,
                            Parameter(tg.empty(*shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(full_name)
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_init(self, self.hidden_size)

    def flatten_parameters(self):
        """Nothing to do: PyTorch packs the weights into one buffer for cuDNN; the loop here
        reads them where they are."""

    def _weights(self, layer, direction):
        suffix = f"_l{layer}{'_reverse' if direction else ''}"
        return [getattr(self, f"{kind}{suffix}", None)
                for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]

    def _where(self):
        return f"{type(self).__name__} '{self._path}'" if self._path else type(self).__name__

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes = input.data, input.batch_sizes.tolist()
            batched, N = True, batch_sizes[0]
        else:
            if input.ndim not in (2, 3):
                raise ValueError(f"{self._where()}: expected input to be 2-D (unbatched) or "
                                 f"3-D, got shape {tuple(input.shape)}")
            batched = input.ndim == 3
            if not batched:
                input = input.unsqueeze(1)  # (L, 1, input_size)
            elif self.batch_first:
                input = input.transpose(0, 1)  # (N, L, C) -> (L, N, C)
            L, N = input.shape[0], input.shape[1]
            data, batch_sizes = input.reshape(L * N, input.shape[2]), [N] * L  # (L * N, C)
        if data.shape[-1] != self.input_size:
            raise RuntimeError(f"{self._where()}: input.size(-1) must be equal to input_size. "
                               f"Expected {self.input_size}, got {data.shape[-1]}")
        states = self._initial_states(hx, batched, N, data)
        if packed and input.sorted_indices is not None:  # states follow the sorted batch
            states = tuple(s.index_select(1, input.sorted_indices) for s in states)
        directions = 2 if self.bidirectional else 1
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                k = layer * directions + direction
                out, final = self._run(data, batch_sizes, tuple(s[k] for s in states),
                                       self._weights(layer, direction), reverse=direction == 1)
                outputs.append(out)
                finals.append(final)
            data = outputs[0] if directions == 1 else tg.cat(outputs, dim=-1)  # (rows, D H_out)
            if self.dropout and self.training and layer < self.num_layers - 1:
                data = F.dropout(data, self.dropout)
        last = tuple(tg.stack(parts) for parts in zip(*finals))  # (D num_layers, N, H)
        if packed:
            if input.unsorted_indices is not None:
                last = tuple(s.index_select(1, input.unsorted_indices) for s in last)
            output = PackedSequence(data, input.batch_sizes, input.sorted_indices,
                                    input.unsorted_indices)
        else:
            output = data.reshape(L, N, data.shape[-1])  # (L, N, D H_out)
            if not batched:
                output, last = output.squeeze(1), tuple(s.squeeze(1) for s in last)
            elif self.batch_first:
                output = output.transpose(0, 1)  # (N, L, D H_out)
        return output, (last if self.mode == "LSTM" else last[0])

    def _initial_states(self, hx, batched, N, data):
        """hx as a tuple of (D num_layers, N, H) states ((h,) or (h, c)); zeros when None."""
        layers = self.num_layers * (2 if self.bidirectional else 1)
        out_size = self.proj_size or self.hidden_size
        sizes = (out_size, self.hidden_size) if self.mode == "LSTM" else (out_size,)
        if hx is None:
            return tuple(tg.zeros(layers, N, size, dtype=data.dtype, device=data.device)
                         for size in sizes)
        hx = tuple(hx) if self.mode == "LSTM" else (hx,)
        if len(hx) != len(sizes):
            raise RuntimeError(f"{self._where()}: expected hx as (h_0, c_0), got {len(hx)} "
                               "tensors")
        states = []
        for state, size in zip(hx, sizes):
            ndim = 3 if batched else 2
            if state.ndim != ndim:
                raise RuntimeError(f"{self._where()}: for {ndim}-D input, hx should also be "
                                   f"{ndim}-D but got {state.ndim}-D")
            state = state if batched else state.unsqueeze(1)  # (layers, 1, H)
            if tuple(state.shape) != (layers, N, size):
                raise RuntimeError(f"{self._where()}: expected hidden size "
                                   f"{(layers, N, size)}, got {tuple(state.shape)}")
            states.append(state)
        return tuple(states)

    def _run(self, data, batch_sizes, state, weights, reverse):
        """One layer, one direction. data: (rows, C), the steps one after another, step t
        holding batch_sizes[t] rows (the sequences still running, longest first). Returns the
        outputs (rows, H_out) and the final state (each sequence's, at its own last step)."""
        w_ih, w_hh, b_ih, b_hh, w_hr = weights
        step = _STEPS[self.mode]
        gi = F.linear(data, w_ih, b_ih).split(batch_sizes)  # one matmul for every step's input
        N = batch_sizes[0]
        outputs = [None] * len(batch_sizes)
        for t in reversed(range(len(batch_sizes))) if reverse else range(len(batch_sizes)):
            size = batch_sizes[t]
            if size == N:
                state = step(gi[t], state, w_hh, b_hh, w_hr)
            else:  # the first `size` sequences run; the others keep their state
                new = step(gi[t], tuple(s[:size] for s in state), w_hh, b_hh, w_hr)
                state = tuple(tg.cat([n, s[size:]]) for n, s in zip(new, state))
            outputs[t] = state[0][:size]
        return tg.cat(outputs), state

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        defaults = dict(num_layers=1, bias=True, batch_first=False, dropout=0.0,
                        bidirectional=False, proj_size=0)
        for key, default in defaults.items():
            if getattr(self, key) != default:
                text += f", {key}={getattr(self, key)}"
        return text


class RNN(RNNBase):
    """torch.nn.RNN: Elman RNN, h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).
    RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False). forward(input, h_0=None) ->
    (output, h_n); shapes as RNNBase."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__(_rnn_mode(nonlinearity, "RNN"), input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """torch.nn.LSTM. forward(input, (h_0, c_0)=None) -> (output, (h_n, c_n)); c has
    hidden_size features, h and the output proj_size when it is set. Shapes as RNNBase."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """torch.nn.GRU. forward(input, h_0=None) -> (output, h_n); shapes as RNNBase."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)


# --- the cells: one step, no time loop -----------------------------------------------------------
class RNNCellBase(Module):
    """A single step. input: (N, input_size) or (input_size,); hx: (N, hidden_size) (LSTMCell:
    a pair), zeros when None. Parameters weight_ih, weight_hh, bias_ih, bias_hh."""

    def __init__(self, mode, input_size, hidden_size, bias, device, dtype):
        super().__init__()
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.bias = bias
        gates, options = _GATES[mode] * hidden_size, dict(device=device, dtype=dtype)
        self.weight_ih = Parameter(tg.empty(gates, input_size, **options))
        self.weight_hh = Parameter(tg.empty(gates, hidden_size, **options))
        if bias:
            self.bias_ih = Parameter(tg.empty(gates, **options))
            self.bias_hh = Parameter(tg.empty(gates, **options))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_init(self, self.hidden_size)

    def forward(self, input, hx=None):
        where = f"{type(self).__name__} '{self._path}'" if self._path else type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{where}: expected input to be 1-D or 2-D, got shape "
                             f"{tuple(input.shape)}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{where}: input has inconsistent input_size: got "
                               f"{input.shape[-1]} expected {self.input_size}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)  # (N, input_size)
        if hx is None:
            zeros = tg.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            state = (zeros, zeros) if self.mode == "LSTM" else (zeros,)
        else:
            state = tuple(hx) if self.mode == "LSTM" else (hx,)
            expected = (x.shape[0], self.hidden_size) if batched else (self.hidden_size,)
            if any(tuple(s.shape) != expected for s in state):
                raise RuntimeError(f"{where}: expected hidden state(s) of shape {expected}, got "
                                   f"{[tuple(s.shape) for s in state]}")
            state = state if batched else tuple(s.unsqueeze(0) for s in state)
        gi = F.linear(x, self.weight_ih, self.bias_ih)  # (N, gates)
        state = _STEPS[self.mode](gi, state, self.weight_hh, self.bias_hh)
        state = state if batched else tuple(s.squeeze(0) for s in state)
        return state if self.mode == "LSTM" else state[0]

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}, bias={self.bias}"


class RNNCell(RNNCellBase):
    """torch.nn.RNNCell: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(_rnn_mode(nonlinearity, "RNNCell"), input_size, hidden_size, bias,
                         device, dtype)
        self.nonlinearity = nonlinearity


class LSTMCell(RNNCellBase):
    """torch.nn.LSTMCell: forward(input, (h, c)=None) -> (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)


class GRUCell(RNNCellBase):
    """torch.nn.GRUCell: forward(input, h=None) -> h'."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)
