"""Losses (functional and modules) against PyTorch: values and gradients for every reduction,
options, stability and errors."""
import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional
REDUCTIONS = ["mean", "sum", "none"]


def _pair(x, grad):
    """(tensorgrad, torch) copies of an array (float64 arrays become float32 when asked)."""
    return (tg.tensor(x, requires_grad=grad),
            torch.tensor(x, requires_grad=grad))


def compare(ours, theirs, *arrays, grads=None, atol=1e-6, rtol=1e-5):
    """Run both losses on float32 copies of `arrays`; compare values and the gradients of
    <probe, loss> for each array whose `grads` flag is set (default: the first)."""
    grads = grads or [i == 0 for i in range(len(arrays))]
    pairs = [_pair(a.astype(np.float32) if a.dtype.kind == "f" else a, g and a.dtype.kind == "f")
             for a, g in zip(arrays, grads)]
    loss, tloss = ours(*(p[0] for p in pairs)), theirs(*(p[1] for p in pairs))
    assert loss.shape == tuple(tloss.shape) and loss.dtype == tg.float32
    np.testing.assert_allclose(loss.detach().numpy(), tloss.detach().numpy(), atol=atol,
                               rtol=rtol)
    probe = np.random.default_rng(0).standard_normal(loss.shape).astype(np.float32)
    (loss * tg.tensor(probe)).sum().backward()
    (tloss * torch.tensor(probe)).sum().backward()
    for (x, tx), g in zip(pairs, grads):
        if g and x.requires_grad:
            assert x.grad.dtype == tg.float32
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=atol, rtol=rtol)


rng = np.random.default_rng(1)
X, T = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
P, Q = rng.uniform(0.02, 0.98, (6, 5)), rng.uniform(0, 1, (6, 5))
CLASSES = np.array([0, 1, 4, 1, 3, 2])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [{}, {"label_smoothing": 0.1}, {"ignore_index": 1},
                                     {"weight": True}])
def test_cross_entropy_loss_matches_torch(reduction, options):
    options = dict(options)
    if options.pop("weight", False):
        w = rng.uniform(0.5, 1.5, 5).astype(np.float32)
        ours = nn.CrossEntropyLoss(weight=tg.tensor(w), reduction=reduction)
        theirs = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), reduction=reduction)
    else:
        ours = nn.CrossEntropyLoss(reduction=reduction, **options)
        theirs = torch.nn.CrossEntropyLoss(reduction=reduction, **options)
    compare(ours, theirs, X * 2.0, CLASSES)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(6, 5), (5,), (2, 5, 3), (2, 5, 2, 2)])
@pytest.mark.parametrize("options", [{}, {"ignore_index": 1}, {"weight": True}])
def test_nll_loss_matches_torch(reduction, shape, options):
    x = np.random.default_rng(2).standard_normal(shape)
    target = np.random.default_rng(3).integers(0, 5, shape[:1] + shape[2:] if len(shape) > 1
                                               else ())
    kwargs, tkwargs = dict(options), dict(options)
    if kwargs.pop("weight", False):
        w = np.linspace(0.5, 2.0, 5).astype(np.float32)
        kwargs["weight"], tkwargs["weight"] = tg.tensor(w), torch.tensor(w)
    compare(nn.NLLLoss(reduction=reduction, **kwargs),
            torch.nn.NLLLoss(reduction=reduction, **tkwargs), x, target)
    compare(lambda a, t: F.nll_loss(F.log_softmax(a, 0 if a.ndim == 1 else 1), t,
                                    reduction=reduction, **kwargs),
            lambda a, t: TF.nll_loss(TF.log_softmax(a, 0 if a.ndim == 1 else 1), t,
                                     reduction=reduction, **tkwargs), x, target)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_matches_torch(reduction, weighted):
    w = rng.uniform(0.5, 1.5, 5).astype(np.float32)
    kwargs = {"weight": tg.tensor(w)} if weighted else {}
    tkwargs = {"weight": torch.tensor(w)} if weighted else {}
    compare(nn.BCELoss(reduction=reduction, **kwargs),
            torch.nn.BCELoss(reduction=reduction, **tkwargs), P, Q, grads=[True, True])


