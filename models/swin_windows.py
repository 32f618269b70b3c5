"""Swin's windows (Liu et al., 2021; models/swin.py): cutting a (B, H, W, C) grid into w x w
windows and back, each query-key pair's row in the relative-position bias table, and the mask
that keeps the pieces a shifted window brought together from attending to each other."""
import tensorgrad as tg


def window_partition(x, window):
    """(B, H, W, C) -> (B * H/w * W/w, w * w, C): the windows in row-major order per image."""
    B, H, W, C = x.shape
    x = x.reshape(B, H // window, window, W // window, window, C)  # (B, h, w, w', w, C)
    x = x.transpose(2, 3)  # (B, H/w, W/w, w, w, C)
    return x.reshape(-1, window * window, C)  # (B nW, w^2, C)


def window_reverse(windows, window, H, W):
    """window_partition's inverse: (B * nW, w * w, C) -> (B, H, W, C)."""
    C = windows.shape[-1]
    x = windows.reshape(-1, H // window, W // window, window, window, C)  # (B, H/w, W/w, w, w, C)
    return x.transpose(2, 3).reshape(-1, H, W, C)  # (B, H, W, C)


def relative_position_index(window, table_window=None):
    """(w^2, w^2) int64: for queries i and keys j of a w x w window, the row of their offset
    (dy, dx) in a (2 W - 1)^2 bias table, (dy + W - 1) (2 W - 1) + dx + W - 1, W = table_window
    (default w). A window clamped to a smaller grid reads the same table."""
    W = window if table_window is None else table_window
    cells = [(y, x) for y in range(window) for x in range(window)]
    rows = [[(yi - yj + W - 1) * (2 * W - 1) + xi - xj + W - 1 for yj, xj in cells]
            for yi, xi in cells]
    return tg.tensor(rows, dtype=tg.int64)


def shifted_window_mask(H, W, window, shift, dtype, device=None):
    """(nW, w^2, w^2) additive mask for the windows of an (H, W) grid rolled up and left by
    `shift`: 0 where query and key come from the same region of the unrolled grid, -100 where
    the roll brought them together (Hugging Face's value; softmax makes it ~0)."""
    def region(i, size):  # 0 for the bulk, 1 for the last window, 2 for the rolled-in strip
        return int(i >= size - window) + int(i >= size - shift)

    labels = tg.tensor([[[[3.0 * region(y, H) + region(x, W)] for x in range(W)]
                         for y in range(H)]], dtype=dtype, device=device)  # (1, H, W, 1)
    labels = window_partition(labels, window).squeeze(-1)  # (nW, w^2)
    differs = labels.unsqueeze(1) != labels.unsqueeze(2)  # (nW, w^2, w^2)
    return tg.where(differs, -100.0, 0.0).to(dtype)
