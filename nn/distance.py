"""Distance modules with PyTorch's constructors: CosineSimilarity, PairwiseDistance and the
TripletMarginLoss built on the latter. Each holds its options and calls the functional form."""
from tensorgrad.ops.loss import legacy_reduction

from . import functional as F
from .module import Module


class CosineSimilarity(Module):
    """Cosine similarity of two inputs along dim. See F.cosine_similarity."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self):
        return f"dim={self.dim}, eps={self.eps}"


class PairwiseDistance(Module):
    """p-norm of x1 - x2 + eps over the last dim. See F.pairwise_distance."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim  # torch names the p attribute norm

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class TripletMarginLoss(Module):
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0), reduced. See
    F.triplet_margin_loss."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__()
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap
        self.reduction = legacy_reduction(size_average, reduce, reduction)

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)