def test_bce_clamps_its_logs_at_minus_100():
    p, t = tg.tensor([0.0, 1.0, 0.0, 1.0]), tg.tensor([1.0, 0.0, 0.0, 1.0])
    ours = F.binary_cross_entropy(p, t, reduction="none")
    theirs = TF.binary_cross_entropy(torch.tensor(p.numpy()), torch.tensor(t.numpy()),
                                     reduction="none")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.tolist() == [100.0, 100.0, 0.0, 0.0]
    x = tg.tensor([0.0, 0.5, 1.0], requires_grad=True)
    F.binary_cross_entropy(x, tg.tensor([1.0, 1.0, 0.0])).backward()
    assert np.isfinite(x.grad.numpy()).all()
    with pytest.raises(ValueError, match=r"binary_cross_entropy: input must hold probabilities "
                                         r"in \[0, 1\], got values in \[-0.5, 0.5\]"):
        F.binary_cross_entropy(tg.tensor([-0.5, 0.5]), tg.tensor([0.0, 1.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_with_logits_matches_torch(reduction, weighted):
    kwargs, tkwargs = {}, {}
    if weighted:
        w, pw = rng.uniform(0.5, 1.5, 5).astype(np.float32), np.float32([1, 2, 0.5, 3, 1])
        kwargs = {"weight": tg.tensor(w), "pos_weight": tg.tensor(pw)}
        tkwargs = {"weight": torch.tensor(w), "pos_weight": torch.tensor(pw)}
    logits = np.concatenate([X * 5.0, np.zeros((1, 5))])  # exactly 0 is a kink in |x| forms
    compare(nn.BCEWithLogitsLoss(reduction=reduction, **kwargs),
            torch.nn.BCEWithLogitsLoss(reduction=reduction, **tkwargs), logits,
            np.concatenate([Q, Q[:1]]), grads=[True, True])


def test_bce_with_logits_is_stable_for_huge_logits():
    x = tg.tensor([-1000.0, -50.0, 50.0, 1000.0], requires_grad=True)
    target = tg.tensor([1.0, 0.0, 1.0, 0.0])
    loss = nn.BCEWithLogitsLoss(reduction="none")(x, target)
    np.testing.assert_allclose(loss.detach().numpy(), [1000.0, 0.0, 0.0, 1000.0], atol=1e-6)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, 0.0, 0.0, 1.0], atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(reduction, log_target):
    target = np.log(P) if log_target else np.where(np.arange(5) == 2, 0.0, P)  # zeros in p
    logq = np.log(Q + 0.01)
    compare(nn.KLDivLoss(reduction=reduction, log_target=log_target),
            torch.nn.KLDivLoss(reduction=reduction, log_target=log_target), logq, target)
    compare(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
            lambda a, b: TF.kl_div(a, b, reduction=reduction, log_target=log_target), logq,
            np.log(P) if log_target else P, grads=[True, True])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, ours, theirs", [
    ("mse", nn.MSELoss, torch.nn.MSELoss),
    ("l1", nn.L1Loss, torch.nn.L1Loss),
    ("huber", lambda reduction: nn.HuberLoss(reduction, delta=0.7),
     lambda reduction: torch.nn.HuberLoss(reduction, delta=0.7)),
    ("smooth_l1", lambda reduction: nn.SmoothL1Loss(reduction=reduction, beta=0.5),
     lambda reduction: torch.nn.SmoothL1Loss(reduction=reduction, beta=0.5)),
    ("smooth_l1_beta0", lambda reduction: nn.SmoothL1Loss(reduction=reduction, beta=0.0),
     lambda reduction: torch.nn.SmoothL1Loss(reduction=reduction, beta=0.0)),
    ("soft_margin", nn.SoftMarginLoss, torch.nn.SoftMarginLoss),
])
def test_regression_losses_match_torch(reduction, name, ours, theirs):
    target = np.sign(T) if name == "soft_margin" else T
    target[0, :2] = X[0, :2]  # equal input and target: the kink of l1, huber and smooth_l1
    compare(ours(reduction=reduction), theirs(reduction=reduction), X, target,
            grads=[True, name != "soft_margin"])  # torch has no soft_margin gradient for target


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_weighted_regression_losses_match_torch(reduction, name):
    w = rng.uniform(0, 2, (6, 5)).astype(np.float32)
    compare(lambda a, b: getattr(F, name)(a, b, reduction=reduction, weight=tg.tensor(w)),
            lambda a, b: getattr(TF, name)(a, b, reduction=reduction, weight=torch.tensor(w)),
            X, T, grads=[True, True])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(6, 5), (5,)])
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_cosine_embedding_loss_matches_torch(reduction, shape, margin):
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    y = np.where(rng.random(shape[:-1]) > 0.5, 1.0, -1.0)
    if len(shape) == 2:
        b[1] = a[1] * 2.0  # cos = 1 exactly: the kink of the negative term
        a[2] = 0.0  # a zero vector: the 1e-12 in the norms keeps it finite
    compare(nn.CosineEmbeddingLoss(margin, reduction=reduction),
            torch.nn.CosineEmbeddingLoss(margin, reduction=reduction), a, b, y,
            grads=[True, True, False])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_ranking_losses_match_torch(reduction, margin):
    a, b = rng.standard_normal(8), rng.standard_normal(8)
    y = np.where(rng.random(8) > 0.5, 1.0, -1.0)
    compare(nn.MarginRankingLoss(margin, reduction=reduction),
            torch.nn.MarginRankingLoss(margin, reduction=reduction), a, b, y,
            grads=[True, True, False])
    compare(nn.HingeEmbeddingLoss(margin + 1.0, reduction=reduction),
            torch.nn.HingeEmbeddingLoss(margin + 1.0, reduction=reduction), np.abs(a), y)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input, full", [(True, False), (False, False), (True, True),
                                             (False, True)])
