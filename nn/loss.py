"""Loss modules: thin holders of a loss's options around its functional form, with PyTorch's
constructors (including the deprecated size_average/reduce flags, which decide `reduction`
when given). Class weights are buffers, so they move with the module and are saved with it."""
from tensorgrad.ops.loss import legacy_reduction

from . import functional as F
from .module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Softmax cross-entropy between logits (N, C) or (N, C, d1, ...) and class indices (N, ...)
    or class probabilities shaped like the logits. See F.cross_entropy."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices under log-probabilities. See F.nll_loss."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy on probabilities (logs clamped at -100). See F.binary_cross_entropy."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross-entropy on logits, computed stably (no sigmoid then log)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """KL divergence from log-probabilities input to target; reduction='batchmean' is the
    mathematically correct per-sample KL. See F.kl_div."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MSELoss(_Loss):
    """Mean squared error between input and target of the same shape."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error between input and target of the same shape."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class HuberLoss(Module):
    """Quadratic within delta of the target, linear beyond. See F.huber_loss."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__()
        self.reduction, self.delta = reduction, delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SmoothL1Loss(_Loss):
    """Huber loss divided by beta: quadratic within beta, L1 beyond. See F.smooth_l1_loss."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood of counts. See F.poisson_nll_loss."""

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(Module):
    """Gaussian negative log-likelihood with a predicted variance. See F.gaussian_nll_loss."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__()
        self.full, self.eps, self.reduction = full, eps, reduction

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target * input)) for targets +1 / -1."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class _MarginLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class CosineEmbeddingLoss(_MarginLoss):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1."""

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(_MarginLoss):
    """max(0, -target * (input1 - input2) + margin)."""

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """input for target 1, max(0, margin - input) for target -1."""

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)
