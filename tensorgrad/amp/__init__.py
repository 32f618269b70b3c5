"""Mixed precision, as torch.amp: `autocast` picks each op's precision, `GradScaler` keeps
float16 gradients from underflowing.

    scaler = tg.amp.GradScaler()
    with tg.amp.autocast("cuda"):
        loss = model(x, y)[1]
    scaler.scale(loss).backward()
    scaler.unscale_(opt)                     # before clipping, so clipping sees true gradients
    tg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)                         # skipped when a gradient is inf or nan
    scaler.update()
"""
from .autocast_mode import (  # noqa: F401
    FLOAT32_OPS, LOWER_PRECISION_OPS, autocast, get_autocast_dtype, is_autocast_enabled,
)
from .grad_scaler import GradScaler  # noqa: F401
