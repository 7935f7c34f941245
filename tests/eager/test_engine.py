"""The backward engine: order, implicit summation, selective execution, graph lifetime, hooks,
reentrancy, threads and rollback. Where PyTorch is installed, orders are compared with its own."""
from __future__ import annotations

import gc
import re
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd.graph import AccumulateGrad, GraphRoot, get_gradient_edge


MATMUL_SHAPES = [((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 2)), ((4, 2, 3), (3, 2)),
                 ((2, 3), (4, 3, 2)), ((4, 2, 3), (4, 3, 2)), ((3,), (4, 3, 2)), ((4, 2, 3), (3,))]


def leaf(*values, dtype=jg.float64):
    return jg.tensor(np.array(values, dtype=np.float64), dtype=dtype, requires_grad=True)


def graph_nodes(root):
    """Every node reachable from ``root`` through next_functions."""
    seen, stack = [], [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.append(node)
        stack.extend(fn for fn, _ in node.next_functions)
    return seen


def record_order(root):
    order = []
    for node in graph_nodes(root):
        node.register_prehook(lambda grads, node=node: order.append(node.name()))
    return order


def branching_program(lib, x, w):
    a = lib.sin(x) * w
    b = lib.exp(w) + x
    c = (a * b).tanh()
    return (c + a).sum()


class TestGraphStructure:
    def test_next_functions_and_accumulate_grad_reuse(self):
        x, w = leaf(1.0, 2.0), leaf(3.0, 4.0)
        y = x * w + x
        add = y.grad_fn
        assert add.name() == "AddBackward0"
        mul, x_acc = add.next_functions[0][0], add.next_functions[1][0]
        assert isinstance(x_acc, AccumulateGrad) and x_acc.variable is x
        assert mul.next_functions[0][0] is x_acc, "every use of a leaf shares its AccumulateGrad"
        assert mul.next_functions[1][0].variable is w

    def test_scalar_operand_has_no_edge(self):
        x = leaf(1.0)
        assert (x * 3).grad_fn.next_functions[1] == (None, 0)

    def test_sequence_and_topological_numbers(self):
        x = leaf(1.0, 2.0)
        a = x.exp()
        b = a * 2
        c = b + a
        assert a.grad_fn.sequence_nr() < b.grad_fn.sequence_nr() < c.grad_fn.sequence_nr()
        acc = a.grad_fn.next_functions[0][0]
        assert acc.topological_nr() == 0
        assert a.grad_fn.topological_nr() == 1
        assert b.grad_fn.topological_nr() == 2
        assert c.grad_fn.topological_nr() == 3

    @pytest.mark.parametrize("build", [lambda x: x.sin(), lambda x: x * x, lambda x: x * 2.0,
                                       lambda x: x.exp()[1:] * x[:1], lambda x: jg.stack([x, x])])
    def test_a_recorded_node_has_every_slot_a_constructed_one_has(self, build):
        """``autograd.recording.record`` builds common nodes without ``Node.__init__``: a slot added there and
        forgotten here would be an AttributeError far from its cause."""
        from jitgrad.autograd.graph import Node
        node = build(leaf(1.0, 2.0)).grad_fn
        fresh = type(node)(node.next_edges)
        for cls in type(node).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if name == "__weakref__" or not hasattr(fresh, name):
                    continue
                assert hasattr(node, name), f"{node.name()} lacks {name}"
                if cls is Node and name not in ("_sequence_nr", "_input_metadata"):
                    assert getattr(node, name) == getattr(fresh, name), name

    def test_node_metadata_is_a_dict_kept_on_the_node(self):
        y = leaf(1.0).exp()
        y.grad_fn.metadata["tag"] = "mine"
        assert y.grad_fn.metadata == {"tag": "mine"}

    def test_gradient_edge(self):
        x = leaf(1.0, 2.0)
        y = x * x
        edge = get_gradient_edge(y)
        assert edge.node is y.grad_fn and edge.output_nr == 0
        (g,) = jg.autograd.grad(y.sum(), edge)
        assert np.allclose(g.numpy(), 1.0)
        with pytest.raises(RuntimeError, match="does not require gradients"):
            get_gradient_edge(jg.ones(2))


class TestExecutionOrder:
    def test_ready_queue_runs_highest_sequence_number_first(self):
        x, w = leaf(0.3, -0.2), leaf(0.5, 1.5)
        loss = branching_program(jg, x, w)
        order = record_order(loss.grad_fn)
        loss.backward()
        nodes = [n for n in graph_nodes(loss.grad_fn) if not isinstance(n, AccumulateGrad)]
        by_sequence = sorted(nodes, key=lambda n: -n.sequence_nr())
        executed = [name for name in order if name != "AccumulateGrad"]
        assert executed == [n.name() for n in by_sequence]

    def test_order_matches_pytorch(self):
        torch = pytest.importorskip("torch")
        x, w = leaf(0.3, -0.2), leaf(0.5, 1.5)
        loss = branching_program(jg, x, w)
        order = record_order(loss.grad_fn)
        loss.backward()
        tx = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
        tw = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
        tloss = branching_program(torch, tx, tw)
        torder = record_order(tloss.grad_fn)
        tloss.backward()
        assert order == [name.replace("torch::autograd::", "") for name in torder]
        assert np.allclose(x.grad.numpy(), tx.grad.numpy()) and np.allclose(w.grad.numpy(), tw.grad.numpy())


class TestImplicitSummation:
    def test_multiple_paths_sum_in_the_input_buffer(self):
        a = leaf(1.0)
        y = a * 2 + a * 3
        y.backward()
        assert a.grad.item() == 5.0

    def test_grad_accumulates_across_calls(self):
        x = leaf(1.0, 2.0)
        (x * x).sum().backward()
        first = x.grad.numpy().copy()
        (x * x).sum().backward()
        assert np.allclose(x.grad.numpy(), 2 * first)

    @pytest.mark.parametrize("observed", [False, True], ids=["fast path", "engine (a tensor hook)"])
    def test_a_later_gradient_is_added_into_the_existing_grad_as_pytorch_does(self, observed):
        """With grad mode off AccumulateGrad adds into ``.grad``'s memory: a ``.grad`` held across
        backwards (``g = p.grad``, an optimizer's reference) sees the sum, and its version moves."""
        torch = pytest.importorskip("torch")
        results = []
        for lib in (jg, torch):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            if observed:
                x.register_hook(lambda g: g)
            (x * 2).sum().backward()
            held, version = x.grad, x.grad._version
            (x * 3).sum().backward()
            results.append((held is x.grad, held.tolist(), x.grad._version > version))
        assert results[0] == results[1] == (True, [5.0, 5.0], True)

    def test_the_one_node_path_and_a_held_read_only_grad(self):
        x = leaf(1.0, 2.0)
        x.sum().backward()   # a graph of one node before the leaf: the engine's one-node path
        held = x.grad
        x.sum().backward()
        assert held is x.grad and held.tolist() == [2.0, 2.0]
        x.grad = jg.from_numpy(np.broadcast_to(np.array([1.0]), (2,)))   # memory no sum can go into
        before = x.grad
        x.sum().backward()
        assert x.grad is not before and x.grad.tolist() == [2.0, 2.0] and before.tolist() == [1.0, 1.0]

    def test_a_failing_backward_leaves_an_added_into_grad_as_it_was(self):
        x, z = leaf(1.0, 2.0), leaf(3.0, 4.0)
        (z * 2).sum().backward()
        held = z.grad

        def fail(grad):
            raise RuntimeError("hook failed")
        y = x * 3
        y.register_hook(fail)
        loss = (y + z).sum()   # z's accumulator runs (it is ready first) before y's hook fails
        with pytest.raises(RuntimeError, match="hook failed"):
            loss.backward()
        assert z.grad is held and held.tolist() == [2.0, 2.0] and x.grad is None

    def test_broadcast_gradient_is_summed_to_the_input_shape(self):
        b = jg.tensor(np.ones((3, 1)), requires_grad=True)
        (b * jg.ones(4)).sum().backward()
        assert b.grad.shape == (3, 1) and np.allclose(b.grad.numpy(), 4.0)


class TestSelectiveExecution:
    def test_autograd_grad_runs_only_the_needed_nodes_and_leaves_grad_alone(self):
        w1, w2 = leaf(0.5, 1.0), leaf(2.0, 3.0)
        h = w1.exp()
        other = w2.sin()
        loss = (h * 2).sum() + other.sum()
        order = record_order(loss.grad_fn)
        (g,) = jg.autograd.grad(loss, [w1])
        assert np.allclose(g.numpy(), 2 * np.exp([0.5, 1.0]))
        assert "SinBackward0" not in order and "ExpBackward0" in order
        assert w1.grad is None and w2.grad is None

    def test_backward_inputs_accumulates_only_into_those(self):
        w1, w2 = leaf(0.5), leaf(2.0)
        loss = w1 * w2
        loss.backward(inputs=[w1])
        assert w1.grad.item() == 2.0 and w2.grad is None

    def test_backward_inputs_on_a_non_leaf_fills_its_grad(self):
        x = leaf(1.0, 2.0)
        h = x * 3
        (h * h).sum().backward(inputs=[h])
        assert np.allclose(h.grad.numpy(), 2 * h.detach().numpy())
        assert x.grad is None

    def test_unused_input(self):
        x, unused = leaf(1.0), leaf(2.0)
        y = x * 2
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            jg.autograd.grad(y, [x, unused], retain_graph=True)
        gx, gu = jg.autograd.grad(y, [x, unused], allow_unused=True)
        assert gx.item() == 2.0 and gu is None


class TestGraphLifetime:
    def test_second_backward_without_retain_graph_fails(self):
        x = leaf(1.0, 2.0)
        y = (x * x).sum()
        y.backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            y.backward()

    def test_retain_graph_allows_a_second_backward(self):
        x = leaf(1.0, 2.0)
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        assert np.allclose(x.grad.numpy(), 4 * x.detach().numpy())

    def test_saved_arrays_are_released_after_backward(self):
        x = leaf(1.0, 2.0)
        h = x.exp()
        probe = weakref.ref(h.detach().numpy())  # the array itself: detach shares it
        y = (h * h).sum()
        del h
        gc.collect()
        assert probe() is not None, "the graph keeps what backward needs"
        y.backward()
        gc.collect()
        assert probe() is None, "backward without retain_graph frees the saved arrays"

    def test_training_loop_memory_stays_flat(self):
        rng = np.random.default_rng(0)
        w = jg.tensor(rng.standard_normal((8, 4)), requires_grad=True)
        x = jg.tensor(rng.standard_normal((16, 8)))

        def step():
            loss = ((x @ w).tanh() ** 2).mean()
            loss.backward()
            with jg.no_grad():
                w.data = w - 0.01 * w.grad
            w.grad = None

        for _ in range(2000):   # untraced (3x faster): what fills up once is full before tracing starts
            step()
        tracemalloc.start()
        for _ in range(200):
            step()
        middle, _ = tracemalloc.get_traced_memory()
        for _ in range(2000):
            step()
        end, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        # 8 bytes a step (a pointer kept per step) is the most growth allowed; about 1 KB is seen in all.
        assert end - middle < 2000 * 8, f"memory grew by {end - middle} bytes over 2000 steps"


class TestHigherOrder:
    def test_create_graph_gives_gradients_of_gradients(self):
        x = leaf(1.5, -2.0)
        (g,) = jg.autograd.grad((x ** 3).sum(), x, create_graph=True)
        assert g.requires_grad and np.allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
        (gg,) = jg.autograd.grad(g.sum(), x)
        assert np.allclose(gg.numpy(), 6 * x.detach().numpy())

    def test_backward_with_create_graph_keeps_grad_differentiable(self):
        x = leaf(2.0)
        (x ** 2).backward(create_graph=True)
        assert x.grad.requires_grad
        (gg,) = jg.autograd.grad(x.grad, x)
        assert gg.item() == 2.0


class TestHooks:
    def test_tensor_hook_runs_before_accumulation_and_can_replace(self):
        x = leaf(1.0, 2.0)
        seen = []
        handle = x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
        (x * 3).sum().backward()
        assert np.allclose(seen[0], 3.0) and np.allclose(x.grad.numpy(), 30.0)
        handle.remove()
        x.grad = None
        (x * 3).sum().backward()
        assert np.allclose(x.grad.numpy(), 3.0) and len(seen) == 1

    def test_hook_on_non_leaf_changes_what_flows_on(self):
        x = leaf(1.0)
        h = x * 2
        h.register_hook(lambda g: g * 0)
        (h * 5).backward()
        assert x.grad.item() == 0.0

    def test_retain_grad(self):
        x = leaf(1.0, 2.0)
        h = x * 2
        h.retain_grad()
        (h * h).sum().backward()
        assert h.retains_grad and np.allclose(h.grad.numpy(), 2 * h.detach().numpy())

    def test_non_leaf_grad_access_warns(self):
        h = leaf(1.0) * 2
        with pytest.warns(UserWarning, match="not a leaf Tensor"):
            assert h.grad is None

    def test_node_prehook_and_posthook(self):
        x = leaf(1.0, 2.0)
        y = x.exp()
        calls = []
        y.grad_fn.register_prehook(lambda grad_outputs: calls.append("pre") or (grad_outputs[0] * 2,))
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: calls.append("post") or
                                (grad_inputs[0] + 1,))
        y.sum().backward()
        assert calls == ["pre", "post"]
        assert np.allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]) + 1)

    def test_hook_returning_wrong_shape_is_refused(self):
        x = leaf(1.0, 2.0)
        y = x * 2

        def widen(grad):
            return jg.ones(3, dtype=jg.float64)
        y.register_hook(widen)
        with pytest.raises(RuntimeError, match="hook 'widen' has changed the size of value"):
            y.sum().backward()

    def test_post_hook_returning_wrong_shape_names_the_hook(self):
        x = leaf(1.0, 2.0)
        y = x.exp()
        y.grad_fn.register_hook(lambda gi, go: (jg.ones(5, dtype=jg.float64),))
        with pytest.raises(RuntimeError, match=r"hook '<lambda>' has changed the size of value: the gradient "
                                               r"has shape \(2,\) but the hook returned \(5,\)"):
            y.sum().backward()


