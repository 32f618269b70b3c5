"""Images with nothing to download: scikit-learn's bundled handwritten digits.

1,797 grey 8x8 images of the digits 0-9 (UCI's optdigits test set, levels 0..16), optionally
upsampled to 16x16 or 32x32 (bilinear), split into train and test with a seed (stratified, so
every class keeps its share), and a random-shift augmentation for training.
"""
import tensorgrad as tg
from tensorgrad.ops.resize import interpolate

SIZES = (8, 16, 32)


def load_digits(size=8, test_size=0.25, seed=0, dtype=tg.float32, device=None):
    """(x_train, y_train, x_test, y_test): images (N, 1, size, size) scaled to [0, 1] and labels
    (N,) int64. The split is scikit-learn's train_test_split(test_size, random_state=seed,
    stratify=labels): seed 0 and 0.25 give the 1,347 / 450 split of
    examples/train_cnn_digits.py, so the two examples compare on the same test images."""
    if size not in SIZES:
        raise ValueError(f"load_digits: size must be one of {SIZES} (8x8 upsampled by 1, 2 or "
                         f"4), got {size}")
    try:
        from sklearn.datasets import load_digits as sklearn_digits
        from sklearn.model_selection import train_test_split
    except ImportError as e:
        raise ImportError("load_digits needs scikit-learn (pip install scikit-learn), whose "
                          "package carries the images") from e
    digits = sklearn_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.images / 16.0, digits.target, test_size=test_size, random_state=seed,
        stratify=digits.target)
    labels = dict(dtype=tg.int64, device=device)
    return (_images(x_train, size, dtype, device), tg.tensor(y_train, **labels),
            _images(x_test, size, dtype, device), tg.tensor(y_test, **labels))


def _images(array, size, dtype, device):
    x = tg.tensor(array, dtype=dtype, device=device).unsqueeze(1)  # (N, 1, 8, 8)
    if size != 8:
        x = interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x.clamp(0.0, 1.0)  # (N, 1, size, size)


class RandomShift:
    """A training transform: each image moved by a random whole number of pixels, up to
    max_shift in each direction (independently along rows and columns), the uncovered border
    filled with fill. Works on batches (B, C, H, W) -> same shape, or one image (C, H, W).
    generator: a tg.Generator for reproducible shifts (default: the global one)."""

    def __init__(self, max_shift=1, fill=0.0, generator=None):
        if max_shift < 0:
            raise ValueError(f"RandomShift: max_shift must be >= 0, got {max_shift}")
        self.max_shift, self.fill, self.generator = max_shift, fill, generator

    def __call__(self, images):
        if images.ndim == 3:
            return self(images.unsqueeze(0)).squeeze(0)
        if images.ndim != 4:
            raise ValueError(f"RandomShift: expected images (B, C, H, W) or (C, H, W), got "
                             f"{images.shape}")
        m = self.max_shift
        if m == 0:
            return images
        B, C, H, W = images.shape
        padded = tg.pad(images, (m, m, m, m), value=self.fill)  # (B, C, H + 2m, W + 2m)
        padded = padded.permute(0, 2, 3, 1)  # (B, H + 2m, W + 2m, C)
        offsets = tg.randint(0, 2 * m + 1, (2, B), generator=self.generator,
                             device=images.device)  # top-left corner of each crop
        rows = offsets[0].reshape(B, 1, 1) + tg.arange(H, device=images.device).reshape(1, H, 1)
        cols = offsets[1].reshape(B, 1, 1) + tg.arange(W, device=images.device).reshape(1, 1, W)
        batch = tg.arange(B, device=images.device).reshape(B, 1, 1)
        return padded[batch, rows, cols].permute(0, 3, 1, 2)  # (B, C, H, W)

    def __repr__(self):
        return f"RandomShift(max_shift={self.max_shift}, fill={self.fill})"