def test_poisson_nll_loss_matches_torch(reduction, log_input, full):
    counts = np.random.default_rng(4).poisson(2.0, (6, 5)).astype(np.float64)  # 0, 1 and more
    rate = X if log_input else np.abs(X) + 0.1
    compare(nn.PoissonNLLLoss(log_input, full, reduction=reduction),
            torch.nn.PoissonNLLLoss(log_input, full, reduction=reduction), rate, counts)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", [(6, 5), (6,), (6, 1), (1, 5), "float"])
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll_loss_matches_torch(reduction, var_shape, full):
    if var_shape == "float":
        ours = nn.GaussianNLLLoss(full=full, reduction=reduction)
        theirs = torch.nn.GaussianNLLLoss(full=full, reduction=reduction)
        compare(lambda a, b: ours(a, b, 0.7), lambda a, b: theirs(a, b, 0.7), X, T,
                grads=[True, True])
        return
    var = np.abs(np.random.default_rng(5).standard_normal(var_shape)) + 0.05
    var.flat[0] = 1e-9  # below eps: counts as eps, the gradient passes through
    compare(nn.GaussianNLLLoss(full=full, reduction=reduction),
            torch.nn.GaussianNLLLoss(full=full, reduction=reduction), X, T, var,
            grads=[True, True, True])


def test_gaussian_nll_loss_checks_var():
    with pytest.raises(ValueError, match=r"var of shape \(5, 6\) fits neither"):
        F.gaussian_nll_loss(tg.zeros(6, 5), tg.zeros(6, 5), tg.ones(5, 6))
    with pytest.raises(ValueError, match="var has negative entries"):
        F.gaussian_nll_loss(tg.zeros(2), tg.zeros(2), -tg.ones(2))
    with pytest.raises(ValueError, match="var must be >= 0"):
        F.gaussian_nll_loss(tg.zeros(2), tg.zeros(2), -1.0)


def test_legacy_flags_decide_the_reduction():
    x, t = X.astype(np.float32), T.astype(np.float32)
    for size_average, reduce in ((False, None), (None, False), (True, True), (False, True)):
        ours = nn.L1Loss(size_average, reduce)(tg.tensor(x), tg.tensor(t))
        theirs = torch.nn.L1Loss(size_average, reduce)(torch.tensor(x), torch.tensor(t))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="pass reduction= by name"):
        nn.MSELoss("sum")


def test_loss_modules_repr_and_buffers():
    assert repr(nn.L1Loss()) == "L1Loss()" and repr(nn.KLDivLoss()) == "KLDivLoss()"
    loss = nn.NLLLoss(weight=tg.ones(3))
    assert list(loss.state_dict()) == ["weight"] and loss.num_parameters() == 0
    assert list(nn.BCEWithLogitsLoss(pos_weight=tg.ones(3)).state_dict()) == ["pos_weight"]