class TestReentrancyAndThreads:
    def test_backward_inside_a_hook(self):
        x, z = leaf(1.0, 2.0), leaf(3.0)
        inner = []

        def hook(grad):
            with jg.enable_grad():  # backward runs hooks in no-grad mode, as PyTorch does
                (gz,) = jg.autograd.grad((z * z).sum(), z)
            inner.append(gz.item())
            return grad * gz
        y = x * 2
        y.register_hook(hook)
        y.sum().backward()
        assert inner == [6.0]
        assert np.allclose(x.grad.numpy(), 12.0)

    def test_threads_run_backward_on_independent_graphs(self):
        results, errors = {}, []

        def work(seed):
            try:
                rng = np.random.default_rng(seed)
                w = jg.tensor(rng.standard_normal(5), requires_grad=True)
                for _ in range(50):
                    w.grad = None
                    ((w.sin() * w).sum() * 2).backward()
                v = w.detach().numpy()
                expected = 2 * (np.cos(v) * v + np.sin(v))
                results[seed] = np.allclose(w.grad.numpy(), expected)
            except Exception as error:  # reported below, in the main thread
                errors.append(error)

        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and results == {seed: True for seed in range(4)}


class TestNothingHalfDone:
    def test_failed_backward_restores_grads_and_keeps_the_graph(self):
        x, w = leaf(1.0, 2.0), leaf(3.0, 4.0)
        x.grad = jg.tensor([10.0, 20.0], dtype=jg.float64)

        def boom(grad):
            raise ValueError("hook failed")
        handle = w.register_hook(boom)
        loss = (x * w).sum()
        with pytest.raises(ValueError, match="hook failed"):
            loss.backward()
        assert np.allclose(x.grad.numpy(), [10.0, 20.0]) and w.grad is None
        handle.remove()
        loss.backward()
        assert np.allclose(x.grad.numpy(), [13.0, 24.0]) and np.allclose(w.grad.numpy(), [1.0, 2.0])


