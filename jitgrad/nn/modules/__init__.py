"""The layers of ``jitgrad.nn``, one file per kind; ``module.py`` holds the base class."""
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .attention import MultiheadAttention
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import Dropout
from .embedding import Embedding
from .flatten import Flatten
from .linear import Identity, Linear
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss, \
    SmoothL1Loss
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, LayerNorm
from .pooling import AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .transformer import Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, \
    TransformerEncoderLayer

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss",
           "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d",
           "CosineSimilarity", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "GELU", "GRU", "GRUCell",
           "GroupNorm", "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "LSTM", "LSTMCell", "LayerNorm", "Linear",
           "LogSoftmax", "MSELoss", "MaxPool1d", "MaxPool2d", "Module", "ModuleDict", "ModuleList",
           "MultiheadAttention", "NLLLoss", "PairwiseDistance", "RNN", "RNNCell", "ReLU", "Sequential", "Sigmoid",
           "SmoothL1Loss", "Softmax", "Tanh", "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
           "TransformerEncoder", "TransformerEncoderLayer"]
