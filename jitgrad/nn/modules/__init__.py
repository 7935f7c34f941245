"""The layers of ``jitgrad.nn``, one file per kind; ``module.py`` holds the base class."""
from .activation import (CELU, ELU, GELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish,
                         ReLU, ReLU6, SELU, SiLU, Sigmoid, Softmax, Softsign, Tanh)
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

__all__ = ["BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "CELU", "Conv1d", "Conv2d", "CrossEntropyLoss", "Dropout",
           "ELU", "Embedding", "Flatten", "GELU", "GRU", "GRUCell", "Hardsigmoid", "Hardswish", "Hardtanh",
           "Identity", "LSTM", "LSTMCell", "LayerNorm", "LeakyReLU", "Linear", "LogSigmoid", "LogSoftmax", "MSELoss",
           "MaxPool2d", "Mish", "Module", "ModuleDict", "ModuleList", "NLLLoss", "RNN", "RNNCell", "ReLU", "ReLU6",
           "SELU", "Sequential", "SiLU", "Sigmoid", "Softmax", "Softsign", "Tanh"]