class TestBadInput:
    def test_non_scalar_backward_needs_a_gradient(self):
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
            (leaf(1.0, 2.0) * 2).backward()

    def test_backward_of_a_tensor_without_grad(self):
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not "
                                               "have a grad_fn"):
            jg.ones(3).sum().backward()

    def test_gradient_of_the_wrong_shape(self):
        with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of \(2,\) "
                                               r"and output\[0\] has a shape of \(3,\)"):
            (leaf(1.0, 2.0, 3.0) * 2).backward(jg.ones(2, dtype=jg.float64))

    def test_op_shape_mismatch_names_op_and_shapes(self):
        with pytest.raises(RuntimeError, match=r"mul\(float32\[3\], float32\[4\]\).*The size of tensor a "
                                               r"\(3\) must match the size of tensor b \(4\)"):
            jg.ones(3) * jg.ones(4)

    def test_matmul_mismatch(self):
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
            jg.ones(2, 3) @ jg.ones(4, 5)

    @pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=lambda s: f"{len(s[0])}d@{len(s[1])}d")
    @pytest.mark.parametrize("call", ["matmul", "@", "mm"])
    @pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float32", "int64")], ids="-".join)
    def test_matmul_of_mismatched_dtypes_says_so(self, call, shapes, dtypes):
        """PyTorch's exception type, and a message about the dtypes (not the shapes, which fit)."""
        torch = pytest.importorskip("torch")
        if call == "mm" and (len(shapes[0]), len(shapes[1])) != (2, 2):
            pytest.skip("mm takes matrices")
        products = {"matmul": lambda a, b, lib: lib.matmul(a, b), "@": lambda a, b, lib: a @ b,
                    "mm": lambda a, b, lib: lib.mm(a, b)}[call]
        with pytest.raises(Exception) as theirs:
            products(*(torch.ones(s, dtype=getattr(torch, d)) for s, d in zip(shapes, dtypes)), torch)
        with pytest.raises(type(theirs.value)) as ours:
            products(*(jg.ones(*s, dtype=getattr(jg, d)) for s, d in zip(shapes, dtypes)), jg)
        message = str(ours.value)
        assert re.match(r"(dot|mv|mm|matmul)\(", message), message   # names the op ...
        assert "same dtype" in message and all(d in message for d in dtypes)   # ... the dtypes ...
        assert ".to(" in message and "cannot be multiplied" not in message     # ... and what to do

    def test_a_product_wrong_in_shapes_and_dtypes_names_both(self):
        with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(2x3 and 4x5\); the dtypes "
                                               r"differ too \(float64 and float32\)"):
            jg.ones(2, 3, dtype=jg.float64) @ jg.ones(4, 5)

    def test_batch_dimensions_that_do_not_broadcast_are_named(self):
        torch = pytest.importorskip("torch")
        with pytest.raises(RuntimeError):
            torch.ones(2, 3, 4) @ torch.ones(3, 4, 2)
        with pytest.raises(RuntimeError, match=r"batch dimensions \(2,\) and \(3,\) cannot be broadcast"):
            jg.ones(2, 3, 4) @ jg.ones(3, 4, 2)

    @pytest.mark.parametrize("input_shape", [(3,), (2, 3), (4, 2, 3)])
    @pytest.mark.parametrize("mismatch", ["weight", "bias"])
    def test_linear_needs_one_dtype(self, input_shape, mismatch):
        torch = pytest.importorskip("torch")
        dtypes = {"input": "float32", "weight": "float32", "bias": "float32", mismatch: "float64"}
        shapes = {"input": input_shape, "weight": (5, 3), "bias": (5,)}

        def call(lib, functional):
            return functional.linear(*(lib.ones(*shapes[k], dtype=getattr(lib, dtypes[k])) if lib is jg
                                       else lib.ones(shapes[k], dtype=getattr(lib, dtypes[k]))
                                       for k in ("input", "weight", "bias")))
        with pytest.raises(Exception) as theirs:
            call(torch, torch.nn.functional)
        with pytest.raises(type(theirs.value), match=r"float64.*float32|float32.*float64") as ours:
            call(jg, jg.nn.functional)
        assert "same dtype" in str(ours.value) and "cannot be multiplied" not in str(ours.value)

    def test_graph_root_is_a_node(self):
        root = GraphRoot([], [])
        assert root.name() == "GraphRoot" and root.next_functions == ()


