"""``jitgrad.utils.data``: batches as PyTorch's ``DataLoader`` makes them (sequential order is
compared with PyTorch's; shuffled order comes from jitgrad's generator, so it is checked for
repeatability and coverage), ``default_collate`` against PyTorch's, ``random_split``."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest
from layer_pairs import needs_torch, torch

import jitgrad as jg
from jitgrad.random import Generator
from jitgrad.utils.data import (BatchSampler, DataLoader, Dataset, RandomSampler, SequentialSampler, Subset,
                                TensorDataset, default_collate, random_split)

Pair = namedtuple("Pair", "x y")


def plain(value):
    """A batch as nested Python values (tensors as (dtype name, nested lists)), to compare libraries."""
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return (str(value.dtype).rsplit(".", 1)[-1], value.tolist())
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [plain(v) for v in value]
    return value


SAMPLES = {
    "tuples": [(1, 2.0, True, "a"), (3, 4.0, False, "b")],
    "dicts": [{"x": np.ones(2), "y": 1}, {"x": np.zeros(2), "y": 2}],
    "lists": [[1, 2], [3, 4]],
    "arrays": [np.ones((2, 2), dtype=np.float32), np.zeros((2, 2), dtype=np.float32)],
    "named": [Pair(1, 2.5), Pair(3, 4.5)],
    "tensors": "tensors",
}


@needs_torch
@pytest.mark.parametrize("name", SAMPLES)
def test_default_collate_is_pytorchs(name):
    from torch.utils.data import default_collate as torch_collate
    samples = SAMPLES[name]
    if samples == "tensors":
        ours = default_collate([(jg.ones(2), jg.tensor(1)), (jg.zeros(2), jg.tensor(2))])
        theirs = torch_collate([(torch.ones(2), torch.tensor(1)), (torch.zeros(2), torch.tensor(2))])
    else:
        ours, theirs = default_collate(samples), torch_collate(samples)
    assert plain(ours) == plain(theirs)


def test_collate_refuses_ragged_and_unknown_samples():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers, dicts or lists"):
        default_collate([object(), object()])


@needs_torch
@pytest.mark.parametrize("batch_size,drop_last", [(4, False), (4, True), (1, False), (10, False), (None, False)])
def test_sequential_batches_are_pytorchs(batch_size, drop_last):
    def batches(lib, loader):
        data = lib.arange(10)
        dataset = (TensorDataset if lib is jg else torch.utils.data.TensorDataset)(data, data * 2)
        made = loader(dataset, batch_size=batch_size, drop_last=drop_last)
        return len(made), [plain(batch) for batch in made]
    assert batches(jg, DataLoader) == batches(torch, torch.utils.data.DataLoader)


def test_shuffled_batches_follow_the_seed_and_cover_the_data():
    dataset = TensorDataset(jg.arange(10))

    def epoch(loader):
        return [batch[0].tolist() for batch in loader]
    loader = DataLoader(dataset, batch_size=3, shuffle=True)
    jg.manual_seed(4)
    first, second = epoch(loader), epoch(loader)
    assert sorted(sum(first, [])) == list(range(10)) and first != second  # a new order every epoch
    jg.manual_seed(4)
    assert epoch(loader) == first
    own = DataLoader(dataset, batch_size=3, shuffle=True, generator=Generator(4))
    assert epoch(own) == first  # the same stream as jitgrad's generator seeded alike


def test_samplers_and_a_dataset_of_ones_own():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, index):
            return index * index

    assert list(DataLoader(Squares(), batch_size=2)) != []
    assert [b.tolist() for b in DataLoader(Squares(), batch_size=2)] == [[0, 1], [4, 9], [16]]
    batches = BatchSampler(SequentialSampler(range(5)), 2, drop_last=True)
    assert list(batches) == [[0, 1], [2, 3]] and len(batches) == 2
    loader = DataLoader(Squares(), batch_sampler=batches)
    assert [b.tolist() for b in loader] == [[0, 1], [4, 9]]
    assert sorted(RandomSampler(range(6), generator=Generator(1))) == list(range(6))
    assert [s for s in DataLoader(Squares(), sampler=[4, 0], batch_size=None)] == [16, 0]


def test_random_sampler_takes_num_samples_and_replacement_as_pytorchs():
    longer = list(RandomSampler(range(3), num_samples=7, generator=Generator(2)))
    assert len(longer) == 7 and sorted(longer[:3]) == sorted(longer[3:6]) == [0, 1, 2]  # whole permutations first
    drawn = list(RandomSampler(range(4), replacement=True, num_samples=4000, generator=Generator(3)))
    assert len(RandomSampler(range(4), replacement=True, num_samples=4000)) == 4000
    np.testing.assert_allclose(np.bincount(drawn, minlength=4) / 4000, 0.25, atol=0.03)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)


def test_loader_arguments_are_checked():
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(range(3), shuffle=True, sampler=[0, 1, 2])
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(range(3), num_workers=2)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        DataLoader(range(3), batch_size=0)
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(jg.ones(3), jg.ones(4))


def test_random_split():
    jg.manual_seed(0)
    parts = random_split(range(10), [3, 7])
    assert [len(p) for p in parts] == [3, 7] and isinstance(parts[0], Subset)
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    assert [len(p) for p in random_split(range(11), [0.5, 0.5])] == [6, 5]
    again = random_split(range(10), [3, 7], generator=Generator(0))
    assert list(again[0]) == list(parts[0])
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(range(10), [3, 3])


@needs_torch
def test_concat_dataset_is_pytorchs():
    parts = [list(range(3)), list(range(10, 15)), list(range(20, 22))]
    ours, theirs = jg.utils.data.ConcatDataset(parts), torch.utils.data.ConcatDataset(parts)
    assert len(ours) == len(theirs) == 10 and ours.cumulative_sizes == theirs.cumulative_sizes
    assert [ours[i] for i in range(-10, 10)] == [theirs[i] for i in range(-10, 10)]
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ours[-11]


def test_an_iterable_dataset_is_batched_as_it_streams():
    class Squares(jg.utils.data.IterableDataset):
        def __iter__(self):
            return iter([jg.tensor(float(i * i)) for i in range(7)])

    batches = [b.tolist() for b in DataLoader(Squares(), batch_size=3)]
    assert batches == [[0.0, 1.0, 4.0], [9.0, 16.0, 25.0], [36.0]]
    assert [b.tolist() for b in DataLoader(Squares(), batch_size=3, drop_last=True)] == batches[:2]
    assert jg.utils.data.get_worker_info() is None
    with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected unspecified shuffle option"):
        DataLoader(Squares(), shuffle=True)


def test_subset_random_sampler_permutes_its_indices_by_the_seed():
    indices = [3, 7, 11, 19, 23]
    jg.manual_seed(5)
    first = list(jg.utils.data.SubsetRandomSampler(indices))
    jg.manual_seed(5)
    assert list(jg.utils.data.SubsetRandomSampler(indices)) == first and sorted(first) == indices


def test_weighted_sampler_draws_in_proportion_and_without_replacement():
    weights = [0.0, 1.0, 3.0, 6.0]
    jg.manual_seed(0)
    drawn = np.array(list(jg.utils.data.WeightedRandomSampler(weights, 20000)))
    np.testing.assert_allclose(np.bincount(drawn, minlength=4) / 20000, np.array(weights) / 10, atol=0.015)
    unique = list(jg.utils.data.WeightedRandomSampler(weights, 3, replacement=False))
    assert sorted(unique) == [1, 2, 3]
    with pytest.raises(RuntimeError, match="not enough non-negative category to sample"):
        list(jg.utils.data.WeightedRandomSampler(weights, 4, replacement=False))  # only 3 weights are nonzero
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        list(jg.utils.data.WeightedRandomSampler(weights, 5, replacement=False))
    with pytest.raises(RuntimeError, match="probability tensor contains either `inf`, `nan` or element < 0"):
        list(jg.utils.data.WeightedRandomSampler([1.0, -1.0], 1))
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        jg.utils.data.WeightedRandomSampler(weights, 0)
