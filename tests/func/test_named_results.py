"""Named results (``slogdet``'s ``(sign, logabsdet)``, ``max``'s ``(values, indices)``) in ``jitgrad.func``
trees: containers, as ``torch.utils._pytree`` takes them, so each field is batched, differentiated and
detached on its own, and the result keeps its type."""
from __future__ import annotations

import numpy as np

import jitgrad as jg
from jitgrad.func import grad, jacrev, vmap

MATRICES = np.random.default_rng(0).standard_normal((2, 3, 3)) + 3 * np.eye(3)


def test_vmap_and_jacrev_of_a_function_returning_a_named_tuple():
    mapped = vmap(jg.linalg.slogdet)(jg.tensor(MATRICES))
    assert type(mapped).__name__ == "SignAndLogAbsDet"
    np.testing.assert_allclose(mapped.logabsdet.numpy(), np.linalg.slogdet(MATRICES)[1], rtol=1e-12)
    jacobian = jacrev(jg.linalg.slogdet)(jg.tensor(MATRICES[0]))
    np.testing.assert_allclose(jacobian.logabsdet.numpy(), np.linalg.inv(MATRICES[0]).T, rtol=1e-12)
    np.testing.assert_array_equal(jacobian.sign.numpy(), np.zeros((3, 3)))
    assert vmap(lambda x: x.max(0))(jg.tensor(MATRICES)).indices.tolist() == MATRICES.argmax(1).tolist()


def test_a_named_aux_is_detached_as_pytorchs():
    """It was a leaf, returned as it was: still attached to the graph, where PyTorch's is detached."""
    _, aux = grad(lambda x: (x.sum(), x.max(0)), has_aux=True)(jg.tensor(MATRICES[0]))
    assert not aux.values.requires_grad and aux.values.grad_fn is None