def test_grad_wrt_a_non_leaf_and_a_leaf_behind_it():
    """autograd.grad(y, [h, x]) with x reached only through h: the walk goes on past h to x."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (jg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        gh, gx = lib.autograd.grad((h * h).sum(), [h, x])
        results.append((gh.numpy(), gx.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs)


@pytest.mark.parametrize("path", ["one node", "fast", "create_graph", "loop"])
def test_leaf_made_not_to_require_grad_after_the_forward_gets_no_grad(path):
    """PyTorch's AccumulateGrad leaves .grad alone for a leaf whose requires_grad_(False) came after the
    graph was recorded (a layer frozen between forward and backward); the other leaves get theirs."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (jg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        for step in range(3 if path == "loop" else 1):  # the loop's graph is replayed from the third step
            y = (x * w).sum() if path == "one node" else ((x * w).tanh() * x).sum()
            if step == (2 if path == "loop" else 0):
                x.requires_grad_(False)
            y.backward(create_graph=path == "create_graph")
            x.requires_grad_(True)
        results.append((None if x.grad is None else x.grad.detach().numpy(), w.grad.detach().numpy()))
    (ours_x, ours_w), (theirs_x, theirs_w) = results
    assert ours_x is None if theirs_x is None else np.allclose(ours_x, theirs_x)
    np.testing.assert_allclose(ours_w, theirs_w, rtol=1e-5)


