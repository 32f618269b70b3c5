"""Shared by the layer tests: a tensorgrad module against its PyTorch twin on one input."""
import numpy as np

import tensorgrad as tg


def outputs_and_gradients_match(ours, theirs, ox, tx, out, tout, atol=1e-10, seed=5):
    """out/tout agree, and so do the input's and every parameter's gradient after backward
    from one random probe."""
    import torch
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), atol=atol)
    probe = np.random.default_rng(seed).standard_normal(tout.shape)
    (out * tg.tensor(probe)).sum().backward()
    (tout * torch.tensor(probe)).sum().backward()
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), atol=atol)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(dict(ours.named_parameters())[name].grad.numpy(),
                                   p.grad.numpy(), atol=atol, err_msg=name)
