"""A walk through jitgrad's autograd, following PyTorch's autograd tutorial example by example.

Each section builds a small graph, prints the values, the ``grad_fn`` of the result and the chain of
``next_functions`` down to the leaves, then runs backward and prints which backward nodes ran, in
order. The order is recorded with node pre-hooks (``node.register_prehook(fn)``: ``fn(grad_outputs)``
runs just before the node), registered on every node reachable from the output's ``grad_fn``.

Run it with ``python examples/quickstart.py``; every line it prints means the same in PyTorch.
"""
from __future__ import annotations

import jitgrad
from jitgrad import autograd


def heading(title: str) -> None:
    print()
    print(title)
    print("=" * len(title))


def nodes_of(root) -> list:
    """Every node reachable from ``root`` through ``next_functions``, each once, root first."""
    seen, order, stack = set(), [], [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        order.append(node)
        stack.extend(fn for fn, _ in reversed(node.next_functions))
    return order


class Labels:
    """Names the nodes below ``root`` for printing: ``#n ClassName``, numbered root first, and for an
    ``AccumulateGrad`` the leaf it fills (``leaves`` maps names to leaf tensors)."""

    def __init__(self, root, leaves: dict[str, jitgrad.Tensor]) -> None:
        self.number = {node: i for i, node in enumerate(nodes_of(root), 1)}
        self.leaves = leaves

    def __call__(self, node) -> str:
        if node is None:
            return "None (an input that does not require grad)"
        text = f"#{self.number[node]} {node.name()}"
        for name, leaf in self.leaves.items():
            if getattr(node, "variable", None) is leaf:
                return f"{text} -> {name}.grad"
        return text


def print_chain(root, label: Labels) -> None:
    """Prints the graph below ``root`` as a tree, one ``next_functions`` entry per branch (a node
    reached on two paths shows on both, with one number)."""
    def walk(node, prefix: str) -> None:
        children = node.next_functions
        for i, (child, input_nr) in enumerate(children):
            last = i == len(children) - 1
            print(f"{prefix}{'└─' if last else '├─'} {label(child)}"
                  + (f"  [input_nr={input_nr}]" if child is not None and input_nr else ""))
            if child is not None:
                walk(child, prefix + ("   " if last else "│  "))
    print(f"  {label(root)}")
    walk(root, "  ")


def record_execution(root, label: Labels) -> list[tuple[str, tuple]]:
    """Registers a pre-hook on every node below ``root``; the returned list fills, in execution order,
    with ``(label, grad_outputs)`` as backward runs."""
    executed: list[tuple[str, tuple]] = []
    for node in nodes_of(root):
        def prehook(grad_outputs, name=label(node)):
            executed.append((name, grad_outputs))
        node.register_prehook(prehook)
    return executed


def print_execution(executed: list[tuple[str, tuple]]) -> None:
    print("backward ran, in this order:")
    for step, (name, grad_outputs) in enumerate(executed, 1):
        grads = ", ".join("None" if g is None else str(g.tolist()) for g in grad_outputs)
        print(f"  {step}. {name:<30} received grad_outputs = ({grads})")


def example_a() -> None:
    heading("(a) y = (x * 3 + 2).sum(): one leaf, one path")
    x = jitgrad.tensor([1., 2., 3.], requires_grad=True)
    y = (x * 3 + 2).sum()
    print(f"x = {x!r}")
    print(f"y = {y!r}")
    print(f"y.grad_fn = {y.grad_fn.name()}, x.is_leaf = {x.is_leaf}, x.grad_fn = {x.grad_fn}")
    print("next_functions chain from y.grad_fn:")
    label = Labels(y.grad_fn, {"x": x})
    print_chain(y.grad_fn, label)
    executed = record_execution(y.grad_fn, label)
    y.backward()
    print_execution(executed)
    print(f"x.grad = {x.grad!r}   (dy/dx = 3 for every element)")


def example_b() -> None:
    heading("(b) y = (x * w + 1).sum(): two leaves")
    x = jitgrad.tensor([1., 2., 3.], requires_grad=True)
    w = jitgrad.tensor([0.5, -1., 2.], requires_grad=True)
    y = (x * w + 1).sum()
    print(f"x = {x!r}")
    print(f"w = {w!r}")
    print(f"y = {y!r}")
    mul = y.grad_fn.next_functions[0][0].next_functions[0][0]
    print(f"the multiplication's node is {mul.name()}; its next_functions are:")
    for fn, input_nr in mul.next_functions:
        print(f"  ({fn.name()}, {input_nr})  accumulates into {'x' if fn.variable is x else 'w'}.grad")
    print("next_functions chain from y.grad_fn:")
    label = Labels(y.grad_fn, {"x": x, "w": w})
    print_chain(y.grad_fn, label)
    executed = record_execution(y.grad_fn, label)
    y.backward()
    print_execution(executed)
    print(f"x.grad = {x.grad!r}   (dy/dx = w)")
    print(f"w.grad = {w.grad!r}   (dy/dw = x)")


def example_c() -> None:
    heading("(c) y = a * 2 + a * 3: one leaf on two paths")
    a = jitgrad.tensor(1.5, requires_grad=True)
    y = a * 2 + a * 3
    print(f"a = {a!r}")
    print(f"y = {y!r}")
    print("next_functions chain from y.grad_fn (both paths end in the same AccumulateGrad):")
    label = Labels(y.grad_fn, {"a": a})
    print_chain(y.grad_fn, label)
    left, right = (fn for fn, _ in y.grad_fn.next_functions)
    same = left.next_functions[0][0] is right.next_functions[0][0]
    print(f"one AccumulateGrad node shared by both paths: {same}")
    executed = record_execution(y.grad_fn, label)
    y.backward()
    print_execution(executed)
    print("AccumulateGrad ran once: the engine's InputBuffer summed 2 + 3 before running it.")
    print(f"a.grad = {a.grad!r}")


def example_d() -> None:
    heading("(d) autograd.grad returns the gradient and leaves .grad alone")
    x = jitgrad.tensor([1., 2., 3.], requires_grad=True)
    y = (x * x).sum()
    (dy_dx,) = autograd.grad(y, x)
    print(f"x = {x!r}")
    print(f"y = {y!r}")
    print(f"autograd.grad(y, x) = {dy_dx!r}   (dy/dx = 2 * x)")
    print(f"x.grad after autograd.grad = {x.grad!r}")


def example_e() -> None:
    heading("(e) selective execution: autograd.grad(loss, [w1]) runs only the path to w1")
    x = jitgrad.tensor([1., 2.])
    w1 = jitgrad.tensor([0.5, -0.5], requires_grad=True)
    w2 = jitgrad.tensor([2., 3.], requires_grad=True)
    b = jitgrad.tensor(0.25, requires_grad=True)
    loss = (x * w1).sum() + ((x * w2).sum() + b)
    label = Labels(loss.grad_fn, {"w1": w1, "w2": w2, "b": b})
    print(f"x = {x!r}")
    print(f"loss = {loss!r}")
    print("the whole graph:")
    print_chain(loss.grad_fn, label)
    executed = record_execution(loss.grad_fn, label)
    (dloss_dw1,) = autograd.grad(loss, [w1])
    print_execution(executed)
    ran = {name for name, _ in executed}
    every = [label(node) for node in nodes_of(loss.grad_fn)]
    print(f"nodes in the graph: {len(every)}, nodes run: {len(executed)}")
    print("skipped (the branch through w2 and b; w1's AccumulateGrad too, as grad captures its input):")
    for name in every:
        if name not in ran:
            print(f"  {name}")
    print(f"dloss/dw1 = {dloss_dw1!r}   (= x)")
    print(f"w1.grad = {w1.grad!r}, w2.grad = {w2.grad!r}, b.grad = {b.grad!r}")


def main() -> None:
    print("jitgrad autograd quickstart")
    example_a()
    example_b()
    example_c()
    example_d()
    example_e()


if __name__ == "__main__":
    main()