def test_grad_captures_a_non_leaf_that_also_runs_before_its_hooks():
    """PyTorch's engine captures the gradient of an input whose node also runs (an input lies past
    it) before the tensor's hooks, which then change what flows on; one that only captures, after."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (jg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        h.register_hook(lambda g: g * 10)
        both = lib.autograd.grad((h * h).sum(), [h, x])
        (only,) = lib.autograd.grad((h * h).sum(), [h])
        results.append([g.numpy() for g in (*both, only)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs)


def test_data_of_another_dtype_gets_gradients_of_its_dtype_while_an_old_graph_lives():
    """``module.float()`` sets each parameter's ``.data``; a graph built before (a loss still held)
    keeps the parameter's AccumulateGrad, which described the old dtype: until 2026-11-28 the next
    backward cast the new gradients to float64. PyTorch's set_data drops the accumulator then."""
    w = jg.randn(3, dtype=jg.float64, requires_grad=True)
    old = (w * 2.0).sum()
    old.backward(retain_graph=True)
    w.grad = None
    w.data = w.data.float()
    (w * 2.0).sum().backward()
    assert w.grad.dtype == jg.float32
    del old


@pytest.mark.parametrize("backward", [lambda loss: loss.backward(), lambda loss: loss.backward(create_graph=True)],
                         ids=["plain", "create_graph"])
def test_a_leafs_first_grad_has_pytorchs_layout_whatever_the_leafs(backward):
    """PyTorch's layout contract: a gapless leaf's .grad has its strides (a column-major one is column-major,
    under create_graph too), any other leaf's (an expanded or stepped view) is row-major; numpy's order "K"
    gave those the view's stride order, so their .grad.view(-1) raised (until 2026-11-28)."""
    torch = pytest.importorskip("torch")
    leaves = [lambda m: m.arange(6.0).reshape(3, 2).T, lambda m: m.arange(3.0).expand(2, 3),
              lambda m: m.arange(12.0).reshape(3, 4).T[:, ::2]]
    for make in leaves:
        ours, theirs = make(jg).detach().requires_grad_(), make(torch).detach().requires_grad_()
        for m, x in ((jg, ours), (torch, theirs)):
            backward((m.ones(4, x.shape[0]) @ x).sin().sum())   # the gradient arrives row-major, from a product
        assert ours.grad.stride() == tuple(theirs.grad.stride())
        np.testing.assert_allclose(ours.grad.detach().numpy(), theirs.grad.detach().numpy(), rtol=1e-5)
