"""The layers of ``jitgrad.nn``, one file per kind; ``module.py`` holds the base class."""
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d
from .dropout import Dropout
from .embedding import Embedding
from .flatten import Flatten
from .linear import Identity, Linear
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module
from .normalization import BatchNorm1d, LayerNorm
from .pooling import MaxPool2d
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell

__all__ = ["BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "Conv1d", "Conv2d", "CrossEntropyLoss", "Dropout",
           "Embedding", "Flatten", "GELU", "GRU", "GRUCell", "Identity", "LSTM", "LSTMCell", "LayerNorm", "Linear",
           "LogSoftmax", "MSELoss", "MaxPool2d", "Module", "ModuleDict", "ModuleList", "NLLLoss", "RNN", "RNNCell",
           "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh"]
