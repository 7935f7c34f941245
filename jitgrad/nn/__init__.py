"""Neural-network helpers; ``jitgrad.nn.functional`` holds the losses and activations."""
from . import functional

__all__ = ["functional"]
