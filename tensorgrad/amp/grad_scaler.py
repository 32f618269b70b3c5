"""GradScaler: dynamic loss scaling, as torch.amp.GradScaler.

float16 holds no magnitude below about 6e-8, so small gradients of a float16 forward flush to
zero. Multiplying the loss by a large scale lifts them into range; the gradients are divided
back (`unscale_`) before the optimizer sees them. When a scaled gradient overflows to inf or
nan, that step is skipped and the scale shrinks (`backoff_factor`); after `growth_interval`
steps without overflow it grows again (`growth_factor`).
"""
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True), with PyTorch's methods: scale, unscale_, step, update,
    get_scale, state_dict, load_state_dict. With enabled=False every method passes through."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if growth_factor <= 1.0:
            raise ValueError(f"GradScaler: growth_factor should be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor should be < 1, got {backoff_factor}")
        if int(growth_interval) != growth_interval or growth_interval <= 0:
            raise ValueError(f"GradScaler: growth_interval should be a positive integer, got "
                             f"{growth_interval}")
        self._device, self._enabled = device, bool(enabled)
        self._scale, self._growth_factor = float(init_scale), float(growth_factor)
        self._backoff_factor, self._growth_interval = float(backoff_factor), int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}  # id(optimizer) -> {"stage": ..., "found_inf": bool}

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        """outputs (a tensor, or nested lists/tuples of them) times the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError(f"GradScaler.scale: outputs must be a Tensor or an iterable of Tensors, "
                         f"got {type(outputs).__name__}")

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": False})

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in place, and note whether any is inf
        or nan. Call it before clipping or inspecting gradients; at most once per update()."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inverse = 1.0 / self._scale
        finite = True
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.dtype.itemsize < 4:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    p.grad.mul_(inverse)
                    # One reduction per gradient; the host reads the flag once, in step().
                    finite = p.grad.isfinite().all() if finite is True else \
                        finite & p.grad.isfinite().all()
        state["found_inf"] = finite is not True and not finite.item()
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """unscale_ (unless done already), then optimizer.step(*args, **kwargs) unless a
        gradient was inf or nan. Returns what optimizer.step returned, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        state["stage"] = _STEPPED
        return None if state["found_inf"] else optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Shrink the scale after a step with inf/nan gradients, grow it after growth_interval
        clean steps; or set it to new_scale (a float or a one-element tensor)."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        else:
            if not self._per_optimizer:
                raise RuntimeError("No inf checks were recorded prior to update().")
            if any(s["found_inf"] for s in self._per_optimizer.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def get_scale(self):
        """The current scale (1.0 when disabled), a Python float."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = int(new_interval)

    def state_dict(self):
        """PyTorch's keys; empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