def test_losses_check_their_arguments():
    with pytest.raises(ValueError, match=r"mse_loss: .* same shape, got \(4,\) and \(4, 1\)"):
        nn.MSELoss()(tg.randn(4), tg.randn(4, 1))
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.MSELoss(reduction="avg")(tg.zeros(2), tg.zeros(2))
    with pytest.raises(ValueError, match="kl_div: reduction must be one of"):
        F.kl_div(tg.zeros(2), tg.zeros(2), reduction="batch")
    with pytest.raises(ValueError, match=r"nll_loss: log-probabilities of shape \(2, 3\) need "
                                         r"a target of shape \(2,\), got \(3,\)"):
        F.nll_loss(tg.zeros(2, 3), tg.tensor([0, 1, 2]))
    with pytest.raises(IndexError, match=r"nll_loss: target values must lie in \[0, 3\)"):
        F.nll_loss(tg.zeros(2, 3), tg.tensor([0, 3]))
    # ignored rows are not out of range; a target beside them still is
    assert float(F.cross_entropy(tg.zeros(3, 3), tg.tensor([-100, 0, 2]))) == pytest.approx(
        np.log(3.0))
    with pytest.raises(IndexError, match=r"cross_entropy: target values must lie in \[0, 3\) "
                                         r"\(or equal ignore_index=-100\); got values in "
                                         r"\[0, 3\]"):
        F.cross_entropy(tg.zeros(3, 3), tg.tensor([-100, 0, 3]))
    with pytest.raises(IndexError, match=r"got values in \[-1, 1\]"):
        F.cross_entropy(tg.zeros(2, 3), tg.tensor([-1, 1]))
    with pytest.raises(ValueError, match="huber_loss: delta must be positive"):
        F.huber_loss(tg.zeros(2), tg.zeros(2), delta=0.0)
    with pytest.raises(ValueError, match=r"l1_loss: weight must have the input's shape"):
        F.l1_loss(tg.zeros(2, 3), tg.zeros(2, 3), weight=tg.ones(3))
    with pytest.raises(ValueError, match=r"cosine_embedding_loss: inputs of shape \(2, 3\) "
                                         r"need a target of shape \(2,\)"):
        F.cosine_embedding_loss(tg.zeros(2, 3), tg.zeros(2, 3), tg.ones(3))


def test_losses_pass_second_order_gradcheck():
    x = tg.tensor(X[:3], dtype=tg.float64, requires_grad=True)
    t = tg.tensor(T[:3], dtype=tg.float64)
    p = tg.tensor(P[:3], dtype=tg.float64)
    classes = tg.tensor([0, 4, 2])
    for fn in (lambda a: F.nll_loss(a.log_softmax(1), classes),
               lambda a: F.binary_cross_entropy(a.sigmoid(), p),
               lambda a: F.binary_cross_entropy_with_logits(a, p, pos_weight=p[0] + 0.5),
               lambda a: F.kl_div(a.log_softmax(1), p, reduction="batchmean"),
               lambda a: F.mse_loss(a, t), lambda a: F.huber_loss(a, t, delta=0.5),
               lambda a: F.smooth_l1_loss(a, t, beta=0.5), lambda a: F.soft_margin_loss(a, t),
               lambda a: F.cosine_embedding_loss(a, t, tg.tensor([1.0, -1.0, -1.0])),
               lambda a: F.poisson_nll_loss(a, p, full=True),
               lambda a: F.gaussian_nll_loss(t, p, a * a + 0.1, full=True)):
        assert tg.gradcheck(fn, (x,)) and tg.gradgradcheck(fn, (x,))


def test_cross_entropy_gradient_in_float32_is_softmax_minus_one_hot_to_rounding():
    """Large float32 logits: the fused VJP's softmax must be as exact as the forward's. Rebuilt
    as exp(logits - logsumexp) it carried the log-sum-exp's rounding (ulps of |lse| ~ 60: 4e-6)
    into every probability, enough to turn the RLHF example's PPO stage (slow test)."""
    rng = np.random.default_rng(3)
    logits = (rng.standard_normal((256, 40)) * 8 + 50).astype(np.float32)
    target = rng.integers(0, 40, 256)
    x = tg.tensor(logits, requires_grad=True)
    F.cross_entropy(x, tg.tensor(target), reduction="sum").backward()
    shifted = np.exp(logits.astype(np.float64) - logits.max(1, keepdims=True))
    expected = shifted / shifted.sum(1, keepdims=True)
    expected[np.arange(256), target] -= 1
    assert x.grad.dtype == tg.float32
    assert np.abs(np.asarray(x.grad) - expected).max() < 5e-7
