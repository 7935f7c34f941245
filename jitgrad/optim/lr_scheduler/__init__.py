"""Learning-rate schedules, as PyTorch's ``torch.optim.lr_scheduler``: each ``step()`` (once per epoch,
after ``optimizer.step()``) writes a new ``lr`` into every parameter group.

A scheduler counts its steps in ``last_epoch`` (-1 before the first; making it takes step 0) and
remembers each group's starting rate as ``group["initial_lr"]``. ``StepLR`` and
``CosineAnnealingLR`` compute the new rate from the group's current one, as PyTorch does, so a
rate changed by hand between steps carries on from where it was set.
"""
from .compound import ChainedScheduler, SequentialLR
from .cyclic import CyclicLR
from .cycles import CosineAnnealingWarmRestarts, OneCycleLR
from .per_step import (ConstantLR, CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR, MultiStepLR,
                       PolynomialLR, StepLR)
from .plateau import ReduceLROnPlateau
from .schedule import LRScheduler

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR",
           "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR", "PolynomialLR",
           "ReduceLROnPlateau", "SequentialLR", "StepLR"]
